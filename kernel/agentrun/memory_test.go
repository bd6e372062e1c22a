package agentrun_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/agentrun"
	"github.com/kulehq/kule/kernel/internal/acp"
	"github.com/kulehq/kule/kernel/internal/runner"
)

// memoryScript plays the memory tests' turns: "recall" keeps the prompt it
// was given in prompt.txt, asks one permission question and reports a
// cost; "recall-fail" does the same, then fails the turn.
func (p *peer) memoryScript(script string, id any, params map[string]any, cwd string) bool {
	if script != "recall" && script != "recall-fail" {
		return false
	}
	var prompt strings.Builder
	blocks, _ := params["prompt"].([]any)
	for _, b := range blocks {
		if m, ok := b.(map[string]any); ok {
			s, _ := m["text"].(string)
			prompt.WriteString(s)
		}
	}
	os.WriteFile(filepath.Join(cwd, "prompt.txt"), []byte(prompt.String()), 0o644)
	p.request("session/request_permission", map[string]any{"sessionId": "s1",
		"toolCall": map[string]any{"toolCallId": "q1", "title": "npm install", "rawInput": map[string]any{"command": "npm install"}},
		"options":  []any{map[string]any{"optionId": "yes", "name": "Allow", "kind": "allow_once"}, map[string]any{"optionId": "no", "name": "Deny", "kind": "reject_once"}}})
	p.update("s1", map[string]any{"sessionUpdate": "usage_update", "used": 10, "size": 100, "cost": map[string]any{"amount": 0.40, "currency": "USD"}})
	if script == "recall-fail" {
		p.send(map[string]any{"id": id, "error": map[string]any{"code": -32603, "message": "the model refused: npm ERR! missing script: build"}})
		return true
	}
	p.send(map[string]any{"id": id, "result": map[string]any{"stopReason": "end_turn", "usage": map[string]any{"inputTokens": 1000, "outputTokens": 234}}})
	return true
}

// TestAgentRunIsRemembered runs the scripted ACP agent through the kernel
// twice, failing then succeeding, and checks the records, the link between
// them, what recall returns and that the notes reach the agent after its
// prompt.
func TestAgentRunIsRemembered(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "recall-fail")
	f.approve(t)
	o := f.options("build the site")
	o.Runner = runner.Direct{}
	var asked []string
	o.Ask = func(ctx context.Context, q acp.Question) (string, error) {
		asked = append(asked, q.Title)
		return "yes", nil
	}
	r, err := agentrun.Start(ctx, f.k, f.t, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Wait(); err == nil {
		t.Fatal("the failing turn succeeded")
	}
	st, err := f.k.Memory()
	if err != nil {
		t.Fatal(err)
	}
	runs, err := st.Runs(ctx, kernel.MemoryFilter{Task: f.t.ID})
	if err != nil || len(runs) != 1 {
		t.Fatalf("records: %v %v", runs, err)
	}
	rec := runs[0]
	if rec.Kind != "agent" || rec.Agent != "peer" || rec.AgentVersion != "kule-test-peer 1.0" || rec.Prompt != "build the site" || rec.How != "failed" ||
		!strings.Contains(rec.ErrorTail, "missing script: build") || rec.Cost != 0.40 || rec.Currency != "USD" || rec.Session != "s1" {
		t.Fatalf("the failed run's record: %+v", rec)
	}
	if len(rec.Questions) != 1 || rec.Questions[0].Title != "npm install" || rec.Questions[0].Answer != "yes" {
		t.Fatalf("questions: %+v", rec.Questions)
	}

	// The next run: recall proposes a budget and hands the agent the
	// failure as a note after its prompt.
	recall, err := f.k.Recall(ctx, f.t, "build the site again")
	if err != nil {
		t.Fatal(err)
	}
	if recall.Proposed != 0.55 || len(recall.Notes) != 1 || !strings.Contains(recall.Text(), "missing script: build") {
		t.Fatalf("recall: %+v\n%s", recall, recall.Text())
	}
	g := newFixtureIn(t, f, "recall")
	o = g.options("build the site again")
	o.Runner = runner.Direct{}
	o.Notes = recall.Text()
	r, err = agentrun.Start(ctx, g.k, g.t, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Wait(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(g.t.Paths.Copy, "prompt.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(got), "build the site again\n\n---\n"+"Kule's notes from earlier runs") || !strings.Contains(string(got), "missing script: build") {
		t.Fatalf("the agent was given:\n%s", got)
	}
	runs, _ = st.Runs(ctx, kernel.MemoryFilter{Task: g.t.ID})
	if len(runs) != 2 || runs[0].How != "done" || runs[0].Prompt != "build the site again" || runs[0].Tokens != 1234 || runs[0].Effects["add"] == 0 {
		t.Fatalf("the second run's record: %+v", runs[0])
	}
	fs, err := st.Failures(ctx, kernel.MemoryFilter{Task: f.t.ID})
	if err != nil || len(fs) != 1 || len(fs[0].Links) != 1 || fs[0].Links[0].FixRunID != runs[0].ID {
		t.Fatalf("the success on the same task links to the failure: %+v %v", fs, err)
	}
}

// newFixtureIn is f's home and task with the peer playing script.
func newFixtureIn(t *testing.T, f *fixture, script string) *fixture {
	t.Helper()
	profile := "[[agent]]\nname = \"peer\"\ncommand = [" + quote(peerBinary(t)) + ", \"-test.run=^$\"]\n" +
		"env = { KULE_AGENTRUN_PEER = " + quote(script) + " }\n" +
		"keys = { TEST_KEY = [\"model.test\"] }\n"
	if err := os.WriteFile(filepath.Join(f.k.Store().Root, "agents.toml"), []byte(profile), 0o600); err != nil {
		t.Fatal(err)
	}
	g := &fixture{k: f.k, t: f.t, home: f.home, folder: f.folder}
	g.set = g.load(t)
	g.approve(t)
	return g
}
