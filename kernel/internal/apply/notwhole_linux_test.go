//go:build linux

package apply

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kulehq/kule/internal/asnobody"
)

// TestNotWholeDirectoryAsNobody runs TestNotWholeDirectoryInner as the
// nobody user, the way a person without root commits: root reads and
// removes everything, so only an unprivileged run can meet a directory it
// cannot read.
func TestNotWholeDirectoryAsNobody(t *testing.T) {
	if asnobody.Inside(t) {
		return
	}
	asnobody.Rerun(t, "TestNotWholeDirectoryAsNobody", []string{"TestNotWholeDirectoryInner"})
}

// TestNotWholeDirectoryInner: a commit that deletes a directory holding what
// Kule cannot read or remove is refused before anything is written, names
// the directory and says what to do; the folder holds it as before, with no
// trash and no journal. With the check taken away the commit fails at
// "clear trash", leaving .kule-…trash in the folder and its journal behind
// (every later command then fails on it): the attack.
func TestNotWholeDirectoryInner(t *testing.T) {
	var work string
	switch {
	case asnobody.Inside(t):
		work = os.Getenv("HOME") // a folder nobody owns, in a parent nobody may enter
	case os.Getuid() != 0:
		work = t.TempDir() // an unprivileged go test runs it directly
	default:
		t.Skip("runs as nobody inside TestNotWholeDirectoryAsNobody")
	}
	cases := map[string]struct {
		files  map[string]string
		locked string      // the directory made unreadable
		mode   os.FileMode // its mode
	}{
		"unreadable directory":        {map[string]string{"gone/secret.txt": "s"}, "gone", 0o000},
		"unreadable directory inside": {map[string]string{"gone/a.txt": "a", "gone/deep/secret.txt": "s"}, "gone/deep", 0o000},
		"read-only directory inside":  {map[string]string{"gone/a.txt": "a", "gone/ro/kept.txt": "k"}, "gone/ro", 0o555},
	}
	for name, tc := range cases {
		for _, guarded := range []bool{false, true} {
			folder, err := os.MkdirTemp(work, "folder")
			if err != nil {
				t.Fatal(err)
			}
			writeFiles(t, folder, tc.files)
			if err := os.WriteFile(filepath.Join(folder, "keep.txt"), []byte("k"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(filepath.Join(folder, filepath.FromSlash(tc.locked)), tc.mode); err != nil {
				t.Fatal(err)
			}
			journal := filepath.Join(folder + ".journal") // beside the folder, one for each run
			refuseNotWhole = guarded
			err = Run(folder, journal, &Journal{Kind: "commit", Ops: []Op{{Kind: Remove, Path: "gone"}}}, nil, nil)
			refuseNotWhole = true
			left := leftovers(folder)
			_, jerr := os.Stat(journal)
			if guarded {
				if !errors.Is(err, ErrNotWhole) || !strings.Contains(err.Error(), "gone") ||
					!strings.Contains(err.Error(), "nothing in the folder changed") || !strings.Contains(err.Error(), "chmod -R u+rwX") {
					t.Fatalf("%s: Run = %v, want the refusal naming gone and what to do", name, err)
				}
				if len(left) > 0 || !errors.Is(jerr, os.ErrNotExist) {
					t.Fatalf("%s: the refused commit left %v (journal: %v)", name, left, jerr)
				}
				if _, err := os.Lstat(filepath.Join(folder, "gone")); err != nil {
					t.Fatalf("%s: the refused commit took the directory away: %v", name, err)
				}
			} else if err == nil || len(left) == 0 {
				t.Fatalf("%s: without the check the commit should fail at clearing its trash and leave it (the attack): %v %v", name, err, left)
			}
			// Open everything again so the folder can be removed (the trash
			// the unguarded run left holds the locked directory too).
			for range 2 {
				_ = filepath.Walk(folder, func(p string, info os.FileInfo, err error) error {
					if info != nil && info.IsDir() {
						os.Chmod(p, 0o755)
					}
					return nil
				})
			}
		}
	}
}
