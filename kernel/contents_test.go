package kernel_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/internal/effects"
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
	fs, err := f.k.FolderStatus(context.Background(), tk)
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

// FolderStatusAt looks at the folder only where it is asked to, with the
// folder's own stat cache: an edit by hand there is found, an edit elsewhere
// is not looked at, an untouched path is no effect, and a directory the
// person replaced by a link is never followed.
func TestFolderStatusAtLooksOnlyAtThePathsGiven(t *testing.T) {
	f := newFixture(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n", "d/e.txt": "e\n", "gone.txt": "g\n"})
	tk := f.newTask()
	st := f.sh(tk, "echo task > a.txt && echo task > c.txt && echo task > d/e.txt && echo task > gone.txt && echo new > new.txt")
	outside := t.TempDir()
	write(t, outside, map[string]string{"e.txt": "elsewhere\n"})
	for p, c := range map[string]string{"a.txt": "by hand\n", "b.txt": "by hand\n", "new.txt": "mine\n"} {
		if err := os.WriteFile(filepath.Join(f.folder, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(filepath.Join(f.folder, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(f.folder, "d")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(f.folder, "d")); err != nil {
		t.Fatal(err)
	}
	fs, err := f.k.FolderStatusAt(st, []string{"a.txt", "c.txt", "d/e.txt", "gone.txt", "new.txt", "a.txt"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"~ a.txt", "- d/e.txt", "- gone.txt", "+ new.txt"}
	if d := cmp.Diff(want, lines(fs.Effects)); d != "" {
		t.Errorf("folder status at the task's paths (-want +got):\n%s", d)
	}
	for _, e := range fs.Effects {
		if e.Path == "a.txt" {
			old, new, err := fs.Contents(e, 1<<20)
			if err != nil || string(old) != "a\n" || string(new) != "by hand\n" {
				t.Errorf("contents of a.txt = %q, %q, %v", old, new, err)
			}
		}
	}
}
