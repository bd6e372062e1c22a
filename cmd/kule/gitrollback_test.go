package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func gitCLI(t *testing.T, dir string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("git is not installed: %v", err)
		}
		t.Skip("git is not installed")
	}
	cmd := exec.Command("git", append([]string{"-c", "user.name=Ada", "-c", "user.email=ada@example.com"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// kule rollback says what of the copy's .git it reset, and the copy's
// branch is the folder's again.
func TestRollbackPrintsWhatOfGitItReset(t *testing.T) {
	t.Setenv("KULE_HOME", t.TempDir())
	folder := t.TempDir()
	writeFile(t, filepath.Join(folder, "a.txt"), "one\n")
	gitCLI(t, folder, "init", "-q", "-b", "main")
	gitCLI(t, folder, "add", ".")
	gitCLI(t, folder, "commit", "-q", "-m", "first")
	var made struct{ ID, Copy string }
	if err := json.Unmarshal([]byte(mustKule(t, "new", "--json", folder)), &made); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(made.Copy, "a.txt"), "one\ntwo\n")
	gitCLI(t, made.Copy, "commit", "-q", "-am", "task")
	out := mustKule(t, "rollback", made.ID)
	for _, want := range []string{"git: reset to the folder's: refs main; index (1 entry)", "new object files stay", "rolled back 1 changes · the copy matches"} {
		if !strings.Contains(out, want) {
			t.Errorf("rollback output lacks %q:\n%s", want, out)
		}
	}
	if got, want := gitCLI(t, made.Copy, "rev-parse", "main"), gitCLI(t, folder, "rev-parse", "main"); got != want {
		t.Errorf("the copy's main = %s after rollback, the folder's %s", got, want)
	}
}
