package ini

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kulehq/kule/sdk/differ"
	"github.com/kulehq/kule/sdk/differ/differtest"
)

func samples(t testing.TB) []differtest.Sample {
	var out []differtest.Sample
	for _, name := range []string{"php.ini", "setup.cfg"} {
		src, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, differtest.Sample{Path: name, Src: src})
	}
	return out
}

// TestConformance is the SDK's conformance suite: the proof a stranger can
// write a Kule differ with sdk/ alone.
func TestConformance(t *testing.T) {
	differtest.Run(t, New(), samples(t)...)
}

func TestEntities(t *testing.T) {
	tests := map[string]struct {
		src  string
		want []differ.Entity
	}{
		"sections and keys": {src: "top = 1\n[a]\nx = 1\n\n[b]\ny: 2\n", want: []differ.Entity{
			{Kind: "key", Name: "top", Start: 0, End: 8},
			{Kind: "section", Name: "a", Start: 8, End: 19},
			{Kind: "key", Name: "a.x", Start: 12, End: 18, Parent: "a"},
			{Kind: "section", Name: "b", Start: 19, End: 28},
			{Kind: "key", Name: "b.y", Start: 23, End: 28, Parent: "b"},
		}},
		"repeated keys and sections": {src: "[a]\nk=1\nk=2\n[a]\n", want: []differ.Entity{
			{Kind: "section", Name: "a", Start: 0, End: 12},
			{Kind: "key", Name: "a.k", Start: 4, End: 8, Parent: "a"},
			{Kind: "key", Name: "a.k (2)", Start: 8, End: 12, Parent: "a"},
			{Kind: "section", Name: "a (2)", Start: 12, End: 16},
		}},
		"comments and junk": {src: "; c\n# d\nnot a key\n[]\n"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r, err := New().Entities(context.Background(), differ.EntitiesRequest{Path: "x.ini", Content: []byte(tc.src)})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, r.Entities); diff != "" {
				t.Errorf("entities (-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzEntities(f *testing.F) {
	for _, s := range samples(f) {
		f.Add(s.Src)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if err := differtest.Check(New(), "f.ini", src); err != nil {
			t.Fatal(err)
		}
	})
}
