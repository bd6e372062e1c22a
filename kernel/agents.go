package kernel

import (
	"fmt"
	"io/fs"

	"github.com/kulehq/kule/kernel/internal/agents"
	"github.com/kulehq/kule/kernel/internal/extensions"
)

// Agents reads the agents this kernel may run: the built-in catalogue it was
// given (Config.Agents) and the person's $KULE_HOME/agents.toml, each profile
// checked (agents.Load). It reads them again at every call, so a profile the
// person just added or approved counts at once.
func (k *Kernel) Agents() (*agents.Set, error) {
	cat := k.cfg.Agents
	if cat == nil {
		cat = noAgents{}
	}
	return loadAgents(cat, k.Store().Root)
}

// loadAgents is agents.Load with the agent profiles of approved, enabled
// extensions after the person's. Each is a profile like one the person
// writes: checked the same way, and run only once `kule agents approve
// NAME` pinned it as it is (never built-in, whatever it says). A file that
// is not one [[agent]] of the name its manifest gives is left out, and the
// set's Skipped says why.
func loadAgents(builtins fs.FS, home string) (*agents.Set, error) {
	offered, err := extensions.New(home).OfferedAgents()
	var extra []agents.Profile
	var skipped []error
	if err != nil {
		skipped = append(skipped, fmt.Errorf("extensions: %w; no extension's agent profile is offered", err))
	}
	for _, o := range offered {
		source := "extension " + o.Extension + " (" + o.File + ")"
		ps, err := agents.Parse(o.Content, source)
		if err == nil && (len(ps) != 1 || ps[0].Name != o.Name) {
			err = fmt.Errorf("%w: %s: want one [[agent]] named %q", agents.ErrInvalid, source, o.Name)
		}
		if err != nil {
			skipped = append(skipped, err)
			continue
		}
		extra = append(extra, ps[0])
	}
	set, err := agents.LoadWith(builtins, home, extra)
	if err != nil {
		return nil, err
	}
	set.Skipped = append(set.Skipped, skipped...)
	return set, nil
}

// noAgents is an empty catalogue.
type noAgents struct{}

func (noAgents) Open(name string) (fs.File, error) {
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}
