package javascript_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	sitter "github.com/tree-sitter/go-tree-sitter"
	tsjs "github.com/tree-sitter/tree-sitter-javascript/bindings/go"

	"github.com/kulehq/kule/plugins/differ/internal/difftest"
	"github.com/kulehq/kule/plugins/differ/javascript"
	"github.com/kulehq/kule/sdk/differ"
)

func TestGolden(t *testing.T) { difftest.Golden(t, javascript.New(), "testdata") }

func TestConformance(t *testing.T) { difftest.Conformance(t, javascript.New(), "testdata") }

func TestMerge(t *testing.T) { difftest.Merge(t, javascript.New(), "testdata", ".js") }

func TestAccepts(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]bool{"src/store.js": true, "App.jsx": true, "x.mjs": true, "a.ts": false, "package.json": false} {
		if got := javascript.New().Accepts(path); got != want {
			t.Errorf("Accepts(%q) = %v, want %v", path, got, want)
		}
	}
}

func FuzzEntities(f *testing.F) { difftest.FuzzEntities(f, javascript.New(), ".js", "testdata") }

func FuzzMerge(f *testing.F) { difftest.FuzzMerge(f, javascript.New(), ".js", "testdata") }

// generated is a JavaScript file of about n lines: classes, functions and
// React components.
func generated(n int) []byte {
	var b strings.Builder
	b.WriteString("import React from \"react\";\n\n")
	for i := 0; strings.Count(b.String(), "\n") < n; i++ {
		fmt.Fprintf(&b, `/** Item %[1]d. */
export class Item%[1]d {
  items = new Map();

  constructor(id) {
    this.id = id;
  }

  get size() {
    return this.items.size;
  }

  label(prefix) {
    const parts = [prefix, String(this.id)];
    return parts.join(" ");
  }
}

export function make%[1]d(id) {
  return new Item%[1]d(id);
}

export const View%[1]d = ({ item }) => (
  <div className="item">{item.label("#")}</div>
);

`, i)
	}
	return []byte(b.String())
}

func BenchmarkEntities5000Lines(b *testing.B) {
	src := generated(5000)
	d := javascript.New()
	ctx := context.Background()
	lang := sitter.NewLanguage(tsjs.Language())
	difftest.Compare(b, func() {
		if _, err := d.Entities(ctx, differ.EntitiesRequest{Path: "gen.js", Content: src}); err != nil {
			b.Fatal(err)
		}
	}, "tree-sitter-parse", func() {
		p := sitter.NewParser()
		_ = p.SetLanguage(lang)
		p.Parse(src, nil).Close()
		p.Close()
	})
}
