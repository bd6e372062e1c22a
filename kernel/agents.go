package kernel

import (
	"io/fs"

	"github.com/kulehq/kule/kernel/internal/agents"
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
	return agents.Load(cat, k.Store().Root)
}

// noAgents is an empty catalogue.
type noAgents struct{}

func (noAgents) Open(name string) (fs.File, error) {
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}
