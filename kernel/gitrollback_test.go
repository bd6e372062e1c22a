package kernel_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/internal/gitstate"
	"github.com/kulehq/kule/kernel/internal/task"
)

// sameGitMeaning fails the test unless the copy's repository at rel means
// what the folder's does: refs and HEAD, index entries, config and hooks.
func sameGitMeaning(t *testing.T, f *fixture, tk *task.Task, rel string) {
	t.Helper()
	fg, cg := filepath.Join(f.folder, rel, ".git"), filepath.Join(tk.Paths.Copy, rel, ".git")
	want, err := gitstate.Take(fg)
	if err != nil {
		t.Fatal(err)
	}
	got, err := gitstate.Take(cg)
	if err != nil {
		t.Fatalf("the copy's %s/.git after rollback: %v", rel, err)
	}
	for name, d := range map[string]string{
		"refs":   cmp.Diff(want.Refs, got.Refs),
		"config": cmp.Diff(want.Config, got.Config),
		"hooks":  cmp.Diff(want.Hooks, got.Hooks),
		"index":  cmp.Diff(gitIn(t, filepath.Join(f.folder, rel), "ls-files", "-s"), gitIn(t, filepath.Join(tk.Paths.Copy, rel), "ls-files", "-s")),
	} {
		if d != "" {
			t.Errorf("after rollback the copy's %s differ from the folder's (-folder +copy):\n%s", name, d)
		}
	}
	gitIn(t, filepath.Join(tk.Paths.Copy, rel), "fsck", "--strict", "--no-progress")
}

func TestRollbackResetsTheCopysGitToTheFolders(t *testing.T) {
	t.Parallel()
	f := gitFixture(t)
	gitIn(t, f.folder, "branch", "feature")
	tk := f.newTask()
	f.sh(tk, "echo two >> a.txt && "+gitID+"commit -qam task && git branch topic && git branch -D feature && "+
		"git config core.fsmonitor 'touch /tmp/x' && printf '#!/bin/sh\\nexit 0\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && "+
		"echo staged > b.txt && git add b.txt && echo other > b.txt")
	rep, err := f.k.Rollback(context.Background(), tk)
	if err != nil {
		t.Fatalf("Rollback: %v", err)
	}
	got := strings.Join(rep.Git, "\n")
	for _, want := range []string{"git: reset to the folder's", "refs ", "main", "topic", "feature", "index (", "config", "hook pre-commit", "new object files stay"} {
		if !strings.Contains(got, want) {
			t.Errorf("rollback report lacks %q:\n%s", want, got)
		}
	}
	sameGitMeaning(t, f, tk, ".")
	st, err := f.k.Status(context.Background(), tk)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Effects) != 0 || len(st.Git) != 0 {
		t.Fatalf("after rollback status = %v, git %s", lines(st.Effects), gitLines(st))
	}
	if out := gitIn(t, tk.Paths.Copy, "status", "--porcelain"); out != "" {
		t.Errorf("git status in the copy after rollback = %q, want clean", out)
	}
}

