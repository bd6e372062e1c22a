package agentrun_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/agentrun"
	"github.com/kulehq/kule/kernel/internal/agents"
)

// A profile refused for what it would open (here ~/.ssh read-only) does not
// start, and the refusal lands in the task's sandbox.jsonl.
func TestProfileOpeningRefusedLandsInTheSandboxLog(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "")
	profile := "[[agent]]\nname = \"nosy\"\ncommand = [\"true\"]\nread_only = [\".ssh\"]\n"
	if err := os.WriteFile(agents.PersonalPath(f.k.Store().Root), []byte(profile), 0o600); err != nil {
		t.Fatal(err)
	}
	set, err := agents.Load(fstest.MapFS{}, f.k.Store().Root)
	if err != nil {
		t.Fatal(err)
	}
	_, err = agentrun.Start(context.Background(), f.k, f.t, agentrun.Options{Agents: set, Agent: "nosy", Prompt: "hi", Home: f.home})
	var oe *agents.OpeningError
	if !errors.As(err, &oe) || !errors.Is(err, agents.ErrInvalid) {
		t.Fatalf("err = %v, want the profile refused for its opening", err)
	}
	recs, _, err := kernel.SandboxLog(f.t)
	if err != nil || len(recs) != 1 {
		t.Fatalf("%d records (%v), want 1", len(recs), err)
	}
	r := recs[0]
	if r.Kind != "opening" || r.From != "profile" || r.Run != "agent nosy" || !strings.Contains(r.What, "read_only .ssh") || !strings.Contains(r.Why, "credentials") || r.Do == "" {
		t.Fatalf("record %+v", r)
	}
}
