package json_test

import (
	"context"
	stdjson "encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/kulehq/kule/plugins/differ/internal/difftest"
	"github.com/kulehq/kule/plugins/differ/json"
	"github.com/kulehq/kule/sdk/differ"
)

func TestGolden(t *testing.T) { difftest.Golden(t, json.New(), "testdata") }

func TestConformance(t *testing.T) { difftest.Conformance(t, json.New(), "testdata") }

func TestMerge(t *testing.T) { difftest.Merge(t, json.New(), "testdata", ".json") }

func TestAccepts(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]bool{"package.json": true, "tsconfig.jsonc": true, "package-lock.json": false, "a/npm-shrinkwrap.json": false, "a.yaml": false} {
		if got := json.New().Accepts(path); got != want {
			t.Errorf("Accepts(%q) = %v, want %v", path, got, want)
		}
	}
}

func FuzzEntities(f *testing.F) { difftest.FuzzEntities(f, json.New(), ".json", "testdata") }

func FuzzMerge(f *testing.F) { difftest.FuzzMerge(f, json.New(), ".json", "testdata") }

// generated is a JSON document of about n lines: an object of services,
// each with nested settings and an array of named endpoints.
func generated(n int) []byte {
	var b strings.Builder
	b.WriteString("{\n  \"services\": {\n")
	for i := 0; strings.Count(b.String(), "\n") < n; i++ {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, `    "svc%[1]d": {
      "image": "registry.invalid/svc%[1]d:1.%[1]d",
      "replicas": %[1]d,
      "env": { "LOG": "info", "PORT": "80%[1]d" },
      "endpoints": [
        { "name": "http", "port": 80 },
        { "name": "grpc", "port": 90 }
      ]
    }`, i)
	}
	b.WriteString("\n  }\n}\n")
	return []byte(b.String())
}

func BenchmarkEntities5000Lines(b *testing.B) {
	src := generated(5000)
	d := json.New()
	ctx := context.Background()
	difftest.Compare(b, func() {
		if _, err := d.Entities(ctx, differ.EntitiesRequest{Path: "gen.json", Content: src}); err != nil {
			b.Fatal(err)
		}
	}, "encoding/json-unmarshal", func() {
		var v any
		if err := stdjson.Unmarshal(src, &v); err != nil {
			b.Fatal(err)
		}
	})
}
