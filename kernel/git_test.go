package kernel_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/gitstate"
)

// The folder is a git repository; the task and the person both run the real
// git. .git is judged by meaning (kernel/gitstate), the files by the engine.

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
	rep, err := f.k.Commit(tk, kernel.CommitOptions{})
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
	st, err = f.k.Status(tk)
	if err != nil || len(st.Git) != 0 || len(st.Effects) != 0 {
		t.Fatalf("status after commit: %v, git %q, %d file effects", err, gitLines(st), len(st.Effects))
	}
	if _, err := f.k.Undo(tk); err != nil {
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
	st, err = f.k.Status(tk)
	if err != nil || len(st.Git) != 0 || len(st.Effects) != 0 {
		t.Fatalf("status after undo: %v, git %q, %d file effects", err, gitLines(st), len(st.Effects))
	}
}

func TestGitRewriteWaitsAndPersonsCommitConflicts(t *testing.T) {
	f := gitFixture(t)
	tk := f.newTask()
	f.sh(tk, gitID+"commit -q --amend -m reworded")
	_, err := f.k.Commit(tk, kernel.CommitOptions{})
	if !errors.Is(err, kernel.ErrGitWaits) || !strings.Contains(err.Error(), "history rewrite of refs/heads/main") {
		t.Fatalf("Commit of a rewrite = %v, want ErrGitWaits naming main", err)
	}
	// A person's commit on the same branch meanwhile is a conflict, even
	// once the rewrite is approved; nothing is applied.
	os.WriteFile(filepath.Join(f.folder, "b.txt"), []byte("person\n"), 0o644)
	gitIn(t, f.folder, "add", "b.txt")
	gitIn(t, f.folder, "commit", "-q", "-m", "person")
	_, err = f.k.Commit(tk, kernel.CommitOptions{Git: kernel.GitApproval{Rewrites: true}})
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
