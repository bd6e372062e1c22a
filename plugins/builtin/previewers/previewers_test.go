package previewers

import (
	"strings"
	"testing"

	"github.com/kulehq/kule/plugins/builtin"
)

// TestEveryNamedPreviewerIsMade: each previewer the table names is made
// here under that name, and its own Accepts agrees with the table's (kule
// chooses by the table, kule-plugins serves what is made here), and none is
// made that the table does not name.
func TestEveryNamedPreviewerIsMade(t *testing.T) {
	paths := []string{"a.png", "b.JPG", "c.gif", "d.webp", "notes.md", "x.markdown", "t.csv", "t.tsv", "book.xlsx", "m.xlsm",
		"r.docx", "r.docm", "main.go", "README", "archive.zip", "doc.pdf", "a.txt", "Makefile", "x.bmp"}
	for _, p := range builtin.Previewers {
		kind, name, ok := strings.Cut(p.Name, "/")
		if !ok || kind != "previewer" {
			t.Fatalf("entry %q: want previewer/<name>", p.Name)
		}
		made, ok := New(p.Name)
		if !ok {
			t.Fatalf("%s is named in the table but not made", p.Name)
		}
		if made.Name() != name {
			t.Errorf("%s makes a previewer named %q", p.Name, made.Name())
		}
		for _, path := range paths {
			if made.Accepts(path) != p.Accepts(path) {
				t.Errorf("%s: for %s the previewer says %v, the table %v", p.Name, path, made.Accepts(path), p.Accepts(path))
			}
		}
	}
	if len(makers) != len(builtin.Previewers) {
		t.Errorf("%d previewers made, %d named", len(makers), len(builtin.Previewers))
	}
	if _, ok := New("previewer/nosuch"); ok {
		t.Error("an unknown name made a previewer")
	}
}
