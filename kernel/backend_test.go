package kernel_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/internal/clone"
)

// A misspelt backend is refused before anything is made, by the kernel's
// start (so every command says so, not only kule new): it used to fall back
// to a plain copy without a word.
func TestNewRefusesAnUnknownBackend(t *testing.T) {
	dir := t.TempDir()
	folder := filepath.Join(dir, "folder")
	write(t, folder, map[string]string{"a.txt": "a\n"})
	home := filepath.Join(dir, "home")
	_, err := kernel.New(kernel.Config{Home: home, Backend: "bogus"})
	if !errors.Is(err, clone.ErrUnknownBackend) {
		t.Fatalf("a kernel with backend bogus: %v, want ErrUnknownBackend", err)
	}
	for _, want := range []string{`"bogus"`, "reflink, copy", "nothing was changed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error %q does not say %q", err, want)
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(home, "tasks")); len(ents) != 0 {
		t.Fatalf("a refused kernel left %d entries in tasks/", len(ents))
	}
	// The guard taken away: clone.Tree itself refuses the name too, so no
	// caller that skips the kernel's check gets a silent plain copy.
	if _, err := clone.Tree(folder, filepath.Join(dir, "copy"), t.TempDir(), clone.Options{Backend: "bogus"}); !errors.Is(err, clone.ErrUnknownBackend) {
		t.Fatalf("clone.Tree with backend bogus: %v, want ErrUnknownBackend", err)
	}
}

// BackendFor names the backend kule new then picks, with a reason, and
// writes nothing in the folder.
func TestBackendForSaysWhatNewPicks(t *testing.T) {
	f := newFixture(t, map[string]string{"a.txt": "a\n", "sub/b.txt": "b\n"})
	before := tree(t, f.folder)
	name, why := f.k.BackendFor(f.folder)
	if name == "" || why == "" {
		t.Fatalf("BackendFor = %q, %q; want a backend and a reason", name, why)
	}
	tk := f.newTask()
	if tk.Backend != name {
		t.Fatalf("BackendFor said %s (%s), kule new picked %s", name, why, tk.Backend)
	}
	if name == clone.Copy && !strings.Contains(why, "no reflinks") && os.Getenv("KULE_TEST_BACKEND") == "" {
		t.Fatalf("a plain copy's reason %q does not say the file system has no reflinks", why)
	}
	if got := tree(t, f.folder); len(got) != len(before) {
		t.Fatalf("BackendFor changed the folder: %v, was %v", got, before)
	}
	if name, why := f.k.BackendFor(filepath.Join(f.folder, "missing")); name != "" || !strings.Contains(why, "missing") {
		t.Fatalf("BackendFor of a missing folder = %q, %q", name, why)
	}
}
