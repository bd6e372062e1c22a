package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// kule exec --reveal ~/.ssh is refused, nothing runs, and kule status (and
// --json) shows the refusal from the task's sandbox.jsonl.
func TestStatusShowsTheSandboxRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	person, folder := filepath.Join(dir, "person"), filepath.Join(dir, "folder")
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(person, ".ssh"), 0o700))
	must(os.WriteFile(filepath.Join(person, ".ssh", "id_ed25519"), []byte("KEY"), 0o600))
	must(os.MkdirAll(folder, 0o755))
	must(os.WriteFile(filepath.Join(folder, "a.txt"), []byte("a\n"), 0o644))
	kule := func(args ...string) (string, error) {
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), "KULE_AS_CLI=1", "KULE_HOME="+filepath.Join(dir, "home"), "HOME="+person)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := kule("new", folder); err != nil {
		t.Fatalf("new: %v\n%s", err, out)
	}
	out, _ := kule("list")
	id := strings.Fields(out)[0]
	ssh := filepath.Join(person, ".ssh")
	if out, err := kule("exec", id, "--reveal", ssh, "--", "sh", "-c", "echo ran > ran.txt"); err == nil || !strings.Contains(out, "would open a hidden path") {
		t.Fatalf("exec --reveal ~/.ssh: %v\n%s", err, out)
	}
	out, err := kule("status", id)
	if err != nil || !strings.Contains(out, "sandbox: ") || !strings.Contains(out, "refused --reveal "+ssh+" (sh -c echo ran > ran.txt)") {
		t.Fatalf("status: %v\n%s", err, out)
	}
	out, err = kule("status", id, "--json")
	var m struct {
		Sandbox []struct{ Kind, What string }
	}
	if err != nil || json.Unmarshal([]byte(out), &m) != nil || len(m.Sandbox) != 1 || m.Sandbox[0].What != "--reveal "+ssh {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
}
