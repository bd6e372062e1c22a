package kernel_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/effects"
)

func TestContentsAndFolderStatus(t *testing.T) {
	f := newFixture(t, map[string]string{"a.txt": "old a\n", "b.txt": "old b\n", "c.txt": "c\n"})
	tk := f.newTask()
	st := f.sh(tk, "echo new a > a.txt && rm b.txt && echo d > d.txt && mv c.txt e.txt")
	got := map[string][2]string{}
	for _, e := range st.Pending(false) {
		if !kernel.Reviewable(e) {
			continue
		}
		old, new, err := st.Contents(e, 1<<20)
		if err != nil {
			t.Fatalf("contents of %s: %v", e.Path, err)
		}
		got[string(e.Kind)+" "+e.Path] = [2]string{string(old), string(new)}
	}
	want := map[string][2]string{
		"modify a.txt": {"old a\n", "new a\n"},
		"delete b.txt": {"old b\n", ""},
		"add d.txt":    {"", "d\n"},
		"move e.txt":   {"c\n", "c\n"},
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: contents %q, want %q (all: %q)", k, got[k], w, got)
		}
	}
	for _, e := range st.Pending(false) {
		if e.Kind == effects.Modify {
			if _, _, err := st.Contents(e, 2); err == nil {
				t.Errorf("contents over the limit: no error")
			}
		}
	}

	// The person edits the real folder by hand: FolderStatus sees it, the
	// task's own status does not.
	if err := os.WriteFile(filepath.Join(f.folder, "c.txt"), []byte("by hand\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs, err := f.k.FolderStatus(tk)
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, e := range fs.Pending(false) {
		if e.Path == "c.txt" && e.Kind == effects.Modify {
			old, new, err := fs.Contents(e, 1<<20)
			found = err == nil && string(old) == "c\n" && string(new) == "by hand\n"
		}
	}
	if !found {
		t.Errorf("folder status = %v; want c.txt modified by hand with its contents", lines(fs.Effects))
	}
}
