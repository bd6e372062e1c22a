package agentrun_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kulehq/kule/kernel/internal/proxy"
)

// Claude Code over ACP (the Claude Agent SDK's ACP adapter, at the version
// the built-in profile pins), against a scripted model server speaking the
// Anthropic Messages API (streaming) at api.anthropic.com behind the task's
// proxy. The model is the only fake: the agent, its adapter, the sandbox,
// the proxy and the client are real.

// anthropicServer answers /v1/messages. A prompt holding a marker gets a tool
// call: KULE-WRITE → the write tool, KULE-BASH → the shell tool, KULE-SSH →
// a read of ~/.ssh/id_ed25519, KULE-SLOW → a reply that never ends (for
// cancel). A request whose last message carries tool results gets a short
// closing text. Everything else (titles, side questions) gets plain text.

type anthropicServer struct {
	cwd, home string
	served    served
	mu        sync.Mutex
	results   []string // tool results the agent sent back
}

type anthMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type anthRequest struct {
	Model    string        `json:"model"`
	Stream   bool          `json:"stream"`
	Messages []anthMessage `json:"messages"`
	Tools    []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

func (a *anthropicServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if !strings.HasSuffix(r.URL.Path, "/v1/messages") {
		if strings.Contains(r.URL.Path, "count_tokens") {
			fmt.Fprint(w, `{"input_tokens":10}`)
			return
		}
		w.WriteHeader(404)
		fmt.Fprint(w, `{"type":"error","error":{"type":"not_found_error","message":"not here"}}`)
		return
	}
	var req anthRequest
	if err := json.Unmarshal(body, &req); err != nil {
		w.WriteHeader(400)
		return
	}
	var names []string
	for _, t := range req.Tools {
		names = append(names, t.Name)
	}
	last, all := "", ""
	isResult := false
	if n := len(req.Messages); n > 0 {
		last = string(req.Messages[n-1].Content)
		isResult = strings.Contains(last, `"tool_result"`)
	}
	for _, m := range req.Messages {
		if m.Role == "user" {
			all += string(m.Content)
		}
	}
	pick := func(want ...string) string {
		for _, w := range want {
			for _, n := range names {
				if n == w {
					return n
				}
			}
		}
		return ""
	}
	var blocks []any // text string or toolUse
	marker := ""
	if strings.Contains(string(body), "You are a security monitor") {
		// Claude Code's own classifier of shell commands ("auto mode"):
		// this one is routine.
		marker = "classifier"
	} else if len(names) > 0 {
		marker = a.served.pick(all, "KULE-WRITE", "KULE-BASH", "KULE-SSH", "KULE-SLOW")
	}
	switch marker {
	case "classifier":
		blocks = []any{"<severity>5</severity>"}
	case "KULE-WRITE":
		blocks = []any{"Writing the file.", toolUse{pick("mcp__acp__Write", "Write"), map[string]any{"file_path": filepath.Join(a.cwd, "claude.txt"), "content": "written by claude\n"}}}
	case "KULE-BASH":
		blocks = []any{toolUse{pick("mcp__acp__Bash", "Bash"), map[string]any{"command": "printenv ANTHROPIC_API_KEY > bash.txt", "description": "write bash.txt"}}}
	case "KULE-SSH":
		blocks = []any{toolUse{pick("mcp__acp__Read", "Read"), map[string]any{"file_path": filepath.Join(a.home, ".ssh", "id_ed25519")}}}
	case "KULE-SLOW":
		a.slow(w, r)
		return
	default:
		if isResult {
			a.mu.Lock()
			a.results = append(a.results, last)
			a.mu.Unlock()
			blocks = []any{"Done."}
		} else {
			blocks = []any{"Kule test reply."}
		}
	}
	if req.Stream {
		a.stream(w, req.Model, blocks)
	} else {
		a.whole(w, req.Model, blocks)
	}
}

type toolUse struct {
	Name  string
	Input map[string]any
}

func (a *anthropicServer) whole(w http.ResponseWriter, model string, blocks []any) {
	var content []any
	stop := "end_turn"
	for i, b := range blocks {
		switch b := b.(type) {
		case string:
			content = append(content, map[string]any{"type": "text", "text": b})
		case toolUse:
			content = append(content, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d", i), "name": b.Name, "input": b.Input})
			stop = "tool_use"
		}
	}
	w.Header().Set("content-type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"id": "msg_kule", "type": "message", "role": "assistant", "model": model, "content": content, "stop_reason": stop, "usage": map[string]any{"input_tokens": 12, "output_tokens": 7}})
}

func sse(w http.ResponseWriter, event string, data any) {
	b, _ := json.Marshal(data)
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

func (a *anthropicServer) stream(w http.ResponseWriter, model string, blocks []any) {
	w.Header().Set("content-type", "text/event-stream")
	sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_kule", "type": "message", "role": "assistant", "model": model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 12, "output_tokens": 1}}})
	stop := "end_turn"
	for i, b := range blocks {
		switch b := b.(type) {
		case string:
			sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": b}})
		case toolUse:
			stop = "tool_use"
			in, _ := json.Marshal(b.Input)
			sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_kule_%d", i), "name": b.Name, "input": map[string]any{}}})
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(in)}})
		}
		sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	sse(w, "message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 7}})
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
}

// slow starts a reply and holds it open until the client goes away.
func (a *anthropicServer) slow(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("content-type", "text/event-stream")
	sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_slow", "type": "message", "role": "assistant", "model": "m", "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 1, "output_tokens": 1}}})
	sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
	sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": "thinking slowly"}})
	select {
	case <-r.Context().Done():
	case <-time.After(2 * time.Minute):
	}
}

