package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// resumeAgent is a scripted ACP agent (the test binary with
// KULE_TEST_ACP_AGENT set) that can load sessions. It logs what it is sent
// to KULE_TEST_ACP_LOG, one line a message: "new", "load ID", "prompt
// TEXT" (as JSON), "asked". A prompt that is not a resume writes notes.txt
// in a completed step, starts a command and asks to run it, and waits for
// the answer forever: the turn Kule is killed in. A resume ends its turn.
func resumeAgent(string) int {
	logf, err := os.OpenFile(os.Getenv("KULE_TEST_ACP_LOG"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return 3
	}
	logLine := func(s string) { fmt.Fprintln(logf, s); logf.Sync() }
	in := bufio.NewReader(os.Stdin)
	send := func(v map[string]any) {
		v["jsonrpc"] = "2.0"
		b, _ := json.Marshal(v)
		os.Stdout.Write(append(b, '\n'))
	}
	update := func(u map[string]any) {
		send(map[string]any{"method": "session/update", "params": map[string]any{"sessionId": "sess-1", "update": u}})
	}
	cwd := ""
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return 0
		}
		var m map[string]any
		if json.Unmarshal(line, &m) != nil {
			return 9
		}
		id, method := m["id"], m["method"]
		params, _ := m["params"].(map[string]any)
		switch method {
		case "initialize":
			send(map[string]any{"id": id, "result": map[string]any{"protocolVersion": 1, "agentInfo": map[string]any{"name": "resume-peer", "version": "1.0"},
				"agentCapabilities": map[string]any{"loadSession": true}}})
		case "session/new":
			cwd, _ = params["cwd"].(string)
			logLine("new")
			send(map[string]any{"id": id, "result": map[string]any{"sessionId": "sess-1"}})
		case "session/load":
			cwd, _ = params["cwd"].(string)
			logLine(fmt.Sprint("load ", params["sessionId"]))
			send(map[string]any{"id": id, "result": map[string]any{}})
		case "session/prompt":
			var text strings.Builder
			for _, b := range params["prompt"].([]any) {
				if s, ok := b.(map[string]any)["text"].(string); ok {
					text.WriteString(s)
				}
			}
			q, _ := json.Marshal(text.String())
			logLine("prompt " + string(q))
			if strings.Contains(text.String(), "was interrupted before it ended") {
				send(map[string]any{"id": id, "result": map[string]any{"stopReason": "end_turn"}})
				continue
			}
			update(map[string]any{"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "AGENT-TITLE write notes", "kind": "edit", "status": "in_progress"})
			os.WriteFile(filepath.Join(cwd, "notes.txt"), []byte("half done\n"), 0o644)
			update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"})
			update(map[string]any{"sessionUpdate": "tool_call", "toolCallId": "t2", "title": "AGENT-TITLE run the tests", "kind": "execute", "status": "pending"})
			send(map[string]any{"id": 1000, "method": "session/request_permission", "params": map[string]any{"sessionId": "sess-1",
				"toolCall": map[string]any{"toolCallId": "t2", "title": "AGENT-TITLE run the tests", "kind": "execute"},
				"options":  []any{map[string]any{"optionId": "yes", "name": "Allow", "kind": "allow_once"}}}})
			logLine("asked")
			// No answer comes: Kule is killed while the question waits.
		default:
			if id != nil && method != nil {
				send(map[string]any{"id": id, "error": map[string]any{"code": -32601, "message": "no such method"}})
			}
		}
	}
}

// TestResumeAfterKill: kule run is killed with SIGKILL in the middle of a
// turn (a step done, a permission question waiting); kule status says the
// run was interrupted and waits; kule run --resume starts the same agent,
// which receives session/load with the same session id, then a prompt
// whose notes say what it was asked, its last steps as Kule saw them and
// the question that waited — never the agent's own titles.
func TestResumeAfterKill(t *testing.T) {
	home, id := newTaskCLI(t)
	logPath := filepath.Join(t.TempDir(), "agent.log")
	writeFile(t, filepath.Join(home, "agents.toml"), fmt.Sprintf("[[agent]]\nname = \"peer\"\ncommand = [%q, \"-test.run=^$\"]\nenv = { KULE_TEST_ACP_AGENT = \"resume\", KULE_TEST_ACP_LOG = %q }\n", os.Args[0], logPath))
	mustKule(t, "agents", "approve", "peer")

	cmd := exec.Command(os.Args[0], "run", id, "--agent", "peer", "--no-sandbox", "--ask", "port the parser to the new API")
	cmd.Env = append(os.Environ(), "KULE_AS_CLI=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe() // open, never written: the question waits
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	readLog := func() string { b, _ := os.ReadFile(logPath); return string(b) }
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(readLog(), "asked") {
		if time.Now().After(deadline) {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			cmd.Wait()
			t.Fatalf("the agent never asked:\n%s\n%s", readLog(), out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The question reached the terminal, so its progress was written
	// before it (the record is written as the question is put): wait for
	// the memory to hold it, then kill.
	pending := func() int {
		var rec struct {
			Run struct{ Progress struct{ Pending []any } }
		}
		json.Unmarshal([]byte(mustKule(t, "memory", "show", "1", "--json")), &rec)
		return len(rec.Run.Progress.Pending)
	}
	for pending() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the waiting question never reached the memory:\n%s", mustKule(t, "memory", "show", "1", "--json"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	cmd.Wait()

	st := mustKule(t, "status", id)
	if !strings.Contains(st, "memory: run 1 (agent on task "+id) || !strings.Contains(st, "kule run "+id+" --resume resumes it") {
		t.Fatalf("kule status after a kill -9:\n%s", st)
	}
	if st := mustKule(t, "status", id); !strings.Contains(st, "waits to be resumed: kule run "+id+" --resume") {
		t.Fatalf("the second kule status forgot the interrupted run:\n%s", st)
	}

	res := mustKule(t, "run", id, "--resume", "--no-sandbox")
	if !strings.Contains(res, "resuming run 1 (peer") || !strings.Contains(res, "continuing its session sess-1") {
		t.Errorf("kule run --resume:\n%s", res)
	}
	lines := strings.Split(strings.TrimSpace(readLog()), "\n")
	last := lines[len(lines)-2:]
	if last[0] != "load sess-1" || !strings.HasPrefix(last[1], "prompt ") {
		t.Fatalf("the agent was sent, after the kill:\n%s", strings.Join(lines, "\n"))
	}
	var prompt string
	json.Unmarshal([]byte(strings.TrimPrefix(last[1], "prompt ")), &prompt)
	for _, want := range []string{"was interrupted before it ended (run 1", `it had been asked: "port the parser to the new API"`,
		"1) edit, completed (changed: add notes.txt)", "2) execute, unfinished", "1 permission questions were waiting for an answer and were never answered (kinds: execute)"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("the resumed prompt lacks %q:\n%s", want, prompt)
		}
	}
	if strings.Contains(prompt, "AGENT-TITLE") {
		t.Errorf("the agent's own words reached Kule's notes:\n%s", prompt)
	}
	if st := mustKule(t, "status", id); strings.Contains(st, "interrupted") {
		t.Errorf("a resumed run still waits:\n%s", st)
	}
	var rec struct{ Run struct{ ResumedBy int64 } }
	if err := json.Unmarshal([]byte(mustKule(t, "memory", "show", "1", "--json")), &rec); err != nil || rec.Run.ResumedBy != 2 {
		t.Errorf("run 1 is not marked resumed by run 2: %+v %v", rec, err)
	}
	if out, err := kuleCLI(t, "run", id, "--resume", "--no-sandbox"); err == nil || !strings.Contains(out, "no interrupted run that waits") {
		t.Errorf("a second --resume: %v\n%s", err, out)
	}
}
