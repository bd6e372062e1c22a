package python_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	sitter "github.com/tree-sitter/go-tree-sitter"
	tspython "github.com/tree-sitter/tree-sitter-python/bindings/go"

	"github.com/kulehq/kule/plugins/differ/internal/difftest"
	"github.com/kulehq/kule/plugins/differ/python"
	"github.com/kulehq/kule/sdk/differ"
)

func TestGolden(t *testing.T) { difftest.Golden(t, python.New(), "testdata") }

func TestConformance(t *testing.T) { difftest.Conformance(t, python.New(), "testdata") }

func TestMerge(t *testing.T) { difftest.Merge(t, python.New(), "testdata", ".py") }

func TestAccepts(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]bool{"app/tasks.py": true, "stubs.pyi": true, "requirements.txt": false, "main.go": false} {
		if got := python.New().Accepts(path); got != want {
			t.Errorf("Accepts(%q) = %v, want %v", path, got, want)
		}
	}
}

func FuzzEntities(f *testing.F) { difftest.FuzzEntities(f, python.New(), ".py", "testdata") }

func FuzzMerge(f *testing.F) { difftest.FuzzMerge(f, python.New(), ".py", "testdata") }

// generated is a Python file of about n lines: classes with decorated
// methods and module functions.
func generated(n int) []byte {
	var b strings.Builder
	b.WriteString("import dataclasses\n\n\n")
	for i := 0; strings.Count(b.String(), "\n") < n; i++ {
		fmt.Fprintf(&b, `@dataclasses.dataclass
class Item%[1]d:
    """Item %[1]d."""

    id: int
    value: str = ""

    def label(self) -> str:
        return f"item {self.id}"

    @property
    def size(self) -> int:
        total = 0
        for ch in self.value:
            total += 1
        return total

    @classmethod
    def make(cls, i: int) -> "Item%[1]d":
        return cls(i, str(i))


def make_%[1]d(i: int) -> Item%[1]d:
    return Item%[1]d.make(i)


`, i)
	}
	return []byte(b.String())
}

func BenchmarkEntities5000Lines(b *testing.B) {
	src := generated(5000)
	d := python.New()
	ctx := context.Background()
	lang := sitter.NewLanguage(tspython.Language())
	difftest.Compare(b, func() {
		if _, err := d.Entities(ctx, differ.EntitiesRequest{Path: "gen.py", Content: src}); err != nil {
			b.Fatal(err)
		}
	}, "tree-sitter-parse", func() {
		p := sitter.NewParser()
		_ = p.SetLanguage(lang)
		p.Parse(src, nil).Close()
		p.Close()
	})
}
