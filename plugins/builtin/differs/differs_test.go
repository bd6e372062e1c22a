package differs

import (
	"testing"

	"github.com/kulehq/kule/plugins/builtin"
)

// Every entry of kule's table is a differ kule-plugins makes, of that name,
// and both say the same of which files it reads: kule never sends a file
// to a differ that would refuse it, nor keeps one from the differ that
// reads it.
func TestTheTableAndTheDiffersAgree(t *testing.T) {
	paths := []string{"main.go", "lib.rs", "App.TSX", "index.mjs", "a.js", "tool.py", "x.pyi", "Program.cs",
		"README.md", "notes.markdown", "package.json", "package-lock.json", "Cargo.toml", "Cargo.lock",
		"notes.txt", "photo.jpg", "Makefile", "dir.rs/file", "a.d.ts", "x.cts"}
	if len(byName) != len(builtin.Differs) {
		t.Errorf("kule-plugins makes %d differs, kule's table names %d", len(byName), len(builtin.Differs))
	}
	for _, e := range builtin.Differs {
		d, ok := New(e.Name)
		if !ok {
			t.Errorf("%s: kule-plugins makes no such differ", e.Name)
			continue
		}
		if got := "differ/" + d.Name(); got != e.Name {
			t.Errorf("%s: the differ made is %s", e.Name, got)
		}
		for _, p := range paths {
			if e.Accepts(p) != d.Accepts(p) {
				t.Errorf("%s: on %q the table says %v, the differ %v", e.Name, p, e.Accepts(p), d.Accepts(p))
			}
		}
	}
	if _, ok := New("differ/nosuch"); ok {
		t.Error("New of an unknown name made a differ")
	}
}
