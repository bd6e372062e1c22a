package apply

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kulehq/kule/kernel/internal/crashpoint"
	"github.com/kulehq/kule/kernel/internal/effects"
)

// leftovers lists every .kule- name under the roots.
func leftovers(roots ...string) []string {
	var out []string
	for _, r := range roots {
		_ = filepath.Walk(r, func(p string, info os.FileInfo, err error) error {
			if info != nil && strings.HasPrefix(filepath.Base(p), ".kule-") { // an unreadable directory comes with its error
				out = append(out, p)
			}
			return nil
		})
	}
	return out
}

// TestRefusalAfterARaceLeavesNothingBehind: while a commit stages, a
// process racing it moves the directory staged into away and puts a link
// to another folder in its place; then staging fails. The clean-up finds
// the staged names through the directories it staged into, wherever they
// went: nothing of Kule's stays in the moved directory, nor behind the
// link. With the directories not held, the temporary file stays behind.
func TestRefusalAfterARaceLeavesNothingBehind(t *testing.T) {
	for _, held := range []bool{false, true} {
		holdStagingDirs = held
		root, elsewhere := t.TempDir(), t.TempDir()
		writeFiles(t, root, map[string]string{"sub/a.txt": "old a", "sub/b.txt": "old b"})
		j := &Journal{Kind: "commit", Ops: []Op{
			{Kind: Replace, Path: "sub/a.txt", Type: effects.TypeFile, Src: "a", Mode: 0o644, UID: -1},
			{Kind: Replace, Path: "sub/b.txt", Type: effects.TypeFile, Src: "b", Mode: 0o644, UID: -1},
		}}
		race := errors.New("the copy went away")
		open := func(src string) (io.ReadCloser, error) {
			if src == "b" {
				// The race: sub moves, a link to elsewhere takes its place.
				if err := os.Rename(filepath.Join(root, "sub"), filepath.Join(root, "sub-moved")); err != nil {
					return nil, err
				}
				if err := os.Symlink(elsewhere, filepath.Join(root, "sub")); err != nil {
					return nil, err
				}
				return nil, race
			}
			return io.NopCloser(strings.NewReader("new " + src)), nil
		}
		err := Run(root, filepath.Join(t.TempDir(), "journal"), j, open, nil)
		holdStagingDirs = true
		if !errors.Is(err, race) || !strings.Contains(err.Error(), "nothing in the folder changed") {
			t.Fatalf("Run = %v, want the refusal", err)
		}
		left := leftovers(root, elsewhere)
		if held && len(left) > 0 {
			t.Fatalf("a refused commit left %v behind", left)
		}
		if !held && len(left) == 0 {
			t.Fatal("without the held directories the staged file should stay behind (the attack)")
		}
		if b, _ := os.ReadFile(filepath.Join(root, "sub-moved", "a.txt")); string(b) != "old a" {
			t.Fatalf("the refused commit changed a.txt: %q", b)
		}
	}
}

// TestTrashHoldingWhatWasNotSeenIsKept: between the check of what a
// commit deletes and the clearing of its trash, a file appears in the
// directory moved aside (a person's program wrote it). Kule never read it
// and no checkpoint holds it: the trash is kept, the error says where and
// what to do, and once the person has dealt with it the next call
// finishes the change. With the guard taken away the file is deleted.
func TestTrashHoldingWhatWasNotSeenIsKept(t *testing.T) {
	for _, guarded := range []bool{false, true} {
		keepUnseen = guarded
		root := t.TempDir()
		writeFiles(t, root, map[string]string{"gone/a.txt": "a", "keep.txt": "k"})
		journal := filepath.Join(t.TempDir(), "journal")
		var unseen string
		restore := crashpoint.SetHook(func(step string) {
			if step != "commit.renamed" {
				return
			}
			trash, _ := filepath.Glob(filepath.Join(root, ".kule-*.trash"))
			if len(trash) == 1 {
				unseen = filepath.Join(trash[0], "written-meanwhile.txt")
				os.WriteFile(unseen, []byte("never read by kule"), 0o644)
			}
		})
		err := Run(root, journal, &Journal{Kind: "commit", Ops: []Op{{Kind: Remove, Path: "gone"}}}, nil, nil)
		restore()
		keepUnseen = true
		if unseen == "" {
			t.Fatal("the hook found no trash to write into")
		}
		_, serr := os.Stat(unseen)
		if !guarded {
			if err != nil || serr == nil {
				t.Fatalf("without the guard the unseen file should be deleted (the attack): %v %v", err, serr)
			}
			continue
		}
		if !errors.Is(err, ErrUnseen) || !strings.Contains(err.Error(), "kept, not deleted") {
			t.Fatalf("Run = %v, want the trash kept", err)
		}
		if serr != nil {
			t.Fatalf("the file Kule never read was deleted: %v", serr)
		}
		if _, err := os.Stat(filepath.Join(root, "gone")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the deletion itself is not in place: %v", err)
		}
		// The person moves it out; the next call finishes.
		if err := os.Rename(filepath.Dir(unseen), filepath.Join(root, "gone-kept")); err != nil {
			t.Fatal(err)
		}
		if _, _, err := Recover(root, journal, nil); err != nil {
			t.Fatalf("recover after the person kept the trash: %v", err)
		}
		if left := leftovers(root); len(left) > 0 {
			t.Fatalf("left behind: %v", left)
		}
		if _, err := os.Stat(journal); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("journal after recovery: %v", err)
		}
	}
}
