package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kulehq/kule/kernel"
)

// TestMemoryCLI: kule exec runs are remembered; kule memory lists, finds,
// shows, exports and forgets them; kule run recalls the folder's failures
// before it starts (and --no-recall does not), with the prompt from a file
// or stdin.
func TestMemoryCLI(t *testing.T) {
	home, id := newTaskCLI(t)
	if out, err := kuleCLI(t, "exec", id, "--no-sandbox", "--", "sh", "-c", "exit 3"); err == nil {
		t.Fatalf("the failing command succeeded:\n%s", out)
	}
	mustKule(t, "exec", id, "--no-sandbox", "--", "sh", "-c", "echo fixed > a.txt")
	out := mustKule(t, "memory", "list")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || !strings.Contains(lines[1], "failed (3)") || !strings.Contains(lines[0], "done (0)") {
		t.Fatalf("kule memory list:\n%s", out)
	}
	var runs []struct {
		ID     int64
		Prompt string
	}
	if err := json.Unmarshal([]byte(mustKule(t, "memory", "list", "--json")), &runs); err != nil || len(runs) != 2 {
		t.Fatalf("kule memory list --json: %v", err)
	}
	if out := mustKule(t, "memory", "search", "fixed"); !strings.Contains(out, "echo fixed") || strings.Contains(out, "exit 3") {
		t.Errorf("kule memory search fixed:\n%s", out)
	}
	out = mustKule(t, "memory", "show", jsonID(runs[1].ID))
	for _, want := range []string{"how:         failed (3)", "prompt:\n  sh -c exit 3", "prevented by run " + jsonID(runs[0].ID) + " (valid)"} {
		if !strings.Contains(out, want) {
			t.Errorf("kule memory show lacks %q:\n%s", want, out)
		}
	}
	if out := mustKule(t, "memory", "export"); strings.Count(out, "\n") != 2 {
		t.Errorf("kule memory export:\n%s", out)
	}

	// kule run recalls the failure and its fix before it starts; the
	// agent here is not an ACP agent, so the run fails once recall is said.
	writeFile(t, filepath.Join(home, "agents.toml"), "[[agent]]\nname = \"touch\"\ncommand = [\"/usr/bin/true\"]\n")
	mustKule(t, "agents", "approve", "touch")
	prompt := filepath.Join(t.TempDir(), "prompt.md")
	writeFile(t, prompt, "make a.txt say hello\n")
	out, _ = kuleCLI(t, "run", id, "--agent", "touch", "--no-sandbox", "--prompt-file", prompt)
	if !strings.Contains(out, "memory: 1 note from earlier runs goes to the agent after your prompt, as Kule's data (--no-recall leaves it out)") || !strings.Contains(out, `"sh -c exit 3" failed: exit status 3; fixed later by "sh -c echo fixed > a.txt"`) {
		t.Errorf("kule run --prompt-file: no recall:\n%s", out)
	}
	out, _ = kuleCLI(t, "run", id, "--agent", "touch", "--no-sandbox", "--no-recall", "x")
	if strings.Contains(out, "from earlier runs go") {
		t.Errorf("kule run --no-recall recalled:\n%s", out)
	}
	cmd := exec.Command(os.Args[0], "run", id, "--agent", "touch", "--no-sandbox", "-")
	cmd.Env = append(os.Environ(), "KULE_AS_CLI=1")
	cmd.Stdin = strings.NewReader("")
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	if err := cmd.Run(); err == nil || !strings.Contains(b.String(), "the prompt is empty") {
		t.Errorf("kule run - with nothing on stdin: %v\n%s", err, b.String())
	}

	out = mustKule(t, "memory", "forget", "--task", id)
	if !strings.Contains(out, "forgot task "+id+": 2 runs, 1 failure, 1 fix link, 0 notes") {
		t.Errorf("kule memory forget --task:\n%s", out)
	}
	if out, err := kuleCLI(t, "memory", "forget", "1", "--task", id); err == nil || !strings.Contains(out, "nothing was forgotten") {
		t.Errorf("forget with both an id and --task: %v\n%s", err, out)
	}
	if out, err := kuleCLI(t, "memory", "show", jsonID(runs[0].ID)); err == nil || !strings.Contains(out, "no such memory item") {
		t.Errorf("a forgotten run shows: %v\n%s", err, out)
	}
}

func jsonID(id int64) string { b, _ := json.Marshal(id); return string(b) }

// TestInterruptedRunFoundAtNextStart: a kule exec killed with SIGKILL
// leaves its run marked running; the next kule status finds it, says so,
// and marks it interrupted (once).
func TestInterruptedRunFoundAtNextStart(t *testing.T) {
	home, id := newTaskCLI(t)
	cmd := exec.Command(os.Args[0], "exec", id, "--no-sandbox", "--", "sh", "-c", "touch started && exec sleep 120")
	cmd.Env = append(os.Environ(), "KULE_AS_CLI=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tk := loadTask(t, home, id)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(tk.Paths.Copy, "started")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Still running: kule status leaves it alone (its task is held).
	if out := mustKule(t, "status", id); strings.Contains(out, "interrupted") {
		t.Fatalf("a running run was said interrupted:\n%s", out)
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	cmd.Wait()
	out := mustKule(t, "status", id)
	if !strings.Contains(out, "memory: run 1 (exec on task "+id) || !strings.Contains(out, "was interrupted before it ended") {
		t.Fatalf("kule status after a kill -9:\n%s", out)
	}
	if out := mustKule(t, "status", id); strings.Contains(out, "interrupted") {
		t.Fatalf("said twice:\n%s", out)
	}
	if out := mustKule(t, "memory", "list"); !strings.Contains(out, "interrupted") {
		t.Fatalf("kule memory list:\n%s", out)
	}
}

// TestResumeNote: the agent is told its task's last turn was interrupted,
// and what it was asked; never when the prompt was untrusted.
func TestResumeNote(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)
	runs := []*kernel.MemoryRecord{
		{Task: "other", Kind: "agent", Prompt: "elsewhere", Trust: "trusted", Started: at},
		{Task: "t1", Kind: "exec", Prompt: "make", Trust: "trusted", Started: at},
		{Task: "t1", Kind: "agent", Prompt: "port the parser", Trust: "trusted", Started: at},
	}
	if got := resumeNote(runs, "t1"); !strings.Contains(got, `interrupted before it ended (run 0, started 2026-01-02 03:04 UTC`) || !strings.Contains(got, `"port the parser"`) {
		t.Errorf("resume note: %q", got)
	}
	runs[2].Trust = kernel.MemoryUntrusted
	if got := resumeNote(runs, "t1"); got != "" {
		t.Errorf("an untrusted prompt reached the notes: %q", got)
	}
}
