package text

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kulehq/kule/sdk/differ"
	"github.com/kulehq/kule/sdk/differ/differtest"
)

const note = `Plan for the week

Monday: write the host.
Tuesday: test it.

Later
maybe a party
`

func TestConformance(t *testing.T) {
	differtest.Run(t, New(), differtest.Sample{Path: "notes.txt", Src: []byte(note)})
}

func TestEntities(t *testing.T) {
	tests := map[string]struct {
		src  string
		want []differ.Entity
	}{
		"paragraphs": {src: note, want: []differ.Entity{
			{Kind: "paragraph", Name: "Plan for the week", Start: 0, End: 18},
			{Kind: "paragraph", Name: "Monday: write the host.", Start: 19, End: 61},
			{Kind: "paragraph", Name: "Later", Start: 62, End: 82},
		}},
		"repeated first lines": {src: "a\n\na\n", want: []differ.Entity{
			{Kind: "paragraph", Name: "a", Start: 0, End: 2},
			{Kind: "paragraph", Name: "a (2)", Start: 3, End: 5},
		}},
		"no newline at end": {src: "x", want: []differ.Entity{{Kind: "paragraph", Name: "x", Start: 0, End: 1}}},
		"blank only":        {src: " \n\t\n"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r, err := New().Entities(context.Background(), differ.EntitiesRequest{Path: "a.txt", Content: []byte(tc.src)})
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
	f.Add([]byte(note))
	f.Fuzz(func(t *testing.T, src []byte) {
		if err := differtest.Check(New(), "f.txt", src); err != nil {
			t.Fatal(err)
		}
	})
}
