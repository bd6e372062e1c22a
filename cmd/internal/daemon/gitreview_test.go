package daemon

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kulehq/kule/cmd/internal/daemon/client"
)

// gitIn runs git in dir with a fixed author, as a person's git would.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=Kule Test", "-c", "user.email=test@kule.invalid", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// Review shows what a task did to the folder's repository, each part with
// the kernel's verdict, and a commit from the app applies only what was
// shown as passing: the task's own `git commit` of a go.mod change waits,
// and the real branch does not move.
func TestReviewShowsGitWithItsVerdicts(t *testing.T) {
	d := startDaemon(t, Config{})
	ctx := context.Background()
	c := client.New(d.home)
	folder := sampleFolder(t)
	must(t, os.WriteFile(filepath.Join(folder, "go.mod"), []byte("module a\n"), 0o644))
	gitIn(t, folder, "init", "-q")
	gitIn(t, folder, "add", "-A")
	gitIn(t, folder, "commit", "-qm", "start")
	head := gitIn(t, folder, "rev-parse", "HEAD")

	var made struct{ Task TaskView }
	must(t, c.Do(ctx, "POST", "/api/tasks", map[string]string{"folder": folder}, &made))
	var step Step
	must(t, c.Do(ctx, "POST", "/api/tasks/"+made.Task.ID+"/exec", ExecRequest{Command: "echo 'module b' > go.mod && git -c user.name=a -c user.email=a@b.invalid commit -qam innocent"}, &step))

	var review struct {
		Git []GitView `json:"git"`
	}
	must(t, c.Do(ctx, "GET", "/api/tasks/"+made.Task.ID, nil, &review))
	var branch *GitView
	for i, g := range review.Git {
		if strings.Contains(g.Line, "main") && g.Verdict != "" {
			branch = &review.Git[i]
		}
	}
	if branch == nil {
		t.Fatalf("Review does not show the branch the task moved, with a verdict: %+v", review.Git)
	}
	if branch.Verdict != "ask" || !strings.Contains(branch.Rule, "manifests-and-lockfiles") {
		t.Fatalf("the branch brings a go.mod change: Review shows %+v, want it waiting on manifests-and-lockfiles", *branch)
	}

	var res struct{ Applied []string }
	must(t, c.Do(ctx, "POST", "/api/tasks/"+made.Task.ID+"/commit", CommitRequest{ApproveAll: true}, &res))
	if now := gitIn(t, folder, "rev-parse", "HEAD"); now != head {
		t.Fatalf("a commit from the app moved the real branch to %s (from %s), though Review showed it waiting for kule commit --approve", now, head)
	}
	gitIn(t, folder, "fsck", "--no-progress")
}
