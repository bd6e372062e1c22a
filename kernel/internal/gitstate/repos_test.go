package gitstate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBaseAcrossNestedRepositories(t *testing.T) {
	t.Parallel()
	w := newWorld(t, func(folder string) {
		inner := filepath.Join(folder, "lib")
		os.MkdirAll(inner, 0o755)
		run(t, inner, "init", "-q", "-b", "main")
		write(t, filepath.Join(inner, "x.go"), "package x\n")
		run(t, inner, "add", ".")
		run(t, inner, "commit", "-q", "-m", "inner")
	})
	_, p := savedBase(t, w.copy)
	base, err := LoadBase(p)
	if err != nil {
		t.Fatal(err)
	}
	inner := filepath.Join(w.copy, "lib")
	oldInner := w.short(inner, "main")
	write(t, filepath.Join(inner, "x.go"), "package x // changed\n")
	run(t, inner, "commit", "-q", "-am", "task in lib")
	// The task also makes a repository of its own.
	os.MkdirAll(filepath.Join(w.copy, "scratch"), 0o755)
	run(t, filepath.Join(w.copy, "scratch"), "init", "-q")
	effs, err := base.Compare(w.copy)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, e := range effs {
		lines = append(lines, e.Lines()...)
	}
	want := []string{
		"git (lib): nested repository",
		"git (lib): 3 new object files",
		"git (lib): main " + oldInner + " → " + w.short(inner, "main") + " · fast-forward · 1 commit",
		"git (lib): index +0 ~1 -0 (x.go)",
		"git (scratch): nested repository",
		"git (scratch): new repository (Kule never carries a .git into the folder: a commit that takes its files is refused; remove its .git in the copy to commit them as plain files, or clone it from the copy)",
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Fatalf("lines (-want +got):\n%s", diff)
	}
	if err := base.Check(w.folder, effs); err != nil {
		t.Fatalf("Check: %v", err)
	}
	undo, err := base.Apply(w.folder, w.copy, effs, ApplyOptions{})
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	folderInner := filepath.Join(w.folder, "lib")
	if got := run(t, folderInner, "log", "-1", "--format=%s"); got != "task in lib" {
		t.Errorf("folder lib log = %q", got)
	}
	run(t, folderInner, "fsck", "--strict", "--no-progress")
	if _, err := os.Stat(filepath.Join(w.folder, "scratch")); err == nil {
		t.Error("the task's new repository reached the folder")
	}
	if err := RevertSet(w.folder, undo); err != nil {
		t.Fatalf("RevertSet: %v", err)
	}
	if got := w.short(folderInner, "main"); got != oldInner {
		t.Errorf("after revert lib main = %s, want %s", got, oldInner)
	}
	// A person's commit in the nested repository meanwhile is a conflict
	// named with the repository's path.
	commitIn(folderInner, "y.go", "package x\n", "person in lib")(w)
	err = base.Check(w.folder, effs)
	if err == nil || !strings.Contains(err.Error(), "lib: main: the folder moved it") {
		t.Fatalf("Check = %v, want a conflict naming lib: main", err)
	}
}
