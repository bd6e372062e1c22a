package agentrun_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kulehq/kule/kernel/internal/acp"
	"github.com/kulehq/kule/kernel/internal/extensions"
	"github.com/kulehq/kule/sdk/extension"
)

// An extension's MCP server offered to a real agent: Claude Code (through
// its ACP adapter) gets it in session/new only once the extension and the
// server each have their approval, starts it itself inside the task's
// sandbox, and calls its tool when the model asks. The model is the only
// fake; the MCP server is a real stdio server run by node.

// probeServer is the MCP server: newline-delimited JSON-RPC on stdio, one
// tool, "look", that writes mcp.txt in its working directory (the task's
// copy, if it runs where the agent runs) and says whether it could read
// the person's SSH key (it must not: the sandbox hides it).
const probeServer = `
const fs = require('fs');
const rl = require('readline').createInterface({ input: process.stdin });
const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
rl.on('line', (line) => {
  let m; try { m = JSON.parse(line); } catch { return; }
  if (m.id === undefined) return;
  switch (m.method) {
  case 'initialize':
    return send({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'probe', version: '1.0.0' } } });
  case 'tools/list':
    return send({ jsonrpc: '2.0', id: m.id, result: { tools: [{ name: 'look', description: 'Look around and say what you see', inputSchema: { type: 'object', properties: { word: { type: 'string' } }, required: ['word'] } }] } });
  case 'tools/call': {
    fs.writeFileSync('mcp.txt', 'the probe ran here\n');
    let ssh = 'hidden';
    try { fs.readFileSync(process.argv[1]); ssh = 'READ'; } catch {}
    return send({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: 'probe-answer word=' + m.params.arguments.word + ' ssh=' + ssh }] } });
  }
  default:
    return send({ jsonrpc: '2.0', id: m.id, result: {} });
  }
});
`

// mcpModel asks for the probe's tool when the prompt says KULE-MCP and the
// agent offers the tool. Claude Code defers an MCP server's tools: the
// request names them, and the model loads one with its ToolSearch tool
// before it can call it, as a real model does. mcpModel records whether a
// request offered the probe and what the tool answered; anything else goes
// to the Anthropic stand-in.
type mcpModel struct {
	inner            *anthropicServer
	mu               sync.Mutex
	offered          bool
	searched, called bool
	got              []string
}

const probeTool = "mcp__probe__look"

func (m *mcpModel) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(strings.NewReader(string(body)))
	var req anthRequest
	if !strings.HasSuffix(r.URL.Path, "/v1/messages") || json.Unmarshal(body, &req) != nil || len(req.Tools) == 0 || strings.Contains(string(body), "You are a security monitor") {
		m.inner.serve(w, r)
		return
	}
	loaded, search := false, false
	for _, t := range req.Tools {
		loaded = loaded || t.Name == probeTool
		search = search || t.Name == "ToolSearch"
	}
	last := ""
	if n := len(req.Messages); n > 0 {
		last = string(req.Messages[n-1].Content)
	}
	m.mu.Lock()
	named := strings.Contains(string(body), probeTool)
	m.offered = m.offered || named
	var blocks []any
	switch {
	case !named || !strings.Contains(string(body), "KULE-MCP"):
	case strings.Contains(last, "probe-answer"):
		m.got = append(m.got, last)
	case loaded && !m.called:
		m.called = true
		blocks = []any{"Asking the probe.", toolUse{probeTool, map[string]any{"word": "hello"}}}
	case search && !m.searched:
		m.searched = true
		blocks = []any{toolUse{"ToolSearch", map[string]any{"query": "select:" + probeTool, "max_results": 1}}}
	}
	m.mu.Unlock()
	if blocks == nil {
		m.inner.serve(w, r)
		return
	}
	if req.Stream {
		m.inner.stream(w, req.Model, blocks)
	} else {
		m.inner.whole(w, req.Model, blocks)
	}
}

// offeredProbe says whether any request of the turns so far offered the
// model the probe's tool.
func (m *mcpModel) offeredProbe() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.offered
}

func TestClaudeCodeGetsAnApprovedMCPServer(t *testing.T) {
	var model *mcpModel
	e := newE2E(t, vendor{profile: "claude-code", host: "api.anthropic.com", keyVar: "ANTHROPIC_API_KEY",
		model: func(cwd, home string) http.Handler {
			model = &mcpModel{inner: &anthropicServer{cwd: cwd, home: home}}
			return http.HandlerFunc(model.serve)
		}})

	// The extension offers the probe; node runs it with the person's SSH
	// key's path as its argument (what it tries to read).
	src := t.TempDir()
	manifest := map[string]any{
		"id": "kule-test.probe", "name": "Probe", "version": "1.0.0", "description": "An MCP server for the test.",
		"permissions": []string{"mcp"},
		"mcp_servers": []any{map[string]any{"name": "probe", "command": []string{"node", "-e", probeServer, filepath.Join(e.home, ".ssh", "id_ed25519")}}},
	}
	mb, _ := json.Marshal(manifest)
	if err := os.WriteFile(filepath.Join(src, "extension.json"), mb, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "main.js"), []byte("// nothing runs in the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	data, _, err := extension.Pack(src)
	if err != nil {
		t.Fatal(err)
	}
	store := extensions.New(e.k.Store().Root)
	if _, err := store.Install(data); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Approve("kule-test.probe", ""); err != nil {
		t.Fatal(err)
	}

	// The extension is approved, its server is not: the agent is not
	// offered it, and the person is told why.
	e.turn("KULE-MCP before the server's approval")
	if model.offeredProbe() {
		t.Fatal("the agent was offered an MCP server that waits for its own approval")
	}
	if !e.noticed("waits for its own approval") {
		t.Error("no notice said the MCP server waits for its approval")
	}
	if _, err := os.Stat(filepath.Join(e.task.Paths.Copy, "mcp.txt")); err == nil {
		t.Fatal("the unapproved MCP server ran")
	}

	// Approved: offered in session/new, started by the agent in the
	// sandbox, its tool called, its answer back to the model.
	if _, err := store.ApprovePart("kule-test.probe", "mcp", "probe"); err != nil {
		t.Fatal(err)
	}
	if res := e.turn("KULE-MCP now"); res.StopReason != "end_turn" {
		t.Errorf("the MCP turn ended %q", res.StopReason)
	}
	if !model.offeredProbe() {
		t.Fatal("the approved MCP server's tool was not offered to the model")
	}
	model.mu.Lock()
	got := strings.Join(model.got, "\n")
	model.mu.Unlock()
	if !strings.Contains(got, "probe-answer word=hello") {
		t.Fatalf("the probe's answer did not reach the model: %q", got)
	}
	if !strings.Contains(got, "ssh=hidden") {
		t.Errorf("the MCP server read the person's SSH key: %q", got)
	}
	// It ran where the agent runs: its write is in the task's copy, a
	// change for the person to review, and not in the folder.
	if e.copyFile("mcp.txt") != "the probe ran here\n" || !e.statusHas("+ mcp.txt") {
		t.Errorf("mcp.txt in the copy %q, in status %v", e.copyFile("mcp.txt"), e.statusHas("+ mcp.txt"))
	}
	if _, err := os.Stat(filepath.Join(e.folder, "mcp.txt")); err == nil {
		t.Error("the MCP server wrote into the person's folder")
	}
}

// noticed says whether a notice of the turns so far holds s.
func (e *e2e) noticed(s string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ev := range e.events {
		if ev.Type == acp.EventNotice && strings.Contains(ev.Text, s) {
			return true
		}
	}
	return false
}
