package agentrun_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kulehq/kule/internal/npmtest"
	"github.com/kulehq/kule/kernel/agentrun"
	"github.com/kulehq/kule/kernel/internal/acp"
	"github.com/kulehq/kule/kernel/internal/agents"
)

// Agents built on the ACP TypeScript SDK (@agentclientprotocol/sdk, pinned),
// which need no model: the SDK's own example agent, and a small agent that
// writes through fs/*, runs a command through terminal/* and tries a file
// outside the copy. Each is a person's profile, approved, run in the sandbox.
const sdkPackage, sdkVersion = "@agentclientprotocol/sdk", "1.9.0"

func sdkFixture(t *testing.T, script string) *fixture {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test against the ACP SDK; -short skips it")
	}
	dir := npmtest.Package(t, sdkPackage, sdkVersion)
	needSandbox(t)
	var agent string
	switch script {
	case "example":
		agent = filepath.Join(dir, "node_modules", sdkPackage, "dist", "examples", "agent.js")
	case "writer":
		// Beside node_modules, so that its import of the SDK resolves.
		b, err := os.ReadFile("../internal/acp/testdata/sdk/writer-agent.mjs")
		if err != nil {
			t.Fatal(err)
		}
		agent = filepath.Join(dir, "writer-agent.mjs")
		if err := os.WriteFile(agent, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f := newFixture(t, "")
	profile := "[[agent]]\nname = \"peer\"\ncommand = [\"node\", " + quote(agent) + "]\n"
	if err := os.WriteFile(agents.PersonalPath(f.k.Store().Root), []byte(profile), 0o600); err != nil {
		t.Fatal(err)
	}
	f.set = f.load(t)
	f.approve(t)
	return f
}

func TestSDKExampleAgentInTheSandbox(t *testing.T) {
	f := sdkFixture(t, "example")
	r, err := agentrun.Start(context.Background(), f.k, f.t, f.options("improve the config"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != "end_turn" {
		t.Errorf("stop reason %q", res.StopReason)
	}
	if got := f.text(); !strings.Contains(got, "I'll help you with that") || !strings.Contains(got, "successfully updated the configuration") {
		t.Errorf("the agent's text: %q (the permission was not answered allow)", got)
	}
	steps := readLines(t, filepath.Join(f.t.Paths.Dir, acp.StepsFile))
	if len(steps) != 2 {
		t.Fatalf("steps %v", steps)
	}
	if steps[0]["id"] != "call_1" || steps[0]["kind"] != "read" || steps[0]["status"] != "completed" {
		t.Errorf("first step %v", steps[0])
	}
	perm, _ := steps[1]["permission"].([]any)
	if steps[1]["id"] != "call_2" || steps[1]["kind"] != "edit" || len(perm) != 1 || perm[0].(map[string]any)["kind"] != "allow_once" {
		t.Errorf("second step %v", steps[1])
	}
}

func TestSDKExampleAgentCancelInTheSandbox(t *testing.T) {
	f := sdkFixture(t, "example")
	r, err := agentrun.Start(context.Background(), f.k, f.t, f.options("improve the config"))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first tool call", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, e := range f.events {
			if e.Type == acp.EventStepStart {
				return true
			}
		}
		return false
	})
	r.Cancel()
	res, err := r.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != "cancelled" {
		t.Errorf("stop reason %q", res.StopReason)
	}
}

func TestSDKAgentWritesThroughKuleInTheSandbox(t *testing.T) {
	f := sdkFixture(t, "writer")
	r, err := agentrun.Start(context.Background(), f.k, f.t, f.options("say hi"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != "end_turn" {
		t.Errorf("stop reason %q", res.StopReason)
	}
	if b, err := os.ReadFile(filepath.Join(f.t.Paths.Copy, "hello.txt")); err != nil || string(b) != "hello from the sdk: say hi\n" {
		t.Errorf("hello.txt in the copy: %q %v", b, err)
	}
	if got := f.text(); got != "output=done outside=refused -32602 back=hello from the sdk: say hi" {
		t.Errorf("the agent saw: %q", got)
	}
	if st := effectsOf(res.Status); !strings.Contains(st, "+ hello.txt") || !strings.Contains(st, "+ cmd.txt") {
		t.Errorf("status after the turn: %s", st)
	}
	if _, err := os.Stat(filepath.Join(f.folder, "hello.txt")); err == nil {
		t.Error("the agent's file reached the folder before a commit")
	}
}
