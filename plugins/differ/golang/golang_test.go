package golang_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go/parser"
	"go/token"

	"github.com/kulehq/kule/plugins/differ/golang"
	"github.com/kulehq/kule/plugins/differ/internal/difftest"
	"github.com/kulehq/kule/sdk/differ"
)

func TestGolden(t *testing.T) { difftest.Golden(t, golang.New(), "testdata") }

func TestConformance(t *testing.T) { difftest.Conformance(t, golang.New(), "testdata") }

func TestMerge(t *testing.T) { difftest.Merge(t, golang.New(), "testdata", ".go") }

func TestAccepts(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]bool{"kernel/internal/task/task.go": true, "x_test.go": true, "go.mod": false, "go.sum": false, "a.rs": false} {
		if got := golang.New().Accepts(path); got != want {
			t.Errorf("Accepts(%q) = %v, want %v", path, got, want)
		}
	}
}

func FuzzEntities(f *testing.F) { difftest.FuzzEntities(f, golang.New(), ".go", "testdata") }

func FuzzMerge(f *testing.F) { difftest.FuzzMerge(f, golang.New(), ".go", "testdata") }

// generated is a Go file of about n lines: types with methods (some on
// generic receivers), functions, and grouped constants.
func generated(n int) []byte {
	var b strings.Builder
	b.WriteString("package gen\n\nimport \"fmt\"\n\n")
	for i := 0; strings.Count(b.String(), "\n") < n; i++ {
		fmt.Fprintf(&b, `// Item%[1]d is item %[1]d.
type Item%[1]d[T any] struct {
	ID    int
	Value T
}

const (
	Min%[1]d = iota
	Max%[1]d
)

// Label names the item.
func (it *Item%[1]d[T]) Label(prefix string) string {
	parts := []string{prefix, fmt.Sprint(it.ID)}
	return fmt.Sprint(parts)
}

func (it Item%[1]d[T]) String() string { return it.Label("item") }

// Make%[1]d makes an item.
func Make%[1]d(id int) *Item%[1]d[string] {
	return &Item%[1]d[string]{ID: id}
}

`, i)
	}
	return []byte(b.String())
}

func BenchmarkEntities5000Lines(b *testing.B) {
	src := generated(5000)
	d := golang.New()
	ctx := context.Background()
	difftest.Compare(b, func() {
		if _, err := d.Entities(ctx, differ.EntitiesRequest{Path: "gen.go", Content: src}); err != nil {
			b.Fatal(err)
		}
	}, "go/parser", func() {
		if _, err := parser.ParseFile(token.NewFileSet(), "gen.go", src, parser.ParseComments|parser.SkipObjectResolution); err != nil {
			b.Fatal(err)
		}
	})
}
