package toml_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	burnt "github.com/BurntSushi/toml"

	"github.com/kulehq/kule/plugins/differ/internal/difftest"
	"github.com/kulehq/kule/plugins/differ/toml"
	"github.com/kulehq/kule/sdk/differ"
)

func TestGolden(t *testing.T) { difftest.Golden(t, toml.New(), "testdata") }

func TestConformance(t *testing.T) { difftest.Conformance(t, toml.New(), "testdata") }

func TestMerge(t *testing.T) { difftest.Merge(t, toml.New(), "testdata", ".toml") }

func TestAccepts(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]bool{"Cargo.toml": true, "pyproject.toml": true, "Cargo.lock": false, "uv.lock": false, "a.ini": false} {
		if got := toml.New().Accepts(path); got != want {
			t.Errorf("Accepts(%q) = %v, want %v", path, got, want)
		}
	}
}

// TestGeneratedIsValidTOML keeps the benchmark input honest.
func TestGeneratedIsValidTOML(t *testing.T) {
	t.Parallel()
	var v map[string]any
	if _, err := burnt.Decode(string(generated(500)), &v); err != nil {
		t.Fatal(err)
	}
}

func FuzzEntities(f *testing.F) { difftest.FuzzEntities(f, toml.New(), ".toml", "testdata") }

func FuzzMerge(f *testing.F) { difftest.FuzzMerge(f, toml.New(), ".toml", "testdata") }

// generated is a TOML document of about n lines: tables, arrays of tables
// and inline tables.
func generated(n int) []byte {
	var b strings.Builder
	b.WriteString("title = \"generated\"\n\n")
	for i := 0; strings.Count(b.String(), "\n") < n; i++ {
		fmt.Fprintf(&b, `[service%[1]d]
image = "registry.invalid/svc%[1]d:1.%[1]d"
replicas = %[1]d
env = { LOG = "info", PORT = "80%[1]d" }
tags = ["a", "b", "c"]

[service%[1]d.limits]
cpu = 0.5
memory = "256Mi"

[[service%[1]d.endpoint]]
name = "http"
port = 80

`, i)
	}
	return []byte(b.String())
}

func BenchmarkEntities5000Lines(b *testing.B) {
	src := generated(5000)
	d := toml.New()
	ctx := context.Background()
	difftest.Compare(b, func() {
		if _, err := d.Entities(ctx, differ.EntitiesRequest{Path: "gen.toml", Content: src}); err != nil {
			b.Fatal(err)
		}
	}, "BurntSushi/toml-decode", func() {
		var v map[string]any
		if _, err := burnt.Decode(string(src), &v); err != nil {
			b.Fatal(err)
		}
	})
}
