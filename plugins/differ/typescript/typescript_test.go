package typescript_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	sitter "github.com/tree-sitter/go-tree-sitter"
	tsts "github.com/tree-sitter/tree-sitter-typescript/bindings/go"

	"github.com/kulehq/kule/plugins/differ/internal/difftest"
	"github.com/kulehq/kule/plugins/differ/typescript"
	"github.com/kulehq/kule/sdk/differ"
)

func TestGolden(t *testing.T) { difftest.Golden(t, typescript.New(), "testdata") }

func TestConformance(t *testing.T) { difftest.Conformance(t, typescript.New(), "testdata") }

func TestMerge(t *testing.T) { difftest.Merge(t, typescript.New(), "testdata", ".ts") }

func TestAccepts(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]bool{"src/store.ts": true, "View.TSX": true, "a.d.ts": true, "main.js": false, "package.json": false} {
		if got := typescript.New().Accepts(path); got != want {
			t.Errorf("Accepts(%q) = %v, want %v", path, got, want)
		}
	}
}

func FuzzEntities(f *testing.F) { difftest.FuzzEntities(f, typescript.New(), ".ts", "testdata") }

func FuzzMerge(f *testing.F) { difftest.FuzzMerge(f, typescript.New(), ".ts", "testdata") }

// generated is a TypeScript file of about n lines: interfaces, classes
// with decorated members, and exported functions.
func generated(n int) []byte {
	var b strings.Builder
	b.WriteString("import { Injectable } from \"./di\";\n\n")
	for i := 0; strings.Count(b.String(), "\n") < n; i++ {
		fmt.Fprintf(&b, `export interface Item%[1]dInfo {
  id: number;
  value: string;
}

/** Item %[1]d. */
@Injectable()
export class Item%[1]d<T> {
  private readonly items = new Map<string, T>();

  constructor(private readonly id: number) {}

  get size(): number {
    return this.items.size;
  }

  label(prefix: string): string {
    const parts = [prefix, String(this.id)];
    return parts.join(" ");
  }
}

export function make%[1]d(id: number): Item%[1]d<string> {
  return new Item%[1]d<string>(id);
}

`, i)
	}
	return []byte(b.String())
}

func BenchmarkEntities5000Lines(b *testing.B) {
	src := generated(5000)
	d := typescript.New()
	ctx := context.Background()
	lang := sitter.NewLanguage(tsts.LanguageTypescript())
	difftest.Compare(b, func() {
		if _, err := d.Entities(ctx, differ.EntitiesRequest{Path: "gen.ts", Content: src}); err != nil {
			b.Fatal(err)
		}
	}, "tree-sitter-parse", func() {
		p := sitter.NewParser()
		_ = p.SetLanguage(lang)
		p.Parse(src, nil).Close()
		p.Close()
	})
}
