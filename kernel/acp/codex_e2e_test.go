package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kulehq/kule/internal/npmtest"
	"github.com/kulehq/kule/kernel/proxy"
	"github.com/kulehq/kule/kernel/runner"
)

// Codex over ACP (codex-acp, which drives `codex app-server`), at a pinned
// version, against a scripted model server on loopback speaking the OpenAI
// Responses API (streaming).
const codexPackage, codexVersion = "@agentclientprotocol/codex-acp", "2.6.0"

type responsesServer struct {
	srv    *httptest.Server
	cwd    string
	mu     sync.Mutex
	keys   []string
	log    []string
	served map[string]bool
}

func newResponsesServer(t *testing.T, cwd string) *responsesServer {
	s := &responsesServer{cwd: cwd, served: map[string]bool{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *responsesServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Model string            `json:"model"`
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
	all := string(body)
	last := ""
	if n := len(req.Input); n > 0 {
		last = string(req.Input[n-1])
	}
	s.mu.Lock()
	snip := last
	if len(snip) > 1200 {
		snip = snip[:1200] + "…"
	}
	s.log = append(s.log, fmt.Sprintf("%s %s tools=%v last=%s", r.Method, r.URL.Path, names, snip))
	s.keys = append(s.keys, r.Header.Get("authorization"))
	marker := ""
	if len(names) > 0 {
		for _, m := range []string{"KULE-BASH"} {
			if strings.Contains(all, m) && !s.served[m] {
				marker, s.served[m] = m, true
			}
		}
	}
	s.mu.Unlock()
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
	var item map[string]any
	switch {
	case marker == "KULE-BASH":
		tool, args := "shell", map[string]any{"command": []string{"bash", "-lc", "echo from-codex > codex.txt"}, "workdir": s.cwd}
		for _, n := range names {
			if strings.HasSuffix(n, ":exec_command") {
				tool, args = "exec_command", map[string]any{"cmd": "echo from-codex > codex.txt", "workdir": s.cwd}
			}
			if strings.HasSuffix(n, ":shell_command") {
				tool, args = "shell_command", map[string]any{"command": "echo from-codex > codex.txt", "workdir": s.cwd}
			}
		}
		a, _ := json.Marshal(args)
		item = map[string]any{"type": "function_call", "id": "fc_kule", "call_id": "call_kule", "name": tool, "arguments": string(a)}
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

func TestCodexThroughKule(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test against Codex; -short skips it")
	}
	dir := npmtest.Package(t, codexPackage, codexVersion)
	bin := filepath.Join(dir, "node_modules", codexPackage, "dist", "index.js")
	home := t.TempDir()
	codexHome := filepath.Join(home, ".codex")
	os.MkdirAll(codexHome, 0o700)
	var model *responsesServer
	h := startPeer(t, "", func(o *Options) {
		model = newResponsesServer(t, o.Copy)
		os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(fmt.Sprintf(
			"model = \"gpt-kule-test\"\nmodel_provider = \"kule\"\n[model_providers.kule]\nname = \"kule test\"\nbase_url = %q\nenv_key = \"OPENAI_API_KEY\"\nwire_api = \"responses\"\n", model.srv.URL+"/v1")), 0o600)
		o.Spec = runner.Spec{Args: []string{"node", bin}, Env: []string{
			"PATH=" + os.Getenv("PATH"),
			"HOME=" + home,
			"CODEX_HOME=" + codexHome,
			"OPENAI_API_KEY=sk-kule-codex-test",
			"NO_BROWSER=1",
		}}
		o.CancelGrace = 15 * time.Second
		o.Stderr = testWriter{t}
	})
	defer func() {
		if t.Failed() {
			t.Logf("model server saw:\n%s", strings.Join(model.log, "\n"))
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	info, err := h.c.Initialize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var methods []string
	for _, m := range info.AuthMethods {
		methods = append(methods, m.ID)
	}
	t.Logf("agent %q %q auth %v", info.Name, info.Version, methods)
	if _, err := h.c.NewSession(ctx); err != nil {
		t.Fatal(err)
	}
	// Codex's own sandbox (bubblewrap) is Kule's job here: the built-in
	// profile runs it in the mode without one, as the test does.
	if err := h.c.SetMode(ctx, "agent-full-access"); err != nil {
		t.Fatal(err)
	}
	res, err := h.c.Prompt(ctx, "KULE-BASH please")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stop %s text %q", res.StopReason, h.text())
	if err := h.c.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, s := range h.steps.lines(t) {
		t.Logf("step %s", mustJSON(s))
	}
	if b, err := os.ReadFile(filepath.Join(h.copy, "codex.txt")); err != nil || string(b) != "from-codex\n" {
		t.Errorf("codex.txt in the copy: %q %v", b, err)
	}
	if res.StopReason != "end_turn" || !strings.Contains(h.text(), "Done.") {
		t.Errorf("turn: %q, text %q", res.StopReason, h.text())
	}
	steps := h.steps.lines(t)
	if len(steps) != 1 || steps[0]["kind"] != "execute" || steps[0]["status"] != "completed" || steps[0]["command"] != "echo from-codex > codex.txt" || !strings.Contains(mustJSON(steps[0]["effects"]), `"path":"codex.txt"`) {
		t.Errorf("the shell step with its command and effect: %v", steps)
	}
	model.mu.Lock()
	for _, k := range model.keys {
		if k != "Bearer sk-kule-codex-test" {
			t.Errorf("credential header %q", k)
		}
	}
	model.mu.Unlock()
	for _, u := range h.usage.lines(t) {
		t.Logf("usage %s", mustJSON(u))
	}
}

// TestCodexKeyThroughProxy: Codex holds only a placeholder for
// OPENAI_API_KEY; the proxy puts the real key into the Authorization header
// of its requests to api.openai.com.
func TestCodexKeyThroughProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test against Codex; -short skips it")
	}
	dir := npmtest.Package(t, codexPackage, codexVersion)
	bin := filepath.Join(dir, "node_modules", codexPackage, "dist", "index.js")
	home := t.TempDir()
	codexHome := filepath.Join(home, ".codex")
	os.MkdirAll(codexHome, 0o700)
	const realKey = "sk-real-codex-key-never-in-the-agent"
	var model *responsesServer
	var px *proxy.Proxy
	h := startPeer(t, "", func(o *Options) {
		model = &responsesServer{cwd: o.Copy, served: map[string]bool{}}
		px = vendorBehindProxy(t, "api.openai.com", http.HandlerFunc(model.serve), "OPENAI_API_KEY", realKey, home)
		os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte("model = \"gpt-kule-test\"\n"), 0o600)
		env := append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "CODEX_HOME=" + codexHome, "NO_BROWSER=1"}, px.Env()...)
		for _, e := range env {
			if strings.Contains(e, realKey) {
				t.Fatalf("the agent's environment holds the key: %s", e)
			}
		}
		o.Spec = runner.Spec{Args: []string{"node", bin}, Env: env}
		o.CancelGrace = 15 * time.Second
		o.Stderr = testWriter{t}
	})
	defer func() {
		if t.Failed() {
			t.Logf("model server saw:\n%s", strings.Join(model.log, "\n"))
			t.Logf("proxy: %v", px.Summary())
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if _, err := h.c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	// Codex's own provider wants a login: the api-key method reads the
	// key variable, which holds the placeholder.
	if err := h.c.Authenticate(ctx, "api-key", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := h.c.NewSession(ctx); err != nil {
		t.Fatal(err)
	}
	if err := h.c.SetMode(ctx, "agent-full-access"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.c.Prompt(ctx, "KULE-BASH please"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(h.copy, "codex.txt")); err != nil || string(b) != "from-codex\n" {
		t.Errorf("codex.txt in the copy: %q %v", b, err)
	}
	model.mu.Lock()
	defer model.mu.Unlock()
	if len(model.keys) == 0 {
		t.Fatal("the model server was never reached")
	}
	for _, k := range model.keys {
		if k != "Bearer "+realKey {
			t.Errorf("authorization %q, want the real key", k)
		}
	}
}
