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

	"github.com/kulehq/kule/kernel/internal/proxy"
)

// Gemini CLI in ACP mode, at the version the built-in profile pins, against
// a scripted model server speaking the Gemini API (streamGenerateContent,
// SSE) at generativelanguage.googleapis.com behind the task's proxy.

// geminiServer: KULE-WRITE → write_file, KULE-BASH → run_shell_command,
// KULE-SSH → read_file of ~/.ssh/id_ed25519, KULE-SLOW → a reply that
// never ends. Side questions that want JSON of a schema get the least
// value that fits it.
type geminiServer struct {
	cwd, home string
	served    served
	mu        sync.Mutex
	responses []string // functionResponse parts the agent sent back
}

type gemRequest struct {
	Contents []struct {
		Role  string            `json:"role"`
		Parts []json.RawMessage `json:"parts"`
	} `json:"contents"`
	GenerationConfig struct {
		ResponseJSONSchema map[string]any `json:"responseJsonSchema"`
		ResponseSchema     map[string]any `json:"responseSchema"`
	} `json:"generationConfig"`
	Tools []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
}

func (g *geminiServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req gemRequest
	_ = json.Unmarshal(body, &req)
	var names []string
	for _, t := range req.Tools {
		for _, f := range t.FunctionDeclarations {
			names = append(names, f.Name)
		}
	}
	user, last := "", ""
	for i, c := range req.Contents {
		for _, p := range c.Parts {
			if c.Role == "user" {
				user += string(p)
			}
			if i == len(req.Contents)-1 {
				last += string(p)
			}
		}
	}
	if strings.Contains(last, "functionResponse") {
		g.mu.Lock()
		g.responses = append(g.responses, last)
		g.mu.Unlock()
	}
	marker := ""
	if len(names) > 0 {
		marker = g.served.pick(user, "KULE-WRITE", "KULE-BASH", "KULE-SSH", "KULE-SLOW")
	}
	if strings.Contains(r.URL.Path, ":countTokens") {
		fmt.Fprint(w, `{"totalTokens":10}`)
		return
	}
	var part any
	schema := req.GenerationConfig.ResponseJSONSchema
	if schema == nil {
		schema = req.GenerationConfig.ResponseSchema
	}
	if schema != nil {
		// Side questions (the model router, the next-speaker check) want
		// JSON of a schema: answer with the least object that fits it.
		b, _ := json.Marshal(fromSchema(schema))
		marker, part = "json", map[string]any{"text": string(b)}
	}
	if marker == "KULE-SLOW" {
		g.slow(w, r)
		return
	}
	switch marker {
	case "json":
	case "KULE-WRITE":
		part = map[string]any{"functionCall": map[string]any{"name": "write_file", "args": map[string]any{"file_path": filepath.Join(g.cwd, "gemini.txt"), "content": "written by gemini\n"}}}
	case "KULE-SSH":
		part = map[string]any{"functionCall": map[string]any{"name": "read_file", "args": map[string]any{"absolute_path": filepath.Join(g.home, ".ssh", "id_ed25519"), "file_path": filepath.Join(g.home, ".ssh", "id_ed25519")}}}
	case "KULE-BASH":
		part = map[string]any{"functionCall": map[string]any{"name": "run_shell_command", "args": map[string]any{"command": "echo from-gemini $GEMINI_API_KEY > gbash.txt", "description": "write gbash.txt"}}}
	default:
		text := "Kule test reply."
		if strings.Contains(last, "functionResponse") {
			text = "Done."
		}
		part = map[string]any{"text": text}
	}
	resp := map[string]any{
		"candidates":    []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{part}}, "finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]any{"promptTokenCount": 12, "candidatesTokenCount": 7, "totalTokenCount": 19},
		"modelVersion":  "gemini-kule-test",
	}
	b, _ := json.Marshal(resp)
	if strings.Contains(r.URL.Path, ":streamGenerateContent") {
		w.Header().Set("content-type", "text/event-stream")
		fmt.Fprintf(w, "data: %s\r\n\r\n", b)
		return
	}
	w.Header().Set("content-type", "application/json")
	w.Write(b)
}

// slow starts a streamed reply and holds it open until the client goes away.
func (g *geminiServer) slow(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("content-type", "text/event-stream")
	b, _ := json.Marshal(map[string]any{"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": "thinking slowly"}}}, "index": 0}}})
	fmt.Fprintf(w, "data: %s\r\n\r\n", b)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	select {
	case <-r.Context().Done():
	case <-time.After(2 * time.Minute):
	}
}

