package kernel_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/internal/apply"
	"github.com/kulehq/kule/kernel/internal/gitstate"
)

// The folder is a git repository; the task and the person both run the real
// git. .git is judged by meaning (kernel/internal/gitstate), the files by the engine.

const gitID = "git -c user.name=Ada -c user.email=ada@example.com "

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("git is not installed: %v", err)
		}
		t.Skip("git is not installed")
	}
	cmd := exec.Command("git", append([]string{"-c", "user.name=Ada", "-c", "user.email=ada@example.com"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+filepath.Dir(dir))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func gitFixture(t *testing.T) *fixture {
	f := newFixture(t, map[string]string{"a.txt": "one\n"})
	gitIn(t, f.folder, "init", "-q", "-b", "main")
	gitIn(t, f.folder, "add", ".")
	gitIn(t, f.folder, "commit", "-q", "-m", "first")
	return f
}

func gitLines(st *kernel.Status) string {
	var out []string
	for _, e := range st.Git {
		out = append(out, e.Lines()...)
	}
	return strings.Join(out, "\n")
}

func TestGitCommitAndUndoByMeaning(t *testing.T) {
	f := gitFixture(t)
	tk := f.newTask()
	before := gitIn(t, f.folder, "rev-parse", "main")
	st := f.sh(tk, "echo two >> a.txt && "+gitID+"commit -qam task && git branch topic")
	got := gitLines(st)
	for _, want := range []string{"git: 3 new object files", " · fast-forward · 1 commit", "git: new branch topic at ", "git: index +0 ~1 -0 (a.txt)"} {
		if !strings.Contains(got, want) {
			t.Errorf("status git lines lack %q:\n%s", want, got)
		}
	}
	// The person runs git status meanwhile: no conflict.
	gitIn(t, f.folder, "status", "--porcelain")
	rep, err := f.k.Commit(context.Background(), tk, kernel.CommitOptions{})
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if len(rep.Git) != 1 {
		t.Fatalf("commit report git = %d repositories", len(rep.Git))
	}
	if got := gitIn(t, f.folder, "log", "--format=%s", "main"); got != "task\nfirst" {
		t.Errorf("folder log = %q", got)
	}
	if got := gitIn(t, f.folder, "status", "--porcelain"); got != "" {
		t.Errorf("folder status after commit = %q, want clean", got)
	}
	gitIn(t, f.folder, "fsck", "--strict", "--no-progress")
	st, err = f.k.Status(context.Background(), tk)
	if err != nil || len(st.Git) != 0 || len(st.Effects) != 0 {
		t.Fatalf("status after commit: %v, git %q, %d file effects", err, gitLines(st), len(st.Effects))
	}
	if _, err := f.k.Undo(context.Background(), tk); err != nil {
		t.Fatalf("Undo: %v", err)
	}
	if got := gitIn(t, f.folder, "rev-parse", "main"); got != before {
		t.Errorf("after undo main = %s, want %s", got, before)
	}
	if got := gitIn(t, f.folder, "status", "--porcelain"); got != "" {
		t.Errorf("folder status after undo = %q, want clean", got)
	}
	if got := gitIn(t, f.folder, "branch", "--list", "topic"); got != "" {
		t.Errorf("topic survived the undo: %q", got)
	}
	st, err = f.k.Status(context.Background(), tk)
	if err != nil || len(st.Git) != 0 || len(st.Effects) != 0 {
		t.Fatalf("status after undo: %v, git %q, %d file effects", err, gitLines(st), len(st.Effects))
	}
}

func TestGitRewriteWaitsAndPersonsCommitConflicts(t *testing.T) {
	f := gitFixture(t)
	tk := f.newTask()
	f.sh(tk, gitID+"commit -q --amend -m reworded")
	_, err := f.k.Commit(context.Background(), tk, kernel.CommitOptions{})
	if !errors.Is(err, kernel.ErrGitWaits) || !strings.Contains(err.Error(), "history rewrite of refs/heads/main") {
		t.Fatalf("Commit of a rewrite = %v, want ErrGitWaits naming main", err)
	}
	// A person's commit on the same branch meanwhile is a conflict, even
	// once the rewrite is approved; nothing is applied.
	os.WriteFile(filepath.Join(f.folder, "b.txt"), []byte("person\n"), 0o644)
	gitIn(t, f.folder, "add", "b.txt")
	gitIn(t, f.folder, "commit", "-q", "-m", "person")
	_, err = f.k.Commit(context.Background(), tk, kernel.CommitOptions{Git: kernel.GitApproval{Rewrites: true}})
	if !errors.Is(err, gitstate.ErrConflict) || !strings.Contains(err.Error(), "main: the folder moved it") {
		t.Fatalf("Commit = %v, want a conflict naming main", err)
	}
	if got := gitIn(t, f.folder, "log", "--format=%s"); got != "person\nfirst" {
		t.Errorf("folder log = %q, want the person's history untouched", got)
	}
}

func TestGitCommandsInATaskTrustSizeAndMtime(t *testing.T) {
	f := gitFixture(t)
	tk := f.newTask()
	f.sh(tk, `test "$(git config --get core.checkStat)" = minimal && test "$(git config --get core.trustctime)" = false`)
	b, err := os.ReadFile(filepath.Join(tk.Paths.Copy, ".git", "config"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "checkStat") {
		t.Error("the copy's config was edited")
	}
}

// A git command holding the index lock in the folder makes the commit wait
// for it: nothing of the files or the repository changes, and the person's
// lock stays theirs. Once git is done, the commit goes in.
func TestGitCommitRefusesWhileAGitCommandHoldsTheLock(t *testing.T) {
	f := gitFixture(t)
	tk := f.newTask()
	f.sh(tk, "echo two >> a.txt && echo b > b.txt && git add -A && "+gitID+"commit -qm task")
	beforeFiles, beforeHead := tree(t, f.folder), gitIn(t, f.folder, "rev-parse", "main")
	lock := filepath.Join(f.folder, ".git", "index.lock")
	must(t, os.WriteFile(lock, []byte("git's own\n"), 0o644))
	_, err := f.k.Commit(context.Background(), tk, kernel.CommitOptions{})
	if !errors.Is(err, apply.ErrBusy) {
		t.Fatalf("commit while git holds index.lock = %v, want ErrBusy", err)
	}
	if b, err := os.ReadFile(lock); err != nil || string(b) != "git's own\n" {
		t.Fatalf("the commit took git's lock away: %q, %v", b, err)
	}
	var after []string
	for _, l := range tree(t, f.folder) {
		if !strings.HasPrefix(l, ".git") {
			after = append(after, l)
		}
	}
	var before []string
	for _, l := range beforeFiles {
		if !strings.HasPrefix(l, ".git") {
			before = append(before, l)
		}
	}
	if strings.Join(before, "\n") != strings.Join(after, "\n") || gitIn(t, f.folder, "rev-parse", "main") != beforeHead {
		t.Fatal("a refused commit changed the folder or its repository")
	}
	must(t, os.Remove(lock))
	if _, err := f.k.Commit(context.Background(), tk, kernel.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := gitIn(t, f.folder, "log", "--format=%s", "main"); got != "task\nfirst" {
		t.Errorf("folder log = %q", got)
	}
	gitIn(t, f.folder, "fsck", "--strict", "--no-progress")
}

// The person commits in the folder while Kule prepares the commit: the ref
// is checked again under git's lock, and the commit refuses whole.
func TestGitRefMovedWhileCommittingRefusesWhole(t *testing.T) {
	f := gitFixture(t)
	tk := f.newTask()
	f.sh(tk, "echo two >> a.txt && "+gitID+"commit -qam task")
	atStep(t, "commit.planned", func() {
		must(t, os.WriteFile(filepath.Join(f.folder, "c.txt"), []byte("mine\n"), 0o644))
		gitIn(t, f.folder, "add", "c.txt")
		gitIn(t, f.folder, "commit", "-q", "-m", "person")
	})
	_, err := f.k.Commit(context.Background(), tk, kernel.CommitOptions{})
	if !errors.Is(err, apply.ErrConflict) {
		t.Fatalf("commit after the person moved main = %v, want a conflict", err)
	}
	if b, _ := os.ReadFile(filepath.Join(f.folder, "a.txt")); string(b) != "one\n" {
		t.Fatalf("a.txt = %q: the files went in without the repository", b)
	}
	if got := gitIn(t, f.folder, "log", "--format=%s", "main"); got != "person\nfirst" {
		t.Errorf("folder log = %q, want the person's commit kept", got)
	}
	if _, err := f.k.Undo(context.Background(), tk); !errors.Is(err, kernel.ErrNothingToUndo) {
		t.Fatalf("undo after a refused commit = %v", err)
	}
	gitIn(t, f.folder, "fsck", "--strict", "--no-progress")
}
