package csv

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kulehq/kule/sdk/previewer"
	"github.com/kulehq/kule/sdk/previewer/previewertest"
)

func preview(t testing.TB, path, src string) (previewer.Response, error) {
	t.Helper()
	return New().Preview(context.Background(), previewer.Request{Path: path, Content: []byte(src)})
}

func TestConformance(t *testing.T) {
	previewertest.Run(t, New(),
		previewertest.Sample{Path: "budget.csv", Src: []byte("item,cost\nrent,1200\n\"food, drink\",300\n")},
		previewertest.Sample{Path: "a.tsv", Src: []byte("a\tb\n1\t2\n")},
	)
}

func TestSheetFromA1(t *testing.T) {
	r, err := preview(t, "b.csv", "item;cost\nrent;1200\n\"a;b\";3\n")
	if err != nil {
		t.Fatal(err)
	}
	if r.Kind != previewer.KindSheet || len(r.Blocks) != 3 {
		t.Fatalf("got %+v", r)
	}
	if row := r.Blocks[2].Row; row.Number != 3 || row.Cells[0] != "a;b" || row.Cells[1] != "3" {
		t.Errorf("row 3 = %+v", row)
	}
}

func TestHostileCSV(t *testing.T) {
	t.Run("million columns", func(t *testing.T) {
		r, err := preview(t, "wide.csv", strings.Repeat("x,", 1_000_000)+"x\n1\n")
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Blocks[0].Row.Cells) != MaxColumns || !strings.Contains(strings.Join(r.Notes, " "), "columns") {
			t.Fatalf("%d cells shown, notes %v", len(r.Blocks[0].Row.Cells), r.Notes)
		}
		if err := previewer.Validate(r, previewer.DefaultMaxBlocks); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("one long cell", func(t *testing.T) {
		r, err := preview(t, "long.csv", strings.Repeat("y", 10<<20))
		if err != nil {
			t.Fatal(err)
		}
		if c := r.Blocks[0].Row.Cells[0]; len(c) > MaxCell+4 {
			t.Fatalf("a cell of %d bytes shown", len(c))
		}
	})
	t.Run("binary named csv", func(t *testing.T) {
		if _, err := preview(t, "a.csv", "PK\x03\x04\x00\x00"); !errors.Is(err, previewer.ErrCannotPreview) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("unterminated quote", func(t *testing.T) {
		r, err := preview(t, "a.csv", "a,\"b\nc,d")
		if err != nil && !errors.Is(err, previewer.ErrCannotPreview) {
			t.Fatalf("got %v", err)
		}
		if err == nil {
			if err := previewer.Validate(r, previewer.DefaultMaxBlocks); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func FuzzCSV(f *testing.F) {
	for _, s := range []string{"a,b\n1,2\n", "\"a\"\"b\",c", "a;b;c\n", "a\tb", "\"", "x,\"y\nz", "caf\xe9,1"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if err := previewertest.Check(New(), "f.csv", src); err != nil {
			t.Fatal(err)
		}
	})
}
