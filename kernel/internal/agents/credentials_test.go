package agents

import (
	"slices"
	"testing"

	"github.com/kulehq/kule/kernel/internal/credentials"
)

// TestBuiltinLoginsAreHidden: the sandbox hides every agent's login from
// the runs of others and from plain commands by credentials.AgentLogins,
// since it knows no profiles; a built-in agent whose login is not on that
// list would have it readable by every `kule exec`.
func TestBuiltinLoginsAreHidden(t *testing.T) {
	t.Parallel()
	s := loadBuiltins(t, t.TempDir())
	if len(s.Profiles) == 0 {
		t.Fatal("no built-in profiles")
	}
	for _, p := range s.Profiles {
		for _, l := range p.Login {
			c, err := homePath(l)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(credentials.AgentLogins, c) {
				t.Errorf("%s's login ~/%s is not in credentials.AgentLogins", p.Name, c)
			}
		}
	}
}
