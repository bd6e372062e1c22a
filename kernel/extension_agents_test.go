package kernel

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kulehq/kule/kernel/internal/agents"
	"github.com/kulehq/kule/sdk/extension"
)

// TestExtensionAgentProfileWaitsLikeAPersons: an approved extension's agent
// profile is offered in the agents, as a person's profile (never built
// in), and runs only once kule agents approve pinned it; with that
// approval taken as given (the profile trusted as a shipped one), it would
// run before it. It cannot take a person's profile's name, and a disabled
// extension's profile is not offered.
func TestExtensionAgentProfileWaitsLikeAPersons(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	k, err := New(Config{Home: home})
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "me.helper")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(src, 0o755))
	must(os.WriteFile(filepath.Join(src, "extension.json"), []byte(`{"id":"me.helper","name":"Helper","version":"0.1.0","permissions":["agents"],"agents":[{"name":"helper","file":"helper.toml"}]}`), 0o644))
	must(os.WriteFile(filepath.Join(src, "main.js"), []byte("1"), 0o644))
	must(os.WriteFile(filepath.Join(src, "helper.toml"), []byte("[[agent]]\nname = \"helper\"\ncommand = [\"helper-acp\"]\n"), 0o644))
	data, _, err := extension.Pack(src)
	must(err)
	s := NewExtensionStore(home)
	_, err = s.Install(data)
	must(err)
	find := func() (agents.Profile, bool) {
		t.Helper()
		set, err := k.Agents()
		must(err)
		p, err := set.Get("helper")
		return p, err == nil
	}
	if _, ok := find(); ok {
		t.Fatal("an unapproved extension's profile is offered")
	}
	_, err = s.Approve("me.helper", "")
	must(err)
	p, ok := find()
	if !ok || p.Builtin || !strings.HasPrefix(p.Source, "extension me.helper ") {
		t.Fatalf("the approved extension's profile: %+v, %v", p, ok)
	}
	if err := CheckAgentApproved(home, p); !errors.Is(err, agents.ErrNotApproved) {
		t.Fatalf("the profile runs before its own approval: %v", err)
	}
	st, err := s.Status("me.helper")
	must(err)
	if len(st.Parts) != 1 || st.Parts[0].Approved {
		t.Fatalf("kule ext show's part: %+v", st.Parts)
	}
	t.Run("guard off", func(t *testing.T) {
		trusted := p
		trusted.Builtin = true
		if err := CheckAgentApproved(home, trusted); err != nil {
			t.Fatalf("trusted as a shipped profile it should run: %v", err)
		}
	})
	set, err := k.Agents()
	must(err)
	must(ApproveAgent(home, p, set.Profiles))
	p, _ = find()
	if err := CheckAgentApproved(home, p); err != nil {
		t.Fatalf("after kule agents approve: %v", err)
	}
	st, err = s.Status("me.helper")
	must(err)
	if !st.Parts[0].Approved {
		t.Fatalf("kule ext show does not see the approval: %+v", st.Parts)
	}
	// A person's profile of that name comes first.
	must(os.WriteFile(filepath.Join(home, "agents.toml"), []byte("[[agent]]\nname = \"helper\"\ncommand = [\"mine-acp\"]\n"), 0o644))
	if p, _ := find(); strings.HasPrefix(p.Source, "extension ") {
		t.Fatalf("the extension's profile took the person's name: %+v", p)
	}
	must(os.Remove(filepath.Join(home, "agents.toml")))
	must(s.SetDisabled("me.helper", true))
	if _, ok := find(); ok {
		t.Fatal("a disabled extension's profile is offered")
	}
}
