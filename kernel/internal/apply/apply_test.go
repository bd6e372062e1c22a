package apply

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kulehq/kule/kernel/internal/effects"
	"github.com/kulehq/kule/kernel/internal/relpath"
)

func opener(files map[string]string) Opener {
	return func(src string) (io.ReadCloser, error) {
		c, ok := files[src]
		if !ok {
			return nil, os.ErrNotExist
		}
		return io.NopCloser(strings.NewReader(c)), nil
	}
}

func TestRunRefusesToStageThroughALink(t *testing.T) {
	t.Parallel()
	root, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "docs")); err != nil {
		t.Fatal(err)
	}
	j := &Journal{Kind: "commit", Ops: []Op{{Kind: Replace, Path: "docs/passwd", Type: effects.TypeFile, Src: "x", Mode: 0o644, UID: -1}}}
	err := Run(root, filepath.Join(t.TempDir(), "journal"), j, opener(map[string]string{"x": "owned"}), nil)
	if !errors.Is(err, ErrLinkInPath) {
		t.Fatalf("Run = %v, want ErrLinkInPath", err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("a file was written through the link: %v", ents)
	}
}

func TestRunRefusesPathsThatLeaveTheRoot(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"../x", "/etc/passwd", "a/../../x", ""} {
		j := &Journal{Kind: "commit", Ops: []Op{{Kind: Remove, Path: "ok"}, {Kind: Remove, Path: "a"}}}
		j.Ops[1].Path = "a"
		j.Ops[0].Path = ""
		j.Ops[0].Path = j.Ops[0].Path + pathOf(p)
		if err := Run(t.TempDir(), filepath.Join(t.TempDir(), "journal"), j, nil, nil); err == nil {
			t.Errorf("Run accepted the path %q", p)
		}
	}
}

func pathOf(s string) relpath.Path { return relpath.Path(s) }

func FuzzReadJournal(f *testing.F) {
	good, _ := json.Marshal(&Journal{ID: "abc", Kind: "commit", Phase: PhaseStaged, Ops: []Op{{Kind: Move, Path: "b", From: "a"}}})
	f.Add(good)
	locked, _ := json.Marshal(&Journal{ID: "abd", Kind: "commit", Phase: PhaseStaged, Ops: []Op{{Kind: Lock, Path: ".git/refs/heads/main", Tmp: ".kule-abd-0.tmp", Mine: sumOf("x"), Expect: sumOf("y")}, {Kind: Lock, Path: ".git/index", Remove: true}}})
	f.Add(locked)
	f.Add([]byte(`{"ops":[{"path":{"base64":"/w=="}}]}`))
	f.Add([]byte("{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "journal")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		j, err := ReadJournal(p)
		if err != nil {
			if !errors.Is(err, ErrJournalDamaged) {
				t.Fatalf("error %v is not ErrJournalDamaged", err)
			}
			return
		}
		// Whatever it names, Recover never acts outside the root: run it
		// on an empty root inside a fence directory and check the fence.
		fence := t.TempDir()
		root := filepath.Join(fence, "root")
		if err := os.Mkdir(root, 0o755); err != nil {
			t.Fatal(err)
		}
		_, _, _ = Recover(root, p, nil)
		ents, _ := os.ReadDir(fence)
		if len(ents) != 1 {
			t.Fatalf("recovering journal %+v changed what lies beside the root: %v", j, ents)
		}
	})
}

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func sumOf(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// Lock ops follow git's lock protocol: content goes in through <file>.lock,
// a ref's new namespace is made, a removed ref is gone, and no lock is left.
func TestLockOpsReplaceAndRemoveRepositoryFiles(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeFiles(t, root, map[string]string{".git/refs/heads/main": "aaaa\n", ".git/refs/heads/old": "bbbb\n"})
	j := &Journal{Kind: "commit", Ops: []Op{
		{Kind: Lock, Path: ".git/refs/heads/main", Data: []byte("cccc\n"), Expect: sumOf("aaaa\n")},
		{Kind: Lock, Path: ".git/refs/heads/team/topic", Data: []byte("dddd\n")},
		{Kind: Lock, Path: ".git/refs/heads/old", Remove: true, Expect: sumOf("bbbb\n")},
	}}
	if err := Run(root, filepath.Join(t.TempDir(), "journal"), j, nil, nil); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{".git/refs/heads/main": "cccc\n", ".git/refs/heads/team/topic": "dddd\n"} {
		if b, err := os.ReadFile(filepath.Join(root, p)); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", p, b, err, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(root, ".git/refs/heads/old")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the removed ref is still there: %v", err)
	}
	_ = filepath.Walk(root, func(p string, _ os.FileInfo, _ error) error {
		if strings.HasSuffix(p, ".lock") || strings.HasPrefix(filepath.Base(p), ".kule-") {
			t.Errorf("left behind: %s", p)
		}
		return nil
	})
}

// A lock a git command holds stops the change before anything is applied,
// and stays the git command's; a file that moved since it was planned does
// too, and Kule's own locks are gone again.
func TestLockOpsRefuseAHeldLockOrAMovedFile(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		files map[string]string
		want  error
	}{
		"held":  {map[string]string{".git/index": "old", ".git/HEAD.lock": "git's"}, ErrBusy},
		"moved": {map[string]string{".git/index": "someone else's"}, ErrConflict},
	} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			writeFiles(t, root, map[string]string{"a.txt": "a", ".git/HEAD": "ref: refs/heads/main\n"})
			writeFiles(t, root, tc.files)
			j := &Journal{Kind: "commit", Ops: []Op{
				{Kind: Replace, Path: "a.txt", Type: effects.TypeFile, Src: "new", Mode: 0o644, UID: -1},
				{Kind: Lock, Path: ".git/index", Data: []byte("new index"), Expect: sumOf("old")},
				{Kind: Lock, Path: ".git/HEAD", Data: []byte("ref: refs/heads/topic\n"), Expect: sumOf("ref: refs/heads/main\n")},
			}}
			err := Run(root, filepath.Join(t.TempDir(), "journal"), j, opener(map[string]string{"new": "b"}), nil)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Run = %v, want %v", err, tc.want)
			}
			if b, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(b) != "a" {
				t.Errorf("a.txt = %q: applied in part", b)
			}
			if _, err := os.Lstat(filepath.Join(root, ".git/index.lock")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("Kule's index.lock was left: %v", err)
			}
			held := filepath.Join(root, ".git/HEAD.lock")
			if b, err := os.ReadFile(held); name == "held" && string(b) != "git's" {
				t.Errorf("git's HEAD.lock = %q, %v: taken away", b, err)
			} else if name == "moved" && !errors.Is(err, os.ErrNotExist) {
				t.Errorf("Kule's HEAD.lock was left: %v", err)
			}
		})
	}
}
