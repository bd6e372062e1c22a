package acp

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kulehq/kule/internal/npmtest"
	"github.com/kulehq/kule/kernel/runner"
)

// The ACP TypeScript SDK at a pinned version: 1.9.0 is the last release whose
// npm package ships its example agent (dist/examples/agent.js).
const sdkPackage, sdkVersion = "@agentclientprotocol/sdk", "1.9.0"

func sdkAgent(t *testing.T, script string, mod func(*Options)) *harness {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test against the ACP SDK; -short skips it")
	}
	dir := npmtest.Package(t, sdkPackage, sdkVersion)
	var args []string
	switch script {
	case "example":
		args = []string{"node", filepath.Join(dir, "node_modules", sdkPackage, "dist", "examples", "agent.js")}
	case "writer":
		// Placed beside node_modules so that its import of the SDK resolves.
		b, err := os.ReadFile("testdata/sdk/writer-agent.mjs")
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "writer-agent.mjs")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		args = []string{"node", p}
	}
	return startPeer(t, "", func(o *Options) {
		o.Spec = runner.Spec{Args: args, Env: os.Environ()}
		o.CancelGrace = 10e9
		if mod != nil {
			mod(o)
		}
	})
}

func TestSDKExampleAgent(t *testing.T) {
	t.Parallel()
	h := sdkAgent(t, "example", nil)
	h.open(t)
	res, err := h.c.Prompt(context.Background(), "improve the config")
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != "end_turn" {
		t.Errorf("stop reason %q", res.StopReason)
	}
	if got := h.text(); !strings.Contains(got, "I'll help you with that") || !strings.Contains(got, "successfully updated the configuration") {
		t.Errorf("the agent's text: %q (the permission was not answered allow)", got)
	}
	steps := h.steps.lines(t)
	if len(steps) != 2 {
		t.Fatalf("steps %v", steps)
	}
	if steps[0]["id"] != "call_1" || steps[0]["kind"] != "read" || steps[0]["status"] != "completed" || mustJSON(steps[0]["paths"]) != `["/project/README.md"]` {
		t.Errorf("first step %v", steps[0])
	}
	perm, _ := steps[1]["permission"].([]any)
	if steps[1]["id"] != "call_2" || steps[1]["kind"] != "edit" || len(perm) != 1 || perm[0].(map[string]any)["kind"] != "allow_once" {
		t.Errorf("second step %v", steps[1])
	}
}

func TestSDKExampleAgentCancel(t *testing.T) {
	t.Parallel()
	h := sdkAgent(t, "example", nil)
	h.open(t)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		waitFor(t, "the first tool call", func() bool { return len(h.eventsOf(EventStepStart)) > 0 })
		cancel()
	}()
	res, err := h.c.Prompt(ctx, "improve the config")
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != "cancelled" {
		t.Errorf("stop reason %q", res.StopReason)
	}
	if err := h.c.Stop(); err != nil {
		t.Fatal(err)
	}
}

func TestSDKAgentWritesThroughKule(t *testing.T) {
	t.Parallel()
	h := sdkAgent(t, "writer", nil)
	h.open(t)
	res, err := h.c.Prompt(context.Background(), "say hi")
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != "end_turn" {
		t.Errorf("stop reason %q", res.StopReason)
	}
	if b, err := os.ReadFile(filepath.Join(h.copy, "hello.txt")); err != nil || string(b) != "hello from the sdk: say hi\n" {
		t.Errorf("hello.txt in the copy: %q %v", b, err)
	}
	if got := h.text(); got != "output=done outside=refused -32602 back=hello from the sdk: say hi" {
		t.Errorf("the agent saw: %q", got)
	}
	steps := h.steps.lines(t)
	if len(steps) != 2 {
		t.Fatalf("steps %v", steps)
	}
	want := map[string]string{"w1": "hello.txt", "x1": "cmd.txt"}
	for _, s := range steps {
		var effs []struct{ Kind, Path string }
		b, _ := json.Marshal(s["effects"])
		json.Unmarshal(b, &effs)
		if len(effs) != 1 || effs[0].Kind != "add" || effs[0].Path != want[s["id"].(string)] {
			t.Errorf("step %v changed %s, want + %s", s["id"], b, want[s["id"].(string)])
		}
	}
	if steps[1]["command"] != "echo made > cmd.txt" {
		t.Errorf("the shell step's command: %v", steps[1]["command"])
	}
}