// fromSchema builds the smallest value a JSON schema (or Gemini's OpenAPI
// subset, with upper-case types) accepts.
func fromSchema(s map[string]any) any {
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	switch strings.ToLower(fmt.Sprint(s["type"])) {
	case "object":
		out := map[string]any{}
		props, _ := s["properties"].(map[string]any)
		for k, v := range props {
			if m, ok := v.(map[string]any); ok {
				out[k] = fromSchema(m)
			}
		}
		return out
	case "array":
		return []any{}
	case "integer", "number":
		if m, ok := s["minimum"].(float64); ok {
			return m
		}
		return 1
	case "boolean":
		return false
	}
	return "kule"
}

func TestGeminiCLIInTheSandbox(t *testing.T) {
	var model *geminiServer
	e := newE2E(t, vendor{profile: "gemini", host: "generativelanguage.googleapis.com", keyVar: "GEMINI_API_KEY",
		model: func(cwd, home string) http.Handler {
			model = &geminiServer{cwd: cwd, home: home}
			return http.HandlerFunc(model.serve)
		}})

	// Gemini CLI 0.61.0 cannot create a new file through ACP's
	// fs/write_text_file: its ACP connection rejects with the JSON-RPC
	// error object itself, which its ENOENT check (String(err)) cannot
	// read, so a missing file looks unreadable. Kule answers a missing
	// file with -32002 as ACP says (see docs/agents.md). The file
	// therefore exists before the turn and the agent rewrites it.
	if err := os.WriteFile(filepath.Join(e.task.Paths.Copy, "gemini.txt"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if res := e.turn("KULE-WRITE please"); res.StopReason != "end_turn" || !strings.Contains(e.text(), "Done.") {
		t.Errorf("write turn: %q, text %q", res.StopReason, e.text())
	}
	if got := e.copyFile("gemini.txt"); got != "written by gemini\n" || !e.statusHas("+ gemini.txt") {
		t.Errorf("gemini.txt in the copy %q, in status %v", got, e.statusHas("+ gemini.txt"))
	}
	if s := e.stepChanging("gemini.txt"); s == nil || s["kind"] != "edit" || s["status"] != "completed" || mustJSON(s["wrote"]) != `["gemini.txt"]` {
		t.Errorf("no completed edit step that wrote gemini.txt through kule: %v", s)
	}

	e.turn("KULE-BASH now")
	if got := e.copyFile("gbash.txt"); !strings.HasPrefix(got, "from-gemini "+proxy.PlaceholderPrefix) {
		t.Errorf("gbash.txt in the copy: %q (want the key's placeholder)", got)
	}
	if s := e.stepChanging("gbash.txt"); s == nil || s["kind"] != "execute" || s["status"] != "completed" {
		t.Errorf("no execute step with + gbash.txt: %v", s)
	}

	e.turn("KULE-SSH read the key")
	model.mu.Lock()
	responses := strings.Join(model.responses, "\n")
	model.mu.Unlock()
	if !strings.Contains(responses, "read_file") {
		t.Errorf("the SSH read got no function response back: %q", responses)
	}
	e.checkSSH()

	e.cancelled("KULE-SLOW think", "thinking slowly")
	for _, u := range e.usage() {
		t.Logf("usage %s", mustJSON(u))
	}
	e.checkKey("x-goog-api-key", "")
}

// Gemini CLI against a Gemini-API server on this machine's loopback (a
// gateway), pointed at with kule agents set gemini
// base_url=http://127.0.0.1:PORT (GOOGLE_GEMINI_BASE_URL), approved,
// reached through the task's proxy with the key put in by it.
func TestGeminiCLIAgainstALocalModel(t *testing.T) {
	var model *geminiServer
	v := vendor{profile: "gemini", host: "generativelanguage.googleapis.com", keyVar: "GEMINI_API_KEY",
		model: func(cwd, home string) http.Handler {
			model = &geminiServer{cwd: cwd, home: home}
			return http.HandlerFunc(model.serve)
		}}
	e := newE2E(t, v)
	e.goLocal(v, "")
	if err := os.WriteFile(filepath.Join(e.task.Paths.Copy, "gemini.txt"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if res := e.turn("KULE-WRITE please"); res.StopReason != "end_turn" || !strings.Contains(e.text(), "Done.") {
		t.Errorf("write turn: %q, text %q", res.StopReason, e.text())
	}
	if got := e.copyFile("gemini.txt"); got != "written by gemini\n" {
		t.Errorf("gemini.txt in the copy %q", got)
	}
	e.checkKey("x-goog-api-key", "")
	e.checkLocal("generativelanguage.googleapis.com")
}
