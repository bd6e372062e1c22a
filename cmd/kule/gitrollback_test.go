package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// kule rollback says what of the copy's .git it reset, and the copy's
// branch is the folder's again.
func TestRollbackPrintsWhatOfGitItReset(t *testing.T) {
	t.Setenv("KULE_HOME", t.TempDir())
	folder := t.TempDir()
	writeFile(t, filepath.Join(folder, "a.txt"), "one\n")
	gitRun(t, folder, "init", "-q", "-b", "main")
	gitRun(t, folder, "add", ".")
	gitRun(t, folder, "commit", "-q", "-m", "first")
	var made struct{ ID, Copy string }
	if err := json.Unmarshal([]byte(mustKule(t, "new", "--json", folder)), &made); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(made.Copy, "a.txt"), "one\ntwo\n")
	gitRun(t, made.Copy, "commit", "-q", "-am", "task")
	out := mustKule(t, "rollback", made.ID)
	for _, want := range []string{"git: reset to the folder's: refs main; index (1 entry)", "new object files stay", "rolled back 1 change · the copy matches"} {
		if !strings.Contains(out, want) {
			t.Errorf("rollback output lacks %q:\n%s", want, out)
		}
	}
	if got, want := gitRun(t, made.Copy, "rev-parse", "main"), gitRun(t, folder, "rev-parse", "main"); got != want {
		t.Errorf("the copy's main = %s after rollback, the folder's %s", got, want)
	}
}
