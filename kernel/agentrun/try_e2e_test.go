package agentrun_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kulehq/kule/internal/npmtest"
	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/agentrun"
	"github.com/kulehq/kule/kernel/internal/agents"
	"github.com/kulehq/kule/kernel/internal/runner"
)

// kule agents try NAME on each built-in agent, as a new user would: an
// empty folder, nothing of the home opened, no key, a home of the
// trial's own. Each agent starts and asks for its model's host, which the
// trial lists.
func TestTryListsTheHostsOfEachBuiltInAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end trial of the real agents; -short skips it")
	}
	root := npmtest.AgentsRoot(t)
	needSandbox(t)
	for name, host := range map[string]string{"claude-code": "api.anthropic.com", "codex": "api.openai.com", "gemini": "generativelanguage.googleapis.com"} {
		t.Run(name, func(t *testing.T) {
			home, err := os.MkdirTemp(filepath.Dir(root), "kule-try-home-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(home) })
			t.Setenv("HOME", home)
			k, err := kernel.New(kernel.Config{Home: filepath.Join(t.TempDir(), "kule")})
			if err != nil {
				t.Fatal(err)
			}
			set, err := agents.Load(os.DirFS("../../plugins/agent"), k.Store().Root)
			if err != nil {
				t.Fatal(err)
			}
			p, err := set.Get(name)
			if err != nil {
				t.Fatal(err)
			}
			if need := agents.NodeNeed(p, root); need != "" {
				npmtest.NodeOnPath(t) // the Node the agent asks for
			}
			if need := agents.NodeNeed(p, root); need != "" {
				if os.Getenv("CI") != "" {
					t.Fatalf("CI must have the Node the agent needs: %s", need)
				}
				t.Skipf("the agent cannot start here: %s", need)
			}
			rep, err := agentrun.Try(context.Background(), k, agentrun.Options{
				Agents: set, Trial: &p, Prompt: "say hello", Home: home,
				PackagesRoot: root, TrialTime: time.Minute, Stderr: testWriter{t},
			})
			if err != nil {
				t.Fatal(err)
			}
			// Its model's host is listed, passed (the policy's rule for
			// model APIs) or refused; with no key it gets no answer.
			if !slices.ContainsFunc(rep.Hosts, func(h agentrun.Host) bool { return h.Host == host && h.Port == 443 }) {
				t.Errorf("the trial of %s lists %+v (turn: %v), not %s", name, rep.Hosts, rep.Err, host)
			}
			if b, err := os.ReadDir(home); err != nil || len(b) != 0 {
				t.Errorf("the trial wrote into the person's home: %v %v", b, err)
			}
		})
	}
}

// A trial that does not end is stopped at its time, and still lists what
// it reached for.
func TestTryStopsAtItsTime(t *testing.T) {
	f := newFixture(t, "slow")
	p, err := f.set.Get("peer")
	if err != nil {
		t.Fatal(err)
	}
	o := f.options("go")
	o.Trial = &p
	o.Runner = runner.Direct{}
	o.TrialTime = 200 * time.Millisecond
	rep, err := agentrun.Try(context.Background(), f.k, o)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(rep.Err, agentrun.ErrTrialTime) || !strings.Contains(rep.Err.Error(), "ran out") {
		t.Errorf("the trial ended with %v, %q", rep.Err, rep.Result.StopReason)
	}
}
