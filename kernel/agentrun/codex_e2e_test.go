package agentrun_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kulehq/kule/kernel/agentrun"
	"github.com/kulehq/kule/kernel/internal/proxy"
)

// Codex over ACP (codex-acp, which drives `codex app-server`), at the
// version the built-in profile pins, against a scripted model server
// speaking the OpenAI Responses API (streaming) at api.openai.com behind the
// task's proxy.

// responsesServer answers /v1/responses. KULE-BASH → a shell call that
// writes codex.txt with the key variable the shell sees, KULE-SSH → a shell
// call that reads ~/.ssh/id_ed25519, KULE-SLOW → a reply that never ends.
type responsesServer struct {
	cwd, home string
	served    served
	mu        sync.Mutex
	outputs   []string // function_call_output items the agent sent back
}

func (s *responsesServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Input []json.RawMessage `json:"input"`
		Tools []struct {
			Type string `json:"type"`
			Name string `json:"name"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(body, &req)
	var names []string
	for _, t := range req.Tools {
		names = append(names, t.Type+":"+t.Name)
	}
	last := ""
	if n := len(req.Input); n > 0 {
		last = string(req.Input[n-1])
	}
	if strings.Contains(last, "function_call_output") {
		s.mu.Lock()
		s.outputs = append(s.outputs, last)
		s.mu.Unlock()
	}
	marker := ""
	if len(names) > 0 {
		marker = s.served.pick(string(body), "KULE-BASH", "KULE-SSH", "KULE-SLOW")
	}
	if !strings.HasSuffix(r.URL.Path, "/responses") {
		w.WriteHeader(404)
		return
	}
	w.Header().Set("content-type", "text/event-stream")
	ev := func(typ string, v map[string]any) {
		v["type"] = typ
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	ev("response.created", map[string]any{"response": map[string]any{"id": "resp_kule"}})
	shell := func(cmd string) map[string]any {
		tool, args := "shell", map[string]any{"command": []string{"bash", "-lc", cmd}, "workdir": s.cwd}
		for _, n := range names {
			if strings.HasSuffix(n, ":exec_command") {
				tool, args = "exec_command", map[string]any{"cmd": cmd, "workdir": s.cwd}
			}
			if strings.HasSuffix(n, ":shell_command") {
				tool, args = "shell_command", map[string]any{"command": cmd, "workdir": s.cwd}
			}
		}
		a, _ := json.Marshal(args)
		return map[string]any{"type": "function_call", "id": "fc_kule", "call_id": "call_kule_" + randHex(4), "name": tool, "arguments": string(a)}
	}
	var item map[string]any
	switch marker {
	case "KULE-BASH":
		item = shell("echo from-codex $OPENAI_API_KEY > codex.txt")
	case "KULE-SSH":
		item = shell("cat " + filepath.Join(s.home, ".ssh", "id_ed25519"))
	case "KULE-SLOW":
		ev("response.output_item.added", map[string]any{"output_index": 0, "item": map[string]any{"type": "message", "id": "msg_slow", "role": "assistant", "content": []any{}}})
		ev("response.output_text.delta", map[string]any{"output_index": 0, "content_index": 0, "item_id": "msg_slow", "delta": "thinking slowly"})
		select {
		case <-r.Context().Done():
		case <-time.After(2 * time.Minute):
		}
		return
	default:
		text := "Kule test reply."
		if strings.Contains(last, "function_call_output") {
			text = "Done."
		}
		item = map[string]any{"type": "message", "id": "msg_kule", "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}
		ev("response.output_item.added", map[string]any{"output_index": 0, "item": map[string]any{"type": "message", "id": "msg_kule", "role": "assistant", "content": []any{}}})
		ev("response.output_text.delta", map[string]any{"output_index": 0, "content_index": 0, "item_id": "msg_kule", "delta": text})
	}
	ev("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	ev("response.completed", map[string]any{"response": map[string]any{"id": "resp_kule", "usage": map[string]any{"input_tokens": 12, "input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens": 7, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 19}}})
}

func TestCodexInTheSandbox(t *testing.T) {
	var model *responsesServer
	e := newE2E(t, vendor{profile: "codex", host: "api.openai.com", keyVar: "OPENAI_API_KEY",
		model: func(cwd, home string) http.Handler {
			model = &responsesServer{cwd: cwd, home: home}
			return http.HandlerFunc(model.serve)
		}})
	// Codex's home of its own (own_home) gets a model name, as a person
	// would set one.
	e.extra = func(o *agentrun.Options) {
		dir := filepath.Join(o.HomesRoot, "codex")
		os.MkdirAll(dir, 0o700)
		os.WriteFile(filepath.Join(dir, "config.toml"), []byte("model = \"gpt-kule-test\"\n"), 0o600)
	}

	// A shell tool call writes a file: a step with its command and effect,
	// the change in kule status, and the shell saw only a placeholder.
	if res := e.turn("KULE-BASH please"); res.StopReason != "end_turn" || !strings.Contains(e.text(), "Done.") {
		t.Errorf("turn: %q, text %q", res.StopReason, e.text())
	}
	if got := e.copyFile("codex.txt"); !strings.HasPrefix(got, "from-codex "+proxy.PlaceholderPrefix) || !e.statusHas("+ codex.txt") {
		t.Errorf("codex.txt in the copy: %q (want the key's placeholder), in status %v", got, e.statusHas("+ codex.txt"))
	}
	if s := e.stepChanging("codex.txt"); s == nil || s["kind"] != "execute" || s["status"] != "completed" || !strings.Contains(fmt.Sprint(s["command"]), "echo from-codex") {
		t.Errorf("the shell step with its command and effect: %v", s)
	}

	// The model asks for ~/.ssh/id_ed25519: the shell gets nothing of it.
	e.turn("KULE-SSH read the key")
	model.mu.Lock()
	outputs := strings.Join(model.outputs, "\n")
	model.mu.Unlock()
	if strings.Count(outputs, "function_call_output") < 2 {
		t.Errorf("the SSH read's output never came back: %q", outputs)
	}
	e.checkSSH()

	if len(e.usage()) == 0 {
		t.Errorf("usage.jsonl is empty")
	}
	e.cancelled("KULE-SLOW think", "thinking slowly")
	e.checkKey("authorization", "Bearer ")
}

// Codex against an OpenAI-style server on this machine's loopback (Ollama,
// vLLM, LM Studio, a LiteLLM gateway), pointed at with kule agents set
// codex base_url=http://127.0.0.1:PORT/v1 (OPENAI_BASE_URL), approved,
// reached through the task's proxy with the key put in by it.
func TestCodexAgainstALocalModel(t *testing.T) {
	var model *responsesServer
	v := vendor{profile: "codex", host: "api.openai.com", keyVar: "OPENAI_API_KEY",
		model: func(cwd, home string) http.Handler {
			model = &responsesServer{cwd: cwd, home: home}
			return http.HandlerFunc(model.serve)
		}}
	e := newE2E(t, v)
	e.goLocal(v, "/v1")
	e.extra = func(o *agentrun.Options) {
		dir := filepath.Join(o.HomesRoot, "codex")
		os.MkdirAll(dir, 0o700)
		os.WriteFile(filepath.Join(dir, "config.toml"), []byte("model = \"gpt-kule-test\"\n"), 0o600)
	}
	if res := e.turn("KULE-BASH please"); res.StopReason != "end_turn" || !strings.Contains(e.text(), "Done.") {
		t.Errorf("turn: %q, text %q", res.StopReason, e.text())
	}
	if got := e.copyFile("codex.txt"); !strings.HasPrefix(got, "from-codex "+proxy.PlaceholderPrefix) || !e.statusHas("+ codex.txt") {
		t.Errorf("codex.txt in the copy: %q (want the key's placeholder), in status %v", got, e.statusHas("+ codex.txt"))
	}
	e.checkKey("authorization", "Bearer ")
	e.checkLocal("api.openai.com")
}
