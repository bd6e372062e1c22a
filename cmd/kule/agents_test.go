package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kulehq/kule/internal/npmtest"
)

// kuleCLI runs the CLI in a child process, as a person runs kule: the test
// binary stands in for it (and is the sandbox's helper too, as kule is).
func kuleCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "KULE_AS_CLI=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// TestRunAgentThroughCLI drives `kule run` end to end: a real ACP agent built
// on the ACP TypeScript SDK writes a file through Kule and runs a command;
// the change shows in `kule status` and `kule steps`, and the folder stays
// untouched.
func TestRunAgentThroughCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end; -short skips it")
	}
	sdk := npmtest.Package(t, "@agentclientprotocol/sdk", "1.9.0")
	b, err := os.ReadFile("../../kernel/internal/acp/testdata/sdk/writer-agent.mjs")
	if err != nil {
		t.Fatal(err)
	}
	agent := filepath.Join(sdk, "writer-agent.mjs")
	if err := os.WriteFile(agent, b, 0o644); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	t.Setenv("KULE_HOME", filepath.Join(home, "kule"))
	t.Setenv("HOME", home)
	t.Setenv("XDG_DATA_HOME", filepath.Join(home, "data"))
	folder := filepath.Join(home, "folder")
	os.MkdirAll(folder, 0o755)
	os.WriteFile(filepath.Join(folder, "a.txt"), []byte("a\n"), 0o644)

	out, err := kuleCLI(t, "new", folder, "--json")
	if err != nil {
		t.Fatalf("kule new: %v\n%s", err, out)
	}
	var nt struct{ ID string }
	if err := json.Unmarshal([]byte(out), &nt); err != nil {
		t.Fatalf("kule new --json: %q", out)
	}
	profile := "[[agent]]\nname = \"writer\"\ncommand = [\"node\", " + strconvQuote(agent) + "]\n"
	os.MkdirAll(filepath.Join(home, "kule"), 0o700)
	if err := os.WriteFile(filepath.Join(home, "kule", "agents.toml"), []byte(profile), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := kuleCLI(t, "run", nt.ID, "--agent", "writer", "hi"); err == nil || !strings.Contains(out, "kule agents approve writer") {
		t.Fatalf("an unapproved profile ran: %v\n%s", err, out)
	}
	if out, err := kuleCLI(t, "agents"); err != nil || !strings.Contains(out, "waits for approval") {
		t.Errorf("kule agents: %v\n%s", err, out)
	}
	if out, err := kuleCLI(t, "agents", "approve", "writer"); err != nil {
		t.Fatalf("approve: %v\n%s", err, out)
	}
	out, err = kuleCLI(t, "run", nt.ID, "--agent", "writer", "hi")
	if err != nil {
		t.Fatalf("kule run: %v\n%s", err, out)
	}
	for _, want := range []string{"▸ [edit] Write hello.txt", "+ hello.txt", "▸ [execute] Run a command", "+ cmd.txt", "output=done outside=refused -32602", "2 file changes", "turn ended: end turn"} {
		if !strings.Contains(out, want) {
			t.Errorf("kule run's output lacks %q:\n%s", want, out)
		}
	}
	if out, err := kuleCLI(t, "status", nt.ID); err != nil || !strings.Contains(out, "+ hello.txt") || !strings.Contains(out, "+ cmd.txt") {
		t.Errorf("kule status: %v\n%s", err, out)
	}
	out, err = kuleCLI(t, "steps", nt.ID, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var steps []struct {
		N       int
		Title   string
		Effects []struct{ Kind, Path string }
	}
	if err := json.Unmarshal([]byte(out), &steps); err != nil || len(steps) != 2 {
		t.Fatalf("kule steps --json: %v\n%s", err, out)
	}
	if steps[0].N != 1 || len(steps[0].Effects) != 1 || steps[0].Effects[0].Path != "hello.txt" || steps[1].Effects[0].Path != "cmd.txt" {
		t.Errorf("steps %+v", steps)
	}
	// A second run numbers its steps after the first's.
	if out, err := kuleCLI(t, "run", nt.ID, "--agent", "writer", "again"); err != nil {
		t.Fatalf("second run: %v\n%s", err, out)
	}
	out, _ = kuleCLI(t, "steps", nt.ID)
	if !strings.Contains(out, "  4 completed") {
		t.Errorf("kule steps after two runs:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(folder, "hello.txt")); err == nil {
		t.Errorf("the agent's file reached the folder before a commit")
	}
	// A profile that changes waits for approval again.
	os.WriteFile(filepath.Join(home, "kule", "agents.toml"), []byte(profile+"hosts = [\"example.com\"]\n"), 0o600)
	if out, err := kuleCLI(t, "run", nt.ID, "--agent", "writer", "hi"); err == nil || !strings.Contains(out, "changed since it was approved") {
		t.Errorf("a changed profile ran: %v\n%s", err, out)
	}
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// TestAgentsTry: kule agents try runs a profile once in an empty folder,
// unapproved and opened no wider than its command, and says what it reached.
func TestAgentsTry(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end; -short skips it")
	}
	sdk := npmtest.Package(t, "@agentclientprotocol/sdk", "1.9.0")
	home := t.TempDir()
	t.Setenv("KULE_HOME", filepath.Join(home, "kule"))
	t.Setenv("HOME", home)
	t.Setenv("XDG_DATA_HOME", filepath.Join(home, "data"))
	agent := filepath.Join(sdk, "node_modules", "@agentclientprotocol/sdk", "dist", "examples", "agent.js")
	os.MkdirAll(filepath.Join(home, "kule"), 0o700)
	profile := "[[agent]]\nname = \"example\"\ncommand = [\"node\", " + strconvQuote(agent) + "]\nstate = [\".example\"]\n"
	os.WriteFile(filepath.Join(home, "kule", "agents.toml"), []byte(profile), 0o600)
	out, err := kuleCLI(t, "agents", "try", "example")
	if err != nil {
		t.Fatalf("kule agents try: %v\n%s", err, out)
	}
	for _, want := range []string{"trying example once in an empty folder", "turn ended: end turn", "It reached for no host.", "cannot be listed on Linux"} {
		if !strings.Contains(out, want) {
			t.Errorf("kule agents try's output lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(home, ".example")); err == nil {
		t.Error("the trial opened the profile's state")
	}
	if out, _ := kuleCLI(t, "list"); strings.Contains(out, "kule-try-") {
		t.Errorf("the trial's task was left behind:\n%s", out)
	}
	if out, err := kuleCLI(t, "agents", "try", "nosuch"); err == nil || !strings.Contains(out, "no such agent") {
		t.Errorf("an unknown agent: %v\n%s", err, out)
	}
}
