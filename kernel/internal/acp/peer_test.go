package acp

// Scripted ACP peers: the test binary re-runs itself as the agent
// (GO_WANT_HELPER_PROCESS=1, ACP_PEER=<script>), speaking ACP on stdio the way
// the scripts below say. They are not a model of an agent: each plays one
// exchange the client must handle.

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

type peer struct {
	in     *bufio.Reader
	nextID int
	sid    string
	cwd    string
	queued []map[string]any // messages read while waiting for something else
	script string
	mcp    any // the mcpServers session/new offered
}

func (p *peer) send(v map[string]any) {
	v["jsonrpc"] = "2.0"
	b, _ := json.Marshal(v)
	os.Stdout.Write(append(b, '\n'))
}

func (p *peer) sendRaw(s string) { os.Stdout.WriteString(s + "\n") }

func (p *peer) read() map[string]any {
	if len(p.queued) > 0 {
		m := p.queued[0]
		p.queued = p.queued[1:]
		return m
	}
	line, err := p.in.ReadBytes('\n')
	if err != nil {
		os.Exit(0) // stdin closed: a well-behaved agent leaves
	}
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		fmt.Fprintf(os.Stderr, "peer: bad line %q\n", line)
		os.Exit(9)
	}
	return m
}

// expect reads until a request or notification of this method comes.
func (p *peer) expect(method string) map[string]any {
	for {
		m := p.read()
		if m["method"] == method {
			return m
		}
		fmt.Fprintf(os.Stderr, "peer: skipping %v while waiting for %s\n", m["method"], method)
	}
}

// request sends a request in the peer's own id space and waits for the
// answer, queueing what else arrives meanwhile.
func (p *peer) request(method string, params any) map[string]any {
	id := p.nextID
	p.nextID++
	return p.requestID(id, method, params)
}

func (p *peer) requestID(id any, method string, params any) map[string]any {
	p.send(map[string]any{"id": id, "method": method, "params": params})
	var keep []map[string]any
	for {
		line, err := p.in.ReadBytes('\n')
		if err != nil {
			os.Exit(0)
		}
		var m map[string]any
		_ = json.Unmarshal(line, &m)
		if _, isReq := m["method"]; !isReq && fmt.Sprint(m["id"]) == fmt.Sprint(id) {
			p.queued = append(p.queued, keep...)
			return m
		}
		keep = append(keep, m)
	}
}

func (p *peer) reply(req map[string]any, result any) {
	p.send(map[string]any{"id": req["id"], "result": result})
}

func (p *peer) update(u map[string]any) {
	p.send(map[string]any{"method": "session/update", "params": map[string]any{"sessionId": p.sid, "update": u}})
}