// A copy whose .git names a sibling repository: rollback takes the pointer
// away (and writes nothing into the sibling), and says so.
func TestRollbackRemovesWhatPointsElsewhere(t *testing.T) {
	t.Parallel()
	f := gitFixture(t)
	sib := filepath.Join(filepath.Dir(f.folder), "sibling")
	write(t, sib, map[string]string{"s.txt": "sibling\n"})
	gitIn(t, sib, "init", "-q", "-b", "main")
	gitIn(t, sib, "add", ".")
	gitIn(t, sib, "commit", "-q", "-m", "sibling")
	sibBefore := gitIn(t, sib, "for-each-ref")
	tk := f.newTask()
	if err := os.WriteFile(filepath.Join(tk.Paths.Copy, ".git", "commondir"), []byte(filepath.Join(sib, ".git")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := f.k.Status(context.Background(), tk)
	if err != nil {
		t.Fatalf("status with a commondir: %v", err)
	}
	if l := gitLines(st); !strings.Contains(l, ".git/commondir names") || !strings.Contains(l, "refused") {
		t.Fatalf("status lines do not refuse the commondir by name:\n%s", l)
	}
	rep, err := f.k.Rollback(context.Background(), tk)
	if err != nil {
		t.Fatalf("Rollback: %v", err)
	}
	if got := strings.Join(rep.Git, "\n"); !strings.Contains(got, "removed: .git/commondir names") {
		t.Errorf("rollback report does not say it removed the commondir:\n%s", got)
	}
	if _, err := os.Lstat(filepath.Join(tk.Paths.Copy, ".git", "commondir")); err == nil {
		t.Error("the commondir is still in the copy")
	}
	sameGitMeaning(t, f, tk, ".")
	if got := gitIn(t, sib, "for-each-ref"); got != sibBefore {
		t.Errorf("the sibling's refs changed:\n%s\nwere\n%s", got, sibBefore)
	}
}

// A malformed sub/.git file is a finding: status and commit go on (the
// files commit), and rollback puts the folder's sub/.git back.
func TestMalformedNestedGitFileNeverWedgesTheTask(t *testing.T) {
	t.Parallel()
	f := gitFixture(t)
	write(t, filepath.Join(f.folder, "sub"), map[string]string{"s.txt": "sub\n"})
	gitIn(t, filepath.Join(f.folder, "sub"), "init", "-q", "-b", "main")
	gitIn(t, filepath.Join(f.folder, "sub"), "add", ".")
	gitIn(t, filepath.Join(f.folder, "sub"), "commit", "-q", "-m", "sub")
	tk := f.newTask()
	st := f.sh(tk, "rm -rf sub/.git && echo 'not a gitdir line' > sub/.git && echo two >> a.txt")
	if l := gitLines(st); !strings.Contains(l, "sub/.git is not a gitdir file") {
		t.Fatalf("status does not name the malformed sub/.git:\n%s", l)
	}
	if _, err := f.k.Commit(context.Background(), tk, kernel.CommitOptions{}); err != nil {
		t.Fatalf("commit with a malformed sub/.git: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(f.folder, "a.txt")); string(b) != "one\ntwo\n" {
		t.Errorf("a.txt in the folder = %q: the files did not commit", b)
	}
	if st, err := os.Lstat(filepath.Join(f.folder, "sub", ".git")); err != nil || !st.IsDir() {
		t.Fatalf("the folder's sub/.git is no longer its repository: %v", err)
	}
	gitIn(t, filepath.Join(f.folder, "sub"), "fsck", "--strict", "--no-progress")
	st2, err := f.k.Status(context.Background(), tk)
	if err != nil {
		t.Fatalf("status after the commit: %v", err)
	}
	if !strings.Contains(gitLines(st2), "sub/.git is not a gitdir file") {
		t.Errorf("after the commit the finding is no longer shown:\n%s", gitLines(st2))
	}
	rep, err := f.k.Rollback(context.Background(), tk)
	if err != nil {
		t.Fatalf("rollback with a malformed sub/.git: %v", err)
	}
	if !strings.Contains(strings.Join(rep.Git, "\n"), "git (sub): reset to the folder's") {
		t.Errorf("rollback report = %q", rep.Git)
	}
	sameGitMeaning(t, f, tk, "sub")
	if st, err := f.k.Status(context.Background(), tk); err != nil || len(st.Git) != 0 || len(st.Effects) != 0 {
		t.Fatalf("status after rollback = %v, git %v", err, st)
	}
}

// A directory the task added whole with its own .git: approving it never
// brings its files in without their history; the commit is refused,
// naming what to do, and the folder is untouched. Without its .git the
// same files commit.
func TestApprovedNewNestedRepositoryIsRefusedClearly(t *testing.T) {
	t.Parallel()
	f := gitFixture(t)
	tk := f.newTask()
	st := f.sh(tk, "mkdir lib && cd lib && git init -q -b main && echo 'package lib' > lib.go && git add . && "+gitID+"commit -qm lib && cd .. && echo two >> a.txt")
	if l := gitLines(st); !strings.Contains(l, "git (lib): new repository") {
		t.Fatalf("status does not show the new repository:\n%s", l)
	}
	before := tree(t, f.folder)
	_, err := f.k.Commit(context.Background(), tk, kernel.CommitOptions{Policy: true, Approve: true})
	if !errors.Is(err, kernel.ErrNewRepository) || !strings.Contains(err.Error(), "rm -rf lib/.git") || !strings.Contains(err.Error(), "nothing was applied") {
		t.Fatalf("approved commit of a new repository = %v, want it refused, saying what to do", err)
	}
	if d := cmp.Diff(before, tree(t, f.folder)); d != "" {
		t.Fatalf("a refused commit changed the folder:\n%s", d)
	}
	// Not approved, the repository waits and the rest commits.
	if _, err := f.k.Commit(context.Background(), tk, kernel.CommitOptions{Policy: true}); err != nil {
		t.Fatalf("commit without approval: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(f.folder, "lib")); err == nil {
		t.Fatal("lib reached the folder without approval")
	}
	f.sh(tk, "rm -rf lib/.git")
	if _, err := f.k.Commit(context.Background(), tk, kernel.CommitOptions{Policy: true, Approve: true}); err != nil {
		t.Fatalf("commit of lib without its .git: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(f.folder, "lib", "lib.go")); string(b) != "package lib\n" {
		t.Errorf("lib/lib.go in the folder = %q", b)
	}
	gitIn(t, f.folder, "fsck", "--strict", "--no-progress")
}

// Without the refusal the approved repository's files land and its history
// does not: the folder gets lib/ without lib/.git.
func TestApprovedNewNestedRepositoryWithoutTheRefusalLosesItsHistory(t *testing.T) {
	old := kernel.SetRefuseNewRepos(false)
	t.Cleanup(func() { kernel.SetRefuseNewRepos(old) })
	f := gitFixture(t)
	tk := f.newTask()
	f.sh(tk, "mkdir lib && cd lib && git init -q -b main && echo 'package lib' > lib.go && git add . && "+gitID+"commit -qm lib")
	if _, err := f.k.Commit(context.Background(), tk, kernel.CommitOptions{Policy: true, Approve: true}); err != nil {
		t.Fatalf("commit without the refusal: %v", err)
	}
	_, errFile := os.Lstat(filepath.Join(f.folder, "lib", "lib.go"))
	_, errGit := os.Lstat(filepath.Join(f.folder, "lib", ".git"))
	if errFile != nil || errGit == nil {
		t.Fatalf("without the refusal: lib.go %v, lib/.git %v — want the files without the history", errFile, errGit)
	}
}

// The attack through kule commit and kule undo: the copy's .git/commondir
// names a sibling repository. The commit applies the task's files and
// nothing of git; the undo writes nothing into the sibling.
func TestCommitAndUndoNeverFollowACommondir(t *testing.T) {
	t.Parallel()
	f := gitFixture(t)
	gitIn(t, f.folder, "branch", "feature")
	sib := filepath.Join(filepath.Dir(f.folder), "sibling")
	write(t, sib, map[string]string{"s.txt": "sibling\n"})
	gitIn(t, sib, "init", "-q", "-b", "main")
	gitIn(t, sib, "add", ".")
	gitIn(t, sib, "commit", "-q", "-m", "sibling")
	gitIn(t, sib, "branch", "sibling-only")
	sibBefore, folderBefore := gitIn(t, sib, "for-each-ref"), gitIn(t, f.folder, "for-each-ref")
	tk := f.newTask()
	f.sh(tk, "echo two >> a.txt")
	if err := os.WriteFile(filepath.Join(tk.Paths.Copy, ".git", "commondir"), []byte(filepath.Join(sib, ".git")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := f.k.Commit(context.Background(), tk, kernel.CommitOptions{Policy: true, Approve: true, Git: kernel.GitApproval{Rewrites: true, StagedDiffers: true, Config: true}})
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if len(rep.Git) != 0 {
		t.Errorf("the commit applied git changes through a commondir: %+v", rep.Git)
	}
	if r := strings.Join(rep.GitRefused, "\n"); !strings.Contains(r, ".git/commondir names") || !strings.Contains(r, "not applied") {
		t.Errorf("the commit report does not say the git changes were refused: %q", r)
	}
	if b, _ := os.ReadFile(filepath.Join(f.folder, "a.txt")); string(b) != "one\ntwo\n" {
		t.Errorf("a.txt = %q: the files did not commit", b)
	}
	if got := gitIn(t, f.folder, "for-each-ref"); got != folderBefore {
		t.Errorf("the folder's refs changed:\n%s\nwere\n%s", got, folderBefore)
	}
	if _, err := f.k.Undo(context.Background(), tk); err != nil {
		t.Fatalf("Undo: %v", err)
	}
	if got := gitIn(t, sib, "for-each-ref"); got != sibBefore {
		t.Errorf("the sibling's refs changed:\n%s\nwere\n%s", got, sibBefore)
	}
	gitIn(t, f.folder, "fsck", "--strict", "--no-progress")
	gitIn(t, sib, "fsck", "--strict", "--no-progress")
	st, err := f.k.Status(context.Background(), tk)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(gitLines(st), ".git/commondir names") {
		t.Errorf("after commit and undo the commondir is no longer reported:\n%s", gitLines(st))
	}
}

// A repository the task made inside a directory the folder has: rollback
// removes its .git (the directory's files are the folder's again).
func TestRollbackRemovesARepositoryTheTaskMade(t *testing.T) {
	t.Parallel()
	f := gitFixture(t)
	write(t, filepath.Join(f.folder, "docs"), map[string]string{"x.md": "x\n"})
	gitIn(t, f.folder, "add", ".")
	gitIn(t, f.folder, "commit", "-q", "-m", "docs")
	tk := f.newTask()
	f.sh(tk, "cd docs && git init -q -b main")
	rep, err := f.k.Rollback(context.Background(), tk)
	if err != nil {
		t.Fatalf("Rollback: %v", err)
	}
	if got := strings.Join(rep.Git, "\n"); !strings.Contains(got, "git (docs): removed the repository the task made") {
		t.Errorf("rollback report = %q", got)
	}
	if _, err := os.Lstat(filepath.Join(tk.Paths.Copy, "docs", ".git")); err == nil {
		t.Error("docs/.git is still in the copy")
	}
	if st, err := f.k.Status(context.Background(), tk); err != nil || len(st.Git) != 0 || len(st.Effects) != 0 {
		t.Fatalf("status after rollback: %v", err)
	}
}
