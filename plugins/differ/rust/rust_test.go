package rust_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	sitter "github.com/tree-sitter/go-tree-sitter"
	tsrust "github.com/tree-sitter/tree-sitter-rust/bindings/go"

	"github.com/kulehq/kule/plugins/differ/internal/difftest"
	"github.com/kulehq/kule/plugins/differ/rust"
	"github.com/kulehq/kule/sdk/differ"
)

func TestGolden(t *testing.T) { difftest.Golden(t, rust.New(), "testdata") }

func TestConformance(t *testing.T) { difftest.Conformance(t, rust.New(), "testdata") }

func TestMerge(t *testing.T) { difftest.Merge(t, rust.New(), "testdata", ".rs") }

func TestAccepts(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]bool{"src/task.rs": true, "A.RS": true, "Cargo.lock": false, "main.go": false} {
		if got := rust.New().Accepts(path); got != want {
			t.Errorf("Accepts(%q) = %v, want %v", path, got, want)
		}
	}
}

func FuzzEntities(f *testing.F) { difftest.FuzzEntities(f, rust.New(), ".rs", "testdata") }

func FuzzMerge(f *testing.F) { difftest.FuzzMerge(f, rust.New(), ".rs", "testdata") }

// generated is a Rust file of about n lines in the usual shape: structs with
// impls, free functions, a test module.
func generated(n int) []byte {
	var b strings.Builder
	b.WriteString("use std::fmt;\n\n")
	for i := 0; strings.Count(b.String(), "\n") < n; i++ {
		fmt.Fprintf(&b, `/// Item %[1]d.
#[derive(Debug, Clone)]
pub struct Item%[1]d<T> {
    id: u64,
    value: T,
}

impl<T: Clone> Item%[1]d<T> {
    pub fn new(id: u64, value: T) -> Self {
        Self { id, value }
    }

    /// Returns the value.
    pub fn value(&self) -> T {
        let v = self.value.clone();
        v
    }
}

impl<T> fmt::Display for Item%[1]d<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "item {}", self.id)
    }
}

pub fn make_%[1]d(id: u64) -> Item%[1]d<u64> {
    Item%[1]d::new(id, id * 2)
}

`, i)
	}
	return []byte(b.String())
}

func BenchmarkEntities5000Lines(b *testing.B) {
	src := generated(5000)
	d := rust.New()
	ctx := context.Background()
	lang := sitter.NewLanguage(tsrust.Language())
	difftest.Compare(b, func() {
		if _, err := d.Entities(ctx, differ.EntitiesRequest{Path: "gen.rs", Content: src}); err != nil {
			b.Fatal(err)
		}
	}, "tree-sitter-parse", func() {
		p := sitter.NewParser()
		_ = p.SetLanguage(lang)
		p.Parse(src, nil).Close()
		p.Close()
	})
}

// TestCancelled: a context that is already done stops the parse with an
// error instead of naming half a file.
func TestCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r, err := rust.New().Entities(ctx, differ.EntitiesRequest{Path: "gen.rs", Content: generated(2000)})
	if err == nil {
		t.Fatalf("no error for a cancelled context, %d entities", len(r.Entities))
	}
}
