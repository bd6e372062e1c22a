package daemon

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/kulehq/kule/kernel/agentrun"

	"github.com/kulehq/kule/kernel"
)

// A scripted ACP agent: the test binary re-runs itself as the agent
// (KULE_DAEMON_PEER=ask), speaking ACP on stdio. On a prompt it opens a tool
// call, asks permission to write notes/release.md, writes it through fs/* only
// if allowed, and says what it did.
func runPeer() int {
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
	cwd, loaded := "", ""
	for {
		m := read()
		id := m["id"]
		params, _ := m["params"].(map[string]any)
		switch m["method"] {
		case "initialize":
			caps := map[string]any{}
			if os.Getenv("KULE_DAEMON_PEER") == "pictures" {
				caps["promptCapabilities"] = map[string]any{"image": true}
			}
			if os.Getenv("KULE_DAEMON_PEER") == "resume" {
				caps["loadSession"] = true
			}
			send(map[string]any{"id": id, "result": map[string]any{"protocolVersion": 1, "agentInfo": map[string]any{"name": "peer", "version": "1.0"}, "agentCapabilities": caps}})
		case "session/new":
			cwd, _ = params["cwd"].(string)
			send(map[string]any{"id": id, "result": map[string]any{"sessionId": "s1"}})
		case "session/load": // resume_test.go
			cwd, _ = params["cwd"].(string)
			loaded, _ = params["sessionId"].(string)
			send(map[string]any{"id": id, "result": map[string]any{}})
		case "session/cancel":
		case "session/prompt":
			switch os.Getenv("KULE_DAEMON_PEER") {
			case "resume":
				// Keeps the session it loaded and the prompt it was sent.
				var text strings.Builder
				for _, b := range params["prompt"].([]any) {
					if s, ok := b.(map[string]any)["text"].(string); ok {
						text.WriteString(s)
					}
				}
				os.WriteFile(filepath.Join(cwd, "resumed.txt"), []byte("loaded="+loaded+"\n"+text.String()), 0o644)
				send(map[string]any{"id": id, "result": map[string]any{"stopReason": "end_turn"}})
				continue
			case "pictures":
				// Says the size of each image the prompt held.
				var sizes []string
				for _, b := range params["prompt"].([]any) {
					b := b.(map[string]any)
					if b["type"] != "image" {
						continue
					}
					raw, _ := base64.StdEncoding.DecodeString(b["data"].(string))
					cfg, err := png.DecodeConfig(bytes.NewReader(raw))
					sizes = append(sizes, fmt.Sprintf("%dx%d/%v", cfg.Width, cfg.Height, err))
				}
				update(map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": "images: " + strings.Join(sizes, " ")}})
				send(map[string]any{"id": id, "result": map[string]any{"stopReason": "end_turn"}})
				continue
			case "hang":
				// Works on and on, saying nothing more: only a limit ends it.
				update(map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": "Thinking for a long time."}})
				continue
			case "spend":
				// Reports what the session cost so far, as agents do.
				update(map[string]any{"sessionUpdate": "usage_update", "used": 10, "size": 100, "cost": map[string]any{"amount": 0.25, "currency": "USD"}})
				update(map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": "Done."}})
				send(map[string]any{"id": id, "result": map[string]any{"stopReason": "end_turn"}})
				continue
			}
			if os.Getenv("KULE_DAEMON_PEER") == "reach" {
				// Asks the task's proxy for each host:port of KULE_TEST_URL, as an
				// agent reaching for its model's host does (agenttry_test.go).
				var got []string
				for _, hp := range strings.Fields(os.Getenv("KULE_TEST_URL")) {
					got = append(got, hp+" "+proxyConnect(hp))
				}
				update(map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": strings.Join(got, "; ")}})
				send(map[string]any{"id": id, "result": map[string]any{"stopReason": "end_turn"}})
				continue
			}
			if os.Getenv("KULE_DAEMON_PEER") == "fetch" {
				// Fetch a page through the task's proxy, as an agent's tool would.
				pu, _ := url.Parse(os.Getenv("HTTP_PROXY"))
				c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
				text := ""
				if resp, err := c.Get(os.Getenv("KULE_TEST_URL")); err != nil {
					text = "fetch failed: " + err.Error()
				} else {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					text = fmt.Sprintf("fetched %d: %s", resp.StatusCode, b)
				}
				update(map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": text}})
				send(map[string]any{"id": id, "result": map[string]any{"stopReason": "end_turn"}})
				continue
			}
			file := filepath.Join(cwd, "notes", "release.md")
			update(map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": "I will write the notes. "}})
			update(map[string]any{"sessionUpdate": "plan", "entries": []any{map[string]any{"content": "Write the release notes", "priority": "high", "status": "in_progress"}}})
			update(map[string]any{"sessionUpdate": "usage_update", "used": 10, "size": 100, "cost": map[string]any{"amount": 0.25, "currency": "USD"}})
			tc := map[string]any{"toolCallId": "w1", "title": "Write notes/release.md", "kind": "edit", "status": "pending", "locations": []any{map[string]any{"path": file}}}
			update(map[string]any{"sessionUpdate": "tool_call", "toolCallId": "w1", "title": "Write notes/release.md", "kind": "edit", "status": "pending", "locations": []any{map[string]any{"path": file}}})
			ans := request("session/request_permission", map[string]any{"sessionId": "s1", "toolCall": tc, "options": []any{
				map[string]any{"optionId": "yes", "name": "Allow", "kind": "allow_once"},
				map[string]any{"optionId": "no", "name": "Reject", "kind": "reject_once"},
			}})
			res, _ := ans["result"].(map[string]any)
			out, _ := res["outcome"].(map[string]any)
			if out["optionId"] == "yes" {
				request("fs/write_text_file", map[string]any{"sessionId": "s1", "path": file, "content": "# From the agent\n"})
				update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "w1", "status": "completed"})
				request("fs/read_text_file", map[string]any{"sessionId": "s1", "path": file}) // a barrier: the update is handled
				update(map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": "Wrote it."}})
			} else {
				update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "w1", "status": "failed"})
				update(map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": fmt.Sprintf("Not allowed (%v); going on without it.", out["optionId"])}})
			}
			send(map[string]any{"id": id, "result": map[string]any{"stopReason": "end_turn"}})
		default:
			if id != nil {
				send(map[string]any{"id": id, "error": map[string]any{"code": -32601, "message": "no such method"}})
			}
		}
	}
}

// withPeerAgent gives the daemon an approved profile "peer" that runs the
// scripted agent with the direct runner.
func withPeerAgent(t *testing.T, cfg *Config) { withPeerScript(t, cfg, "ask", "") }

// withPeerScript is withPeerAgent with the peer's script and a URL for it.
func withPeerScript(t *testing.T, cfg *Config, script, testURL string) {
	t.Helper()
	k := cfg.Kernel
	exe, err := os.Executable()
	must(t, err)
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	profile := "[[agent]]\nname = \"peer\"\ncommand = [" + q(exe) + ", \"-test.run=^$\"]\nenv = { KULE_DAEMON_PEER = " + q(script) + ", KULE_TEST_URL = " + q(testURL) + " }\n"
	must(t, os.WriteFile(k.AgentsFile(), []byte(profile), 0o600))
	load := func() (*kernel.AgentSet, error) { return k.LoadAgents(fstest.MapFS{}) }
	set, err := load()
	must(t, err)
	p, err := set.Get("peer")
	must(t, err)
	must(t, k.ApproveAgent(p, set.Profiles))
	person := t.TempDir()
	cfg.AgentSet = load
	cfg.AgentOptions = func(o *agentrun.Options) {
		o.Runner = kernel.DirectRunner{}
		o.Home = person
		o.PackagesRoot = filepath.Join(k.Home(), "packages")
	}
}

// TestAgentTurnFromTheApp runs an agent prompt through the daemon: its words
// and its tool call with what it changed stream as events, and its
// permission question waits under Needs you — approved, the agent writes;
// denied, it goes on without it.
func TestAgentTurnFromTheApp(t *testing.T) {
	t.Parallel()
	cfg := Config{Kernel: newKernel(t)}
	withPeerAgent(t, &cfg)
	d := startDaemon(t, cfg)
	rep, err := d.k.NewTask(context.Background(), sampleFolder(t))
	must(t, err)
	tk := rep.Task
	ch, stop := d.Bus.Subscribe()
	defer stop()
	var (
		mu     sync.Mutex
		events []Event
	)
	go func() {
		for e := range ch {
			mu.Lock()
			events = append(events, e)
			mu.Unlock()
		}
	}()
	turn := func(approve bool) *AgentTurn {
		done := make(chan *AgentTurn, 1)
		go func() {
			tr, err := d.RunAgent(context.Background(), tk, AgentRequest{Agent: "peer", Prompt: "write the notes"})
			if err != nil {
				t.Errorf("run: %v", err)
			}
			done <- tr
		}()
		q := waitQuestion(t, d, KindPermission, "peer edit")
		if !strings.Contains(q.Title, "Write notes/release.md") {
			t.Errorf("question title %q", q.Title)
		}
		_, err := d.Q.Answer(q.ID, Decision{Approve: approve})
		must(t, err)
		return <-done
	}
	tr := turn(false)
	if tr.StopReason != "end_turn" || !strings.HasPrefix(tr.Summary, "0 ") {
		t.Fatalf("denied turn: %+v", tr)
	}
	if _, err := os.Stat(filepath.Join(tk.Paths.Copy, "notes", "release.md")); err == nil {
		t.Fatal("a denied write reached the copy")
	}
	tr = turn(true)
	if got := readFile(filepath.Join(tk.Paths.Copy, "notes", "release.md")); got != "# From the agent\n" || !strings.Contains(tr.Summary, "+1 ") {
		t.Fatalf("approved turn: file %q, %+v", got, tr)
	}
	mu.Lock()
	defer mu.Unlock()
	var text strings.Builder
	var stepEffects []string
	for _, e := range events {
		if e.Type != "agent" {
			continue
		}
		m := map[string]any{}
		b, _ := json.Marshal(e.Data)
		json.Unmarshal(b, &m)
		if m["type"] == "text" {
			text.WriteString(m["text"].(string))
		}
		if s, ok := m["step"].(map[string]any); ok && m["type"] == "step_end" {
			if fx, ok := s["effects"].([]any); ok {
				for _, f := range fx {
					stepEffects = append(stepEffects, f.(string))
				}
			}
		}
	}
	if !strings.Contains(text.String(), "going on without it") || !strings.Contains(text.String(), "Wrote it.") {
		t.Fatalf("streamed text %q", text.String())
	}
	if len(stepEffects) != 1 || !strings.Contains(stepEffects[0], "notes/release.md") {
		t.Fatalf("the tool call's effects streamed: %v", stepEffects)
	}
}

// TestAgentConnectionWaitsForAPerson: an agent run from the app connects
// through the task's proxy to a host the policy asks about; the connection
// waits under Needs you, and the agent gets the page once it is approved.
func TestAgentConnectionWaitsForAPerson(t *testing.T) {
	t.Parallel()
	_, hp := loopbackServer(t, "the page")
	cfg := Config{Kernel: newKernel(t)}
	withPeerScript(t, &cfg, "fetch", "http://"+hp+"/")
	d := startDaemon(t, cfg)
	rep, err := d.k.NewTask(context.Background(), sampleFolder(t))
	must(t, err)
	ch, stop := d.Bus.Subscribe()
	defer stop()
	done := make(chan *AgentTurn, 1)
	go func() {
		tr, err := d.RunAgent(context.Background(), rep.Task, AgentRequest{Agent: "peer", Prompt: "fetch it"})
		if err != nil {
			t.Errorf("run: %v", err)
		}
		done <- tr
	}()
	q := waitQuestion(t, d, KindConnection, hp)
	if !strings.Contains(q.Detail, "peer") {
		t.Errorf("the question's detail %q does not name the agent", q.Detail)
	}
	_, err = d.Q.Answer(q.ID, Decision{Approve: true})
	must(t, err)
	<-done
	var text strings.Builder
	for len(ch) > 0 {
		if e := <-ch; e.Type == "agent" {
			if m, ok := e.Data.(map[string]any); ok && m["type"] == "text" {
				text.WriteString(m["text"].(string))
			}
		}
	}
	if !strings.Contains(text.String(), "fetched 200: the page") {
		t.Fatalf("the agent said %q", text.String())
	}
}
