package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kulehq/kule/plugins/transport/slack/slacktest"
)

// chatPeer is a scripted ACP agent (KULE_CHAT_PEER=ask): the test binary,
// started by the daemon in the task's sandbox. On a prompt it opens a tool
// call, asks permission to write notes/release.md, writes it through fs/*
// only if allowed, and says what it did.
func chatPeer() int {
	in := bufio.NewReader(os.Stdin)
	next := 100
	send := func(v map[string]any) {
		v["jsonrpc"] = "2.0"
		b, _ := json.Marshal(v)
		os.Stdout.Write(append(b, '\n'))
	}
	read := func() map[string]any {
		line, err := in.ReadBytes('\n')
		if err != nil {
			os.Exit(0)
		}
		var m map[string]any
		json.Unmarshal(line, &m)
		return m
	}
	request := func(method string, params any) map[string]any {
		id := next
		next++
		send(map[string]any{"id": id, "method": method, "params": params})
		for {
			if m := read(); m["method"] == nil && m["id"] == float64(id) {
				return m
			}
		}
	}
	update := func(u map[string]any) {
		send(map[string]any{"method": "session/update", "params": map[string]any{"sessionId": "s1", "update": u}})
	}
	cwd := ""
	for {
		m := read()
		id := m["id"]
		params, _ := m["params"].(map[string]any)
		switch m["method"] {
		case "initialize":
			send(map[string]any{"id": id, "result": map[string]any{"protocolVersion": 1, "agentInfo": map[string]any{"name": "peer", "version": "1.0"}, "agentCapabilities": map[string]any{}}})
		case "session/new":
			cwd, _ = params["cwd"].(string)
			send(map[string]any{"id": id, "result": map[string]any{"sessionId": "s1"}})
		case "session/cancel":
		case "session/prompt":
			file := filepath.Join(cwd, "notes", "release.md")
			tc := map[string]any{"toolCallId": "w1", "title": "Write notes/release.md", "kind": "edit", "status": "pending", "locations": []any{map[string]any{"path": file}}}
			update(map[string]any{"sessionUpdate": "tool_call", "toolCallId": "w1", "title": "Write notes/release.md", "kind": "edit", "status": "pending", "locations": []any{map[string]any{"path": file}}})
			ans := request("session/request_permission", map[string]any{"sessionId": "s1", "toolCall": tc, "options": []any{
				map[string]any{"optionId": "yes", "name": "Allow", "kind": "allow_once"},
				map[string]any{"optionId": "no", "name": "Reject", "kind": "reject_once"},
			}})
			res, _ := ans["result"].(map[string]any)
			out, _ := res["outcome"].(map[string]any)
			text := "Not allowed; going on without it."
			if out["optionId"] == "yes" {
				request("fs/write_text_file", map[string]any{"sessionId": "s1", "path": file, "content": "# From the agent\n"})
				update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "w1", "status": "completed"})
				text = "Wrote it."
			}
			update(map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": text}})
			send(map[string]any{"id": id, "result": map[string]any{"stopReason": "end_turn"}})
		default:
			if id != nil {
				send(map[string]any{"id": id, "error": map[string]any{"code": -32601, "message": "no such method"}})
			}
		}
	}
}

// waitPost waits for a post of the stand-in that match accepts.
func waitPost(t *testing.T, srv *slacktest.Server, what string, logs *syncBuffer, match func(slacktest.Post) bool) slacktest.Post {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) { // polling; the deadline only ends a broken run
		for _, p := range srv.Posts() {
			if match(p) {
				return p
			}
		}
	}
	var texts []string
	for _, p := range srv.Posts() {
		texts = append(texts, p.Text)
	}
	t.Fatalf("waited 60 s for %s; the channel got:\n%s\n--- daemon:\n%s", what, strings.Join(texts, "\n---\n"), logs.String())
	return slacktest.Post{}
}

func posted(s string) func(slacktest.Post) bool {
	return func(p slacktest.Post) bool { return strings.Contains(p.Text, s) }
}