func (p *peer) text(s string) {
	p.update(map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": s}})
}

// handshake answers initialize and session/new (or load/resume).
func (p *peer) handshake(caps map[string]any) {
	m := p.expect("initialize")
	params := m["params"].(map[string]any)
	if params["protocolVersion"] != float64(1) {
		fmt.Fprintln(os.Stderr, "peer: protocolVersion is not 1")
		os.Exit(8)
	}
	cc, _ := json.Marshal(params["clientCapabilities"])
	if !strings.Contains(string(cc), `"readTextFile":true`) || !strings.Contains(string(cc), `"writeTextFile":true`) || !strings.Contains(string(cc), `"terminal":true`) {
		fmt.Fprintf(os.Stderr, "peer: client capabilities %s\n", cc)
		os.Exit(8)
	}
	if caps == nil {
		caps = map[string]any{}
	}
	p.reply(m, map[string]any{
		"protocolVersion":   1,
		"agentCapabilities": caps,
		"agentInfo":         map[string]any{"name": "scripted", "version": "1.0"},
		"authMethods": []any{
			map[string]any{"id": "key", "name": "API key", "type": "env_var", "vars": []any{"X"}},
			map[string]any{"id": "weird", "name": "Future", "type": "quantum-handshake", "_meta": map[string]any{"x": 1}},
		},
		"_meta": map[string]any{"vendor": "scripted"},
	})
	for {
		m := p.read()
		switch m["method"] {
		case "session/new":
			p.cwd = m["params"].(map[string]any)["cwd"].(string)
			p.mcp = m["params"].(map[string]any)["mcpServers"]
			p.sid = "sess-1"
			p.reply(m, map[string]any{"sessionId": p.sid, "_meta": map[string]any{"a": 1}})
			return
		case "session/load":
			p.sid = m["params"].(map[string]any)["sessionId"].(string)
			p.cwd = m["params"].(map[string]any)["cwd"].(string)
			// Replay the earlier conversation before answering.
			p.update(map[string]any{"sessionUpdate": "user_message_chunk", "content": map[string]any{"type": "text", "text": "old prompt"}})
			p.update(map[string]any{"sessionUpdate": "tool_call", "toolCallId": "old", "title": "old call", "status": "completed"})
			p.reply(m, nil)
			if p.script == "load" {
				// Gemini CLI goes on replaying after its answer.
				p.update(map[string]any{"sessionUpdate": "tool_call", "toolCallId": "old", "title": "old call replayed late", "status": "completed"})
			}
			return
		case "session/resume":
			p.sid = m["params"].(map[string]any)["sessionId"].(string)
			p.cwd = m["params"].(map[string]any)["cwd"].(string)
			p.reply(m, map[string]any{})
			return
		}
	}
}

func runPeer(script string) {
	p := &peer{in: bufio.NewReader(os.Stdin), script: script}
	switch script {
	case "basic":
		p.handshake(nil)
		pr := p.expect("session/prompt")
		p.text("hello ")
		p.update(map[string]any{"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Write notes", "kind": "edit", "status": "pending",
			"locations": []any{map[string]any{"path": filepath.Join(p.cwd, "notes.md")}}, "_meta": map[string]any{"z": true}})
		// The peer's own request ids start at 0 too, and one of them is
		// the very id of the client's pending prompt.
		promptID := pr["id"]
		r := p.requestID(promptID, "fs/write_text_file", map[string]any{"sessionId": p.sid, "path": filepath.Join(p.cwd, "notes.md"), "content": "# notes\n"})
		if r["error"] != nil {
			p.text(fmt.Sprintf("write failed: %v", r["error"]))
		}
		p.update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"})
		p.update(map[string]any{"sessionUpdate": "brand_new_kind", "payload": map[string]any{"n": 1}})
		p.send(map[string]any{"method": "_vendor/telemetry", "params": map[string]any{"x": 1}})
		p.sendRaw("this line is not json")
		p.update(map[string]any{"sessionUpdate": "usage_update", "used": 1200, "size": 200000, "cost": map[string]any{"amount": 0.01, "currency": "USD"}})
		p.reply(pr, map[string]any{"stopReason": "end_turn", "usage": map[string]any{"totalTokens": 30, "inputTokens": 20, "outputTokens": 10}, "_meta": map[string]any{}})
		// After the answer: late updates still count.
		p.text("late words")
		p.update(map[string]any{"sessionUpdate": "plan", "entries": []any{}})
		p.update(map[string]any{"sessionUpdate": "tool_call", "toolCallId": "late", "title": "Late call", "status": "in_progress"})
		p.expect("never") // wait for stdin to close
	case "outoforder":
		p.handshake(nil)
		pr := p.expect("session/prompt")
		p.update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "t9", "status": "in_progress", "title": "Run tests", "rawInput": map[string]any{"command": []any{"go", "test"}}})
		p.update(map[string]any{"sessionUpdate": "tool_call", "toolCallId": "t9", "kind": "execute"})
		p.send(map[string]any{"id": 999, "result": map[string]any{}}) // answers nothing of the client's
		p.update(map[string]any{"sessionUpdate": "tool_call", "toolCallId": "t8", "title": "Left open", "status": "in_progress"})
		p.update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "t9", "status": "failed"})
		p.reply(pr, map[string]any{"stopReason": "end_turn"})
		p.expect("never")
	case "cancel":
		p.handshake(nil)
		pr := p.expect("session/prompt")
		p.update(map[string]any{"sessionUpdate": "tool_call", "toolCallId": "long", "title": "Think hard", "status": "in_progress"})
		p.expect("session/cancel")
		p.update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "long", "status": "failed"})
		p.reply(pr, map[string]any{"stopReason": "cancelled"})
		p.expect("never")
	case "deaf":
		// Ignores cancel and a closed stdin, and leaves a child behind.
		p.handshake(nil)
		p.expect("session/prompt")
		child := exec.Command("sleep", "300")
		child.Start()
		fmt.Fprintf(os.Stderr, "CHILD %d\n", child.Process.Pid)
		p.text(fmt.Sprintf("child %d", child.Process.Pid))
		time.Sleep(time.Hour)
	case "mcp":
		// It tells what MCP servers it was offered: in a file of the copy.
		p.handshake(nil)
		pr := p.expect("session/prompt")
		b, _ := json.Marshal(p.mcp)
		os.WriteFile(filepath.Join(p.cwd, "offered.json"), b, 0o644)
		p.reply(pr, map[string]any{"stopReason": "end_turn"})
		p.expect("never")
	case "error":
		p.handshake(nil)
		pr := p.expect("session/prompt")
		p.send(map[string]any{"id": pr["id"], "error": map[string]any{"code": -32603, "message": "model overloaded", "data": map[string]any{"retry": true}}})
		p.expect("never")
	case "die":
		p.handshake(nil)
		p.expect("session/prompt")
		p.text("about to fall over")
		fmt.Fprintln(os.Stderr, "panic: the model client crashed")
		os.Exit(3)
	case "auth":
		m := p.expect("initialize")
		p.reply(m, map[string]any{"protocolVersion": 1, "agentCapabilities": map[string]any{}, "authMethods": []any{map[string]any{"id": "oauth", "name": "Log in"}}})
		m = p.expect("session/new")
		p.send(map[string]any{"id": m["id"], "error": map[string]any{"code": -32000, "message": "Authentication required"}})
		m = p.expect("authenticate")
		if m["params"].(map[string]any)["methodId"] != "oauth" {
			p.send(map[string]any{"id": m["id"], "error": map[string]any{"code": -32602, "message": "unknown method"}})
		} else {
			p.reply(m, map[string]any{})
		}
		m = p.expect("session/new")
		p.reply(m, map[string]any{"sessionId": "after-auth"})
		p.expect("never")
	case "oldversion":
		m := p.expect("initialize")
		p.reply(m, map[string]any{"protocolVersion": 0, "agentCapabilities": map[string]any{}})
		p.expect("never")
	case "fs":
		p.handshake(nil)
		pr := p.expect("session/prompt")
		results := map[string]any{}
		ask := func(name, method string, params map[string]any) map[string]any {
			params["sessionId"] = p.sid
			r := p.request(method, params)
			results[name] = r
			return r
		}
		ask("outside", "fs/read_text_file", map[string]any{"path": "/etc/passwd"})
		ask("dotdot", "fs/read_text_file", map[string]any{"path": p.cwd + "/../secret.txt"})
		ask("relative", "fs/read_text_file", map[string]any{"path": "a.txt"})
		ask("missing", "fs/read_text_file", map[string]any{"path": p.cwd + "/nope.txt"})
		ask("link", "fs/read_text_file", map[string]any{"path": p.cwd + "/escape"})
		ask("writelink", "fs/write_text_file", map[string]any{"path": p.cwd + "/escape", "content": "pwned"})
		ask("writeout", "fs/write_text_file", map[string]any{"path": filepath.Dir(p.cwd) + "/dropped.txt", "content": "pwned"})
		ask("lines", "fs/read_text_file", map[string]any{"path": p.cwd + "/a.txt", "line": 2, "limit": 2})
		ask("nested", "fs/write_text_file", map[string]any{"path": p.cwd + "/d/e/f.txt", "content": "deep"})
		t := ask("term", "terminal/create", map[string]any{"command": "echo hi > made.txt; echo out; echo err >&2; exit 4"})
		tid := t["result"].(map[string]any)["terminalId"]
		ask("wait", "terminal/wait_for_exit", map[string]any{"terminalId": tid})
		ask("output", "terminal/output", map[string]any{"terminalId": tid})
		ask("release", "terminal/release", map[string]any{"terminalId": tid})
		ask("gone", "terminal/output", map[string]any{"terminalId": tid})
		ask("termout", "terminal/create", map[string]any{"command": "pwd", "cwd": "/tmp"})
		ask("unknown", "_vendor/whatever", map[string]any{})
		b, _ := json.Marshal(results)
		p.text(string(b))
		p.reply(pr, map[string]any{"stopReason": "end_turn"})
		p.expect("never")
	case "permission":
		p.handshake(nil)
		pr := p.expect("session/prompt")
		results := map[string]any{}
		for _, c := range []struct {
			name string
			opts []any
		}{
			{"full", []any{
				map[string]any{"optionId": "always", "name": "Always", "kind": "allow_always"},
				map[string]any{"optionId": "once", "name": "Once", "kind": "allow_once"},
				map[string]any{"optionId": "no", "name": "No", "kind": "reject_once"}}},
			{"noonce", []any{
				map[string]any{"optionId": "always", "name": "Always", "kind": "allow_always"},
				map[string]any{"optionId": "no", "name": "No", "kind": "reject_once"}}},
		} {
			p.update(map[string]any{"sessionUpdate": "tool_call", "toolCallId": c.name, "title": "rm -rf build", "kind": "execute", "status": "pending", "rawInput": map[string]any{"command": "rm -rf build"}})
			r := p.request("session/request_permission", map[string]any{"sessionId": p.sid, "toolCall": map[string]any{"toolCallId": c.name, "title": "rm -rf build", "rawInput": map[string]any{"command": "rm -rf build"}}, "options": c.opts})
			results[c.name] = r["result"]
			p.update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": c.name, "status": "completed"})
		}
		b, _ := json.Marshal(results)
		p.text(string(b))
		p.reply(pr, map[string]any{"stopReason": "end_turn"})
		p.expect("never")
	case "load", "resume":
		caps := map[string]any{"loadSession": true}
		if script == "resume" {
			caps["sessionCapabilities"] = map[string]any{"resume": map[string]any{}}
		}
		p.handshake(caps)
		pr := p.expect("session/prompt")
		p.text("continued " + p.sid)
		p.reply(pr, map[string]any{"stopReason": "end_turn"})
		p.expect("never")
	case "images", "noimages":
		// Says back what the prompt held: each block's type, and each
		// image's size as its PNG decodes.
		p.handshake(map[string]any{"promptCapabilities": map[string]any{"image": script == "images"}})
		pr := p.expect("session/prompt")
		var seen []string
		for _, b := range pr["params"].(map[string]any)["prompt"].([]any) {
			b := b.(map[string]any)
			switch b["type"] {
			case "text":
				seen = append(seen, "text:"+b["text"].(string))
			case "image":
				raw, err := base64.StdEncoding.DecodeString(b["data"].(string))
				if err != nil {
					seen = append(seen, "image:bad base64")
					continue
				}
				cfg, err := png.DecodeConfig(bytes.NewReader(raw))
				if err != nil || b["mimeType"] != "image/png" {
					seen = append(seen, fmt.Sprintf("image:bad png %v %v", b["mimeType"], err))
					continue
				}
				seen = append(seen, fmt.Sprintf("image:%dx%d", cfg.Width, cfg.Height))
			default:
				seen = append(seen, fmt.Sprintf("other:%v", b["type"]))
			}
		}
		p.text(strings.Join(seen, "\n"))
		p.reply(pr, map[string]any{"stopReason": "end_turn"})
		p.expect("never")
	default:
		fmt.Fprintln(os.Stderr, "peer: unknown script", script)
		os.Exit(2)
	}
}
