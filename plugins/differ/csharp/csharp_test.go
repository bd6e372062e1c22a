package csharp_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	sitter "github.com/tree-sitter/go-tree-sitter"
	tscs "github.com/tree-sitter/tree-sitter-c-sharp/bindings/go"

	"github.com/kulehq/kule/plugins/differ/csharp"
	"github.com/kulehq/kule/plugins/differ/internal/difftest"
	"github.com/kulehq/kule/sdk/differ"
)

func TestGolden(t *testing.T) { difftest.Golden(t, csharp.New(), "testdata") }

func TestConformance(t *testing.T) { difftest.Conformance(t, csharp.New(), "testdata") }

func TestMerge(t *testing.T) { difftest.Merge(t, csharp.New(), "testdata", ".cs") }

func TestAccepts(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]bool{"src/Task.cs": true, "Script.csx": true, "App.csproj": false, "main.go": false} {
		if got := csharp.New().Accepts(path); got != want {
			t.Errorf("Accepts(%q) = %v, want %v", path, got, want)
		}
	}
}

func FuzzEntities(f *testing.F) { difftest.FuzzEntities(f, csharp.New(), ".cs", "testdata") }

func FuzzMerge(f *testing.F) { difftest.FuzzMerge(f, csharp.New(), ".cs", "testdata") }

// generated is a C# file of about n lines: a namespace of classes with
// overloaded methods, properties and attributes.
func generated(n int) []byte {
	var b strings.Builder
	b.WriteString("using System;\n\nnamespace Kule.Generated\n{\n")
	for i := 0; strings.Count(b.String(), "\n") < n; i++ {
		fmt.Fprintf(&b, `    /// <summary>Item %[1]d.</summary>
    [Serializable]
    public class Item%[1]d<T> where T : class
    {
        private readonly int id;

        public Item%[1]d(int id)
        {
            this.id = id;
        }

        public string Name { get; set; } = "";

        public string Label(string prefix)
        {
            var parts = new[] { prefix, id.ToString() };
            return string.Join(" ", parts);
        }

        public string Label(int width) => Label(new string(' ', width));
    }

`, i)
	}
	b.WriteString("}\n")
	return []byte(b.String())
}

func BenchmarkEntities5000Lines(b *testing.B) {
	src := generated(5000)
	d := csharp.New()
	ctx := context.Background()
	lang := sitter.NewLanguage(tscs.Language())
	difftest.Compare(b, func() {
		if _, err := d.Entities(ctx, differ.EntitiesRequest{Path: "gen.cs", Content: src}); err != nil {
			b.Fatal(err)
		}
	}, "tree-sitter-parse", func() {
		p := sitter.NewParser()
		_ = p.SetLanguage(lang)
		p.Parse(src, nil).Close()
		p.Close()
	})
}