func TestClaudeCodeInTheSandbox(t *testing.T) {
	var model *anthropicServer
	e := newE2E(t, vendor{profile: "claude-code", host: "api.anthropic.com", keyVar: "ANTHROPIC_API_KEY",
		model: func(cwd, home string) http.Handler {
			model = &anthropicServer{cwd: cwd, home: home}
			return http.HandlerFunc(model.serve)
		}})

	// A turn that writes a file: the change shows in kule status, and the
	// step says what it changed.
	if res := e.turn("KULE-WRITE please"); res.StopReason != "end_turn" || !strings.Contains(e.text(), "Done.") {
		t.Errorf("write turn: %q, text %q", res.StopReason, e.text())
	}
	if got := e.copyFile("claude.txt"); got != "written by claude\n" || !e.statusHas("+ claude.txt") {
		t.Errorf("claude.txt in the copy %q, in status %v", got, e.statusHas("+ claude.txt"))
	}
	if s := e.stepChanging("claude.txt"); s == nil || s["kind"] != "edit" || s["status"] != "completed" {
		t.Errorf("no completed edit step with + claude.txt: %v", s)
	}

	// A shell tool call is a step with its command and its effect; the
	// shell the agent runs sees only a placeholder for the key.
	e.turn("KULE-BASH now")
	if got := e.copyFile("bash.txt"); !strings.HasPrefix(got, proxy.PlaceholderPrefix) {
		t.Errorf("bash.txt in the copy: %q (want the key's placeholder)", got)
	}
	if s := e.stepChanging("bash.txt"); s == nil || s["kind"] != "execute" || !strings.Contains(fmt.Sprint(s["command"]), "printenv ANTHROPIC_API_KEY") {
		t.Errorf("no execute step with its command and + bash.txt: %v", s)
	}

	// The model asks for ~/.ssh/id_ed25519: the agent gets nothing of it.
	e.turn("KULE-SSH read the key")
	model.mu.Lock()
	results := strings.Join(model.results, "\n")
	model.mu.Unlock()
	if !strings.Contains(results, "tool_result") {
		t.Errorf("the SSH read got no tool result back: %q", results)
	}
	e.checkSSH()

	// Usage: the prompt responses' usage and the usage_updates.
	var prompts, costs int
	for _, u := range e.usage() {
		if u["source"] == "prompt" && strings.Contains(mustJSON(u["tokens"]), `"totalTokens"`) {
			prompts++
		}
		if u["source"] == "usage_update" && u["cost"] != nil {
			costs++
		}
	}
	if prompts < 3 || costs == 0 {
		t.Errorf("usage.jsonl: %d prompt usages (want 3), %d usage_updates with cost", prompts, costs)
	}

	// Cancel ends the turn as cancelled.
	e.cancelled("KULE-SLOW think", "thinking slowly")

	// The real key reached the model server in x-api-key only.
	e.checkKey("x-api-key", "")
}

// Claude Code against a model on this machine's loopback (a LiteLLM
// gateway, Ollama's Anthropic API), reached the way a person's is: the
// built-in profile pointed at it with kule agents set claude-code
// base_url=http://127.0.0.1:PORT (ANTHROPIC_BASE_URL), approved; the
// agent in the sandbox, its requests through the task's proxy, which
// dials the named endpoint and puts the key in over plain HTTP.
func TestClaudeCodeAgainstALocalModel(t *testing.T) {
	var model *anthropicServer
	v := vendor{profile: "claude-code", host: "api.anthropic.com", keyVar: "ANTHROPIC_API_KEY",
		model: func(cwd, home string) http.Handler {
			model = &anthropicServer{cwd: cwd, home: home}
			return http.HandlerFunc(model.serve)
		}}
	e := newE2E(t, v)
	e.goLocal(v, "")
	if res := e.turn("KULE-WRITE please"); res.StopReason != "end_turn" || !strings.Contains(e.text(), "Done.") {
		t.Errorf("write turn: %q, text %q", res.StopReason, e.text())
	}
	if got := e.copyFile("claude.txt"); got != "written by claude\n" || !e.statusHas("+ claude.txt") {
		t.Errorf("claude.txt in the copy %q, in status %v", got, e.statusHas("+ claude.txt"))
	}
	e.turn("KULE-BASH now")
	if got := e.copyFile("bash.txt"); !strings.HasPrefix(got, proxy.PlaceholderPrefix) {
		t.Errorf("bash.txt in the copy: %q (want the key's placeholder)", got)
	}
	e.checkKey("x-api-key", "")
	e.checkLocal("api.anthropic.com")
}
