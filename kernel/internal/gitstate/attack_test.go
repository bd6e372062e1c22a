package gitstate

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A task must not be able to plant, through a commit, anything in the
// folder's repository other than what its effects say.

// looseObject returns the zlib bytes of a loose object and its real id.
func looseObject(typ, content string) ([]byte, string) {
	raw := fmt.Sprintf("%s %d\x00%s", typ, len(content), content)
	sum := sha1.Sum([]byte(raw))
	var b bytes.Buffer
	zw := zlib.NewWriter(&b)
	zw.Write([]byte(raw))
	zw.Close()
	return b.Bytes(), hex.EncodeToString(sum[:])
}

func TestAttackPlantedObjectIsRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t, nil)
	// The task plants malicious content under the id of content the person
	// is likely to add later ("TODO\n").
	_, victim := looseObject("blob", "TODO\n")
	evil, _ := looseObject("blob", "rm -rf ~\n")
	p := filepath.Join(w.copyGit(), "objects", victim[:2], victim[2:])
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, evil, 0o444); err != nil {
		t.Fatal(err)
	}
	eff := w.compare()
	if len(eff.Objects.Loose) != 1 || eff.Objects.Loose[0] != victim {
		t.Fatalf("effects objects = %v, want the planted %s", eff.Objects.Loose, victim)
	}
	_, err := Apply(w.base, w.folderGit(), w.copyGit(), eff, ApplyOptions{})
	if !errors.Is(err, ErrBadObject) {
		t.Fatalf("Apply = %v, want ErrBadObject", err)
	}
	if _, err := os.Stat(filepath.Join(w.folderGit(), "objects", victim[:2], victim[2:])); err == nil {
		t.Fatal("the planted object reached the folder")
	}
}

func TestAttackCorruptPackIsRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t, nil)
	commitIn(w.copy, "x.txt", strings.Repeat("pack me\n", 100), "x")(w)
	run(t, w.copy, "repack", "-q", "-a", "-d")
	eff := w.compare()
	if len(eff.Objects.Packs) != 1 {
		t.Fatalf("effects packs = %v, want 1", eff.Objects.Packs)
	}
	pack := filepath.Join(w.copyGit(), "objects", "pack", eff.Objects.Packs[0]+".pack")
	b, err := os.ReadFile(pack)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	os.Chmod(pack, 0o644)
	if err := os.WriteFile(pack, b, 0o444); err != nil {
		t.Fatal(err)
	}
	_, err = Apply(w.base, w.folderGit(), w.copyGit(), eff, ApplyOptions{})
	if !errors.Is(err, ErrBadObject) {
		t.Fatalf("Apply = %v, want ErrBadObject", err)
	}
	if _, err := os.Stat(filepath.Join(w.folderGit(), "objects", "pack", eff.Objects.Packs[0]+".idx")); err == nil {
		t.Fatal("the corrupt pack's index reached the folder")
	}
	w.fsck()
}

func TestAttackPackAppliesWithOwnIndex(t *testing.T) {
	t.Parallel()
	w := newWorld(t, nil)
	commitIn(w.copy, "x.txt", strings.Repeat("pack me\n", 100), "x")(w)
	run(t, w.copy, "repack", "-q", "-a", "-d")
	eff := w.compare()
	if _, err := Apply(w.base, w.folderGit(), w.copyGit(), eff, ApplyOptions{}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	w.fsck()
	if got := run(t, w.folder, "log", "-1", "--format=%s"); got != "x" {
		t.Errorf("folder log = %q", got)
	}
}

func TestAttackForgedEffectsAreRefused(t *testing.T) {
	t.Parallel()
	cases := map[string]func(e *Effects){
		"ref name escaping refs/": func(e *Effects) {
			e.Refs = []RefChange{{Name: "refs/../config", Kind: RefNew, New: strings.Repeat("a", 40)}}
		},
		"ref name into hooks": func(e *Effects) {
			e.Refs = []RefChange{{Name: "refs/heads/../../hooks/pre-commit", Kind: RefNew, New: strings.Repeat("a", 40)}}
		},
		"ref value with a newline": func(e *Effects) {
			e.Refs = []RefChange{{Name: "refs/heads/x", Kind: RefNew, New: strings.Repeat("a", 40) + "\n[core]"}}
		},
		"object id with a path": func(e *Effects) {
			e.Objects.Loose = []string{"../../../../etc/passwd"}
		},
		"pack name with a path": func(e *Effects) {
			e.Objects.Packs = []string{"../../hooks/pre-commit"}
		},
		"index entry inside .git": func(e *Effects) {
			e.Index = []IndexChange{{Kind: "add", Path: ".GIT/hooks/post-checkout", NewMode: "100755", NewID: strings.Repeat("a", 40)}}
		},
		"index entry outside the folder": func(e *Effects) {
			e.Index = []IndexChange{{Kind: "add", Path: "../escape", NewMode: "100644", NewID: strings.Repeat("a", 40)}}
		},
		"index entry of a directory mode": func(e *Effects) {
			e.Index = []IndexChange{{Kind: "add", Path: "dir", NewMode: "040000", NewID: strings.Repeat("a", 40)}}
		},
		"hook name with a path": func(e *Effects) {
			e.Hooks = []FileChange{{Name: "../config", Kind: "add", New: strings.Repeat("a", 64)}}
		},
	}
	for name, forge := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, nil)
			before, _ := Take(w.folderGit())
			eff := &Effects{Repo: "."}
			forge(eff)
			_, err := Apply(w.base, w.folderGit(), w.copyGit(), eff, ApplyOptions{Hooks: true, Config: true})
			if err == nil {
				t.Fatal("Apply accepted forged effects")
			}
			assertSameMeaning(t, before, w.folderGit())
			w.fsck()
		})
	}
}

func TestBusyFolderIsRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t, nil)
	commitIn(w.copy, "a.txt", "task\n", "task")(w)
	eff := w.compare()
	// A git command is running in the folder: it holds the index lock.
	lock := filepath.Join(w.folderGit(), "index.lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := Take(w.folderGit())
	_, err := Apply(w.base, w.folderGit(), w.copyGit(), eff, ApplyOptions{})
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("Apply = %v, want ErrBusy", err)
	}
	if _, err := os.Stat(lock); err != nil {
		t.Fatal("Apply removed a lock it did not take")
	}
	os.Remove(lock)
	assertSameMeaning(t, before, w.folderGit())
	if _, err := Apply(w.base, w.folderGit(), w.copyGit(), eff, ApplyOptions{}); err != nil {
		t.Fatalf("Apply once the lock is gone: %v", err)
	}
	w.fsck()
}
