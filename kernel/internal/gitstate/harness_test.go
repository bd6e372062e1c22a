package gitstate

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// The tests drive the real git command on both sides: the folder (the
// person) and the task's copy (made with cp -a, as the engine does on ext4).

var clock atomic.Int64

func needGit(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("git is not installed: %v", err)
		}
		t.Skip("git is not installed")
	}
}

// gitEnv isolates git from the machine's configuration and gives every
// commit its own second, so history order is well defined.
func gitEnv(home string) []string {
	n := clock.Add(1)
	date := fmt.Sprintf("%d +0000", 1700000000+n)
	return append(os.Environ(),
		"HOME="+home, "XDG_CONFIG_HOME="+home, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Ada", "GIT_AUTHOR_EMAIL=ada@example.com",
		"GIT_COMMITTER_NAME=Ada", "GIT_COMMITTER_EMAIL=ada@example.com",
		"GIT_AUTHOR_DATE="+date, "GIT_COMMITTER_DATE="+date,
		"GIT_TERMINAL_PROMPT=0", "LC_ALL=C",
	)
}

func run(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := tryRun(dir, args...)
	if err != nil {
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return strings.TrimSpace(out)
}

func tryRun(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = gitEnv(filepath.Dir(dir))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// world is a folder repository, its snapshot taken when the task began,
// and the task's copy.
type world struct {
	t      testing.TB
	folder string
	copy   string
	base   *Snapshot
}

// newWorld makes a folder repository with two commits on main and a
// branch "feature", copies it with cp -a and takes the base snapshot.
func newWorld(t testing.TB, setup func(folder string)) *world {
	t.Helper()
	needGit(t)
	root := t.TempDir()
	folder := filepath.Join(root, "folder")
	if err := os.Mkdir(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, folder, "init", "-q", "-b", "main")
	write(t, filepath.Join(folder, "a.txt"), "one\n")
	write(t, filepath.Join(folder, "b.txt"), "bee\n")
	run(t, folder, "add", ".")
	run(t, folder, "commit", "-q", "-m", "first")
	write(t, filepath.Join(folder, "a.txt"), "one\ntwo\n")
	run(t, folder, "commit", "-q", "-am", "second")
	run(t, folder, "branch", "feature")
	if setup != nil {
		setup(folder)
	}
	w := &world{t: t, folder: folder, copy: filepath.Join(root, "copy")}
	w.recopy()
	return w
}

// recopy makes the task's copy afresh (cp -a) and takes the base snapshot.
func (w *world) recopy() {
	w.t.Helper()
	os.RemoveAll(w.copy)
	if out, err := exec.Command("cp", "-a", w.folder, w.copy).CombinedOutput(); err != nil {
		w.t.Fatalf("cp -a: %v\n%s", err, out)
	}
	b, err := Take(filepath.Join(w.copy, ".git"))
	if err != nil {
		w.t.Fatalf("Take: %v", err)
	}
	// The engine stores the snapshot as JSON and reads it back.
	enc, err := b.Encode()
	if err != nil {
		w.t.Fatal(err)
	}
	if w.base, err = DecodeSnapshot(enc); err != nil {
		w.t.Fatalf("DecodeSnapshot: %v", err)
	}
}

func (w *world) folderGit() string { return filepath.Join(w.folder, ".git") }
func (w *world) copyGit() string   { return filepath.Join(w.copy, ".git") }

func (w *world) compare() *Effects {
	w.t.Helper()
	eff, err := Compare(w.base, w.copyGit(), w.copy)
	if err != nil {
		w.t.Fatalf("Compare: %v", err)
	}
	return eff
}

// syncFiles copies the given worktree files from the copy to the folder,
// standing in for the file engine's own commit of file effects.
func (w *world) syncFiles(paths ...string) {
	w.t.Helper()
	for _, p := range paths {
		b, err := os.ReadFile(filepath.Join(w.copy, p))
		if err != nil {
			w.t.Fatal(err)
		}
		write(w.t, filepath.Join(w.folder, p), string(b))
	}
}

func (w *world) fsck() {
	w.t.Helper()
	run(w.t, w.folder, "fsck", "--strict", "--no-progress")
}

// outcome is what a commit would do, as the engine decides it from these
// effects: waits (a rewrite or staged content that differs), conflict, or
// applied.
func outcome(err error, eff *Effects) string {
	switch {
	case errors.Is(err, ErrConflict):
		return "conflict"
	case err != nil:
		return "error: " + err.Error()
	case len(eff.Rewrites()) > 0 || len(eff.StagedDiffers) > 0:
		return "waits"
	}
	return "applied"
}
