package daemon

import (
	"os"
	"testing"
	"testing/fstest"

	"github.com/kulehq/kule/kernel"
)

// TestAgentNeedingALoginCannotStart: an approved agent whose profile logs in with a key that
// is nowhere here (not set, not in kule secrets) is not said to start here, and says what it
// needs; with the guard off it would be offered as one that can.
func TestAgentNeedingALoginCannotStart(t *testing.T) {
	home := t.TempDir()
	must(t, os.WriteFile(kernel.PersonalAgentsPath(home), []byte("[[agent]]\nname = \"keyed\"\ncommand = [\"/bin/true\"]\nhosts = [\"api.example.com\"]\nkeys = { KULE_TEST_KEY_NEVER_SET = [\"api.example.com\"] }\n"), 0o600))
	set, err := kernel.LoadAgents(fstest.MapFS{}, home)
	must(t, err)
	for _, p := range set.Profiles {
		must(t, kernel.ApproveAgent(home, p, set.Profiles))
	}
	set, err = kernel.LoadAgents(fstest.MapFS{}, home)
	must(t, err)
	o := kernel.AgentCheckOptions{KuleHome: home, PackagesRoot: t.TempDir(), Home: t.TempDir()}
	view := func() AgentView {
		for _, v := range AgentViews(set, o) {
			if v.Name == "keyed" {
				return v
			}
		}
		t.Fatal("no view of the keyed agent")
		return AgentView{}
	}
	if v := view(); v.CanStart || v.Problem == "" {
		t.Fatalf("an agent without its key is said to start here: %+v", v)
	}
	t.Run("without the guard", func(t *testing.T) {
		needsLogin = false
		defer func() { needsLogin = true }()
		if v := view(); !v.CanStart {
			t.Fatalf("with the guard off the agent should be offered (the claim the guard keeps out): %+v", v)
		}
	})
}
