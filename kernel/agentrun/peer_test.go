package agentrun_test

// A scripted ACP agent: the test binary re-runs itself as the agent
// (KULE_AGENTRUN_PEER=<script>), speaking ACP on stdio. It plays the
// exchanges a run must carry: a tool call that writes through fs/*, a file
// written directly in its working directory, a read of ~/.ssh, its key
// variable, a usage report, and a turn that waits for session/cancel.

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

type peer struct {
	in     *bufio.Reader
	nextID int
}

func (p *peer) send(v map[string]any) {
	v["jsonrpc"] = "2.0"
	b, _ := json.Marshal(v)
	os.Stdout.Write(append(b, '\n'))
}

func (p *peer) read() map[string]any {
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

// request sends a request in the peer's own id space and waits for its answer.
func (p *peer) request(method string, params any) map[string]any {
	id := p.nextID
	p.nextID++
	p.send(map[string]any{"id": id, "method": method, "params": params})
	for {
		m := p.read()
		if m["method"] == nil && m["id"] == float64(id) {
			return m
		}
	}
}

// barrier waits until the client has handled every update sent before it
// (it answers requests in the order they come): a step's effects are
// measured when its updates are handled.
func (p *peer) barrier(cwd string) {
	p.request("fs/read_text_file", map[string]any{"sessionId": "s1", "path": filepath.Join(cwd, "a.txt")})
}

func (p *peer) update(sid string, u map[string]any) {
	p.send(map[string]any{"method": "session/update", "params": map[string]any{"sessionId": sid, "update": u}})
}

// connect asks the proxy in HTTPS_PROXY to CONNECT to hostport and
// returns its status line.
func connect(hostport string) string {
	u, err := url.Parse(os.Getenv("HTTPS_PROXY"))
	if err != nil || u.Host == "" {
		return fmt.Sprintf("no proxy (%q)", os.Getenv("HTTPS_PROXY"))
	}
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		return "dial: " + err.Error()
	}
	defer c.Close()
	auth := ""
	if pw, ok := u.User.Password(); ok {
		auth = "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pw)) + "\r\n"
	}
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", hostport, hostport, auth)
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "read: " + err.Error()
	}
	return strings.TrimSpace(line)
}

func runPeer(script string) int {
	p := &peer{in: bufio.NewReader(os.Stdin)}
	cwd := ""
	for {
		m := p.read()
		id := m["id"]
		params, _ := m["params"].(map[string]any)
		switch m["method"] {
		case "initialize":
			caps := map[string]any{"loadSession": false}
			if script == "pictures" {
				caps["promptCapabilities"] = map[string]any{"image": true}
			}
			p.send(map[string]any{"id": id, "result": map[string]any{"protocolVersion": 1, "agentInfo": map[string]any{"name": "kule-test-peer", "version": "1.0"}, "agentCapabilities": caps}})
		case "session/new":
			cwd, _ = params["cwd"].(string)
			p.send(map[string]any{"id": id, "result": map[string]any{"sessionId": "s1"}})
		case "session/cancel":
		case "session/prompt":
			switch script {
			case "write":
				file := filepath.Join(cwd, "hello.txt")
				p.update("s1", map[string]any{"sessionUpdate": "tool_call", "toolCallId": "w1", "title": "Write hello.txt", "kind": "edit", "status": "in_progress", "locations": []any{map[string]any{"path": file}}})
				p.request("fs/write_text_file", map[string]any{"sessionId": "s1", "path": file, "content": "hello\n"})
				p.update("s1", map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "w1", "status": "completed"})
				p.barrier(cwd)
				// What the agent itself sees: its key variable and ~/.ssh.
				key, err := os.ReadFile(filepath.Join(os.Getenv("HOME"), ".ssh", "id_ed25519"))
				seen := fmt.Sprintf("TEST_KEY=%s\nssh=%q err=%v\n", os.Getenv("TEST_KEY"), key, err != nil)
				p.update("s1", map[string]any{"sessionUpdate": "tool_call", "toolCallId": "d1", "title": "Write seen.txt", "kind": "edit", "status": "in_progress"})
				p.barrier(cwd)
				os.WriteFile("seen.txt", []byte(seen), 0o644)
				p.update("s1", map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "d1", "status": "completed"})
				p.update("s1", map[string]any{"sessionUpdate": "usage_update", "used": 10, "size": 100, "cost": map[string]any{"amount": 0.25, "currency": "USD"}})
				p.update("s1", map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": "done"}})
				p.send(map[string]any{"id": id, "result": map[string]any{"stopReason": "end_turn"}})
			case "net":
				// Two connections through the task's proxy: the profile's
				// host and one it does not name.
				var out []string
				for _, h := range []string{"model.test:443", "other.test:443"} {
					out = append(out, h+" "+connect(h))
				}
				os.WriteFile("net.txt", []byte(strings.Join(out, "\n")+"\n"), 0o644)
				p.send(map[string]any{"id": id, "result": map[string]any{"stopReason": "end_turn"}})
			case "pictures", "nopictures":
				// Says how many image blocks the prompt held and how the
				// text ends.
				n, last := 0, ""
				for _, b := range params["prompt"].([]any) {
					b := b.(map[string]any)
					if b["type"] == "image" && b["mimeType"] == "image/png" && b["data"] != "" {
						n++
					}
					if b["type"] == "text" {
						lines := strings.Split(b["text"].(string), "\n")
						last = lines[len(lines)-1]
					}
				}
				p.update("s1", map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": fmt.Sprintf("images=%d last=%s", n, last)}})
				p.send(map[string]any{"id": id, "result": map[string]any{"stopReason": "end_turn"}})
			case "slow":
				p.update("s1", map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": "waiting"}})
				for {
					c := p.read()
					if c["method"] == "session/cancel" {
						break
					}
				}
				p.send(map[string]any{"id": id, "result": map[string]any{"stopReason": "cancelled"}})
			default:
				if !p.limitsScript(script, id, cwd) && !p.memoryScript(script, id, params, cwd) && !p.homeScript(script, id, params) { // limits_peer_test.go, memory_test.go, homes_test.go
					p.send(map[string]any{"id": id, "error": map[string]any{"code": -32603, "message": "unknown script " + script}})
				}
			}
		default:
			if id != nil {
				p.send(map[string]any{"id": id, "error": map[string]any{"code": -32601, "message": "no such method"}})
			}
		}
	}
}
