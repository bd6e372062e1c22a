package daemon

import (
	"context"

	"github.com/kulehq/kule/kernel"
)

// The hooks wired to the real kernel: the differs through the plugin host,
// and remembered rules in rules.cedar. `kule daemon` uses these; tests may
// use the static ones. (The policy is the kernel's own: judging.go.)

// DiffReviewer names changed entities with the differs of a plugin host,
// each running out of process. Hosts, when set, is the daemon's one host
// (kule daemon sets it; the daemon closes it when it stops); otherwise
// Open makes a host for each review.
type DiffReviewer struct {
	Open  func() *kernel.PluginHost
	Hosts *SharedHost
	Max   int64 // the largest file read; 0 = 8 MiB
}

// Close ends the shared host's plugins (the daemon calls it as it stops).
func (r DiffReviewer) Close() error {
	if r.Hosts != nil {
		return r.Hosts.Close()
	}
	return nil
}

// Entities reads old and new contents of each reviewable effect and names
// what changed inside.
func (r DiffReviewer) Entities(ctx context.Context, t *kernel.Task, st *kernel.Status) (map[string][]string, error) {
	if r.Open == nil && r.Hosts == nil {
		return nil, nil
	}
	max := r.Max
	if max == 0 {
		max = 8 << 20
	}
	return kernel.EntitiesOf(ctx, st, max, func() (*kernel.PluginHost, func()) {
		if r.Hosts != nil {
			return r.Hosts.acquire()
		}
		h := r.Open()
		return h, func() { h.Close() }
	}), nil
}

// CedarRules keeps "Approve and remember" of a connection as a rule in
// rules.cedar for the task's folder (so `kule rules` lists it and the next
// run's proxy lets it pass); other kinds are remembered while the daemon runs.
type CedarRules struct {
	K   *kernel.Kernel
	mem MemoryRules
}

// Remember keeps q's approval.
func (r *CedarRules) Remember(q Question) error {
	if q.Kind != KindConnection {
		return r.mem.Remember(q)
	}
	t, err := r.K.Resolve(q.Task)
	if err != nil {
		return err
	}
	return r.K.RememberHost(t, q.Subject)
}

// Allows reports whether a question like q was remembered.
func (r *CedarRules) Allows(q Question) bool {
	if q.Kind != KindConnection {
		return r.mem.Allows(q)
	}
	t, err := r.K.Resolve(q.Task)
	if err != nil {
		return false
	}
	return r.K.HostRemembered(t, q.Subject)
}

// KindConnection is the kind of a question about a connection.
const KindConnection = "connection"

// KindPermission is the kind of an agent's permission request.
const KindPermission = "permission"

var (
	_ Reviewer = DiffReviewer{}
	_ Rules    = (*CedarRules)(nil)
)