// TestChatLaunchApproveThroughSlackPlugin is the cockpit end to end: `kule
// daemon` runs the Slack plugin out of process behind its proxy; a
// top-level message from the operator in the stand-in's channel launches a
// task whose scripted ACP agent runs in the sandbox and asks to write a
// file; the question is posted in the task's thread with buttons; a
// stranger's press is refused and the question still waits; the operator's
// press approves it, the agent writes, and the history records who answered.
func TestChatLaunchApproveThroughSlackPlugin(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end; -short skips it")
	}
	home, tc, srv := slackHome(t)
	// The agent is this test binary; /tmp is the task's own in the sandbox,
	// so it is copied where the sandbox still shows it.
	bin, err := os.MkdirTemp("/var/tmp", "kule-chat-peer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(bin) })
	peer := filepath.Join(bin, "peer")
	copyFile(t, os.Args[0], peer)
	folder := filepath.Join(bin, "notes")
	if err := os.MkdirAll(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(folder, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	profile := "[[agent]]\nname = \"peer\"\ncommand = [" + strconv.Quote(peer) + "]\nenv = { KULE_CHAT_PEER = \"ask\" }\n"
	if err := os.WriteFile(filepath.Join(home, "agents.toml"), []byte(profile), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := runKule(t, "", "agents", "approve", "peer"); err != nil {
		t.Fatalf("approve the agent: %v\n%s", err, out)
	}
	if out, err := runKule(t, "", "transport", "add", "slack", "--keep-tokens", "--channel", tc.Channel, "--operator", "U0PERATOR", "--api", tc.API, "--agent", "peer"); err != nil {
		t.Fatalf("transport add: %v\n%s", err, out)
	}
	cmd := exec.Command(os.Args[0], "daemon", "--idle", "-1s")
	cmd.Env = append(os.Environ(), "KULE_AS_CLI=1", "KULE_HOME="+home, "DBUS_SESSION_BUS_ADDRESS=")
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	for deadline := time.Now().Add(60 * time.Second); srv.Conns() == 0; time.Sleep(20 * time.Millisecond) { // polling; the deadline only ends a broken run
		if time.Now().After(deadline) {
			t.Fatalf("the daemon's plugin never connected\n%s", logs.String())
		}
	}

	const root = "1700000001.000100"
	if _, err := srv.Message("U0PERATOR", tc.Channel, "channel", folder+": write the notes", root, ""); err != nil {
		t.Fatal(err)
	}
	started := waitPost(t, srv, "the task's start in its thread", logs, posted("starts on it"))
	if started.ThreadTS != root {
		t.Fatalf("the start was posted in thread %q, want %q", started.ThreadTS, root)
	}
	task := strings.Fields(strings.TrimPrefix(started.Text, "Task "))[0]
	q := waitPost(t, srv, "the agent's question with buttons", logs, func(p slacktest.Post) bool { return len(p.Buttons) >= 2 && strings.Contains(p.Text, "peer asks") })
	if q.ThreadTS != root || q.Buttons[0].Value != "Approve" || q.Buttons[1].Value != "Deny" {
		t.Fatalf("question %+v: want it in the task's thread with Approve and Deny", q)
	}
	if _, err := srv.Press("U0THER", tc.Channel, root, q.TS, q.Buttons[0].BlockID, q.Buttons[0].Value); err != nil {
		t.Fatal(err)
	}
	waitPost(t, srv, "the stranger's press refused", logs, posted("U0THER is not the operator"))
	copyFileOf := filepath.Join(home, "tasks", task, "copy", "notes", "release.md")
	if _, err := os.Stat(copyFileOf); err == nil {
		t.Fatal("the agent wrote after a stranger's press")
	}
	if _, err := srv.Press("U0PERATOR", tc.Channel, root, q.TS, q.Buttons[0].BlockID, q.Buttons[0].Value); err != nil {
		t.Fatal(err)
	}
	waitPost(t, srv, "the agent's words after the approval", logs, posted("Wrote it."))
	if b, err := os.ReadFile(copyFileOf); err != nil || string(b) != "# From the agent\n" {
		t.Fatalf("the task's copy holds %q, %v", b, err)
	}
	hist, err := os.ReadFile(filepath.Join(home, "tasks", task, "history.jsonl"))
	out := string(hist)
	if err != nil || !strings.Contains(out, `"kind":"answer"`) || !strings.Contains(out, `"by":"slack:U0PERATOR"`) || !strings.Contains(out, `"state":"approved"`) {
		t.Fatalf("the history does not say who approved: %v\n%s", err, out)
	}
	if out, err := runKule(t, "", "history", task, "--verify"); err != nil {
		t.Fatalf("the history does not verify: %v\n%s", err, out)
	}
	// No token in any file of the task (its copy, home layer, tmp, logs)
	// nor anywhere else in the home but the sealed secrets store.
	noTokenIn(t, home, filepath.Join(home, "secrets"))
	noTokenIn(t, folder, "")
	if strings.Contains(out, "slack:U0THER") {
		t.Fatalf("the history records the stranger's press:\n%s", out)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// noTokenIn fails for every file under root (but those under skip) that
// holds a token of the stand-in.
func noTokenIn(t *testing.T, root, skip string) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || (skip != "" && strings.HasPrefix(p, skip+string(filepath.Separator))) {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && (bytes.Contains(b, []byte(pluginBotToken)) || bytes.Contains(b, []byte(pluginAppToken))) {
			t.Errorf("%s holds a token", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
