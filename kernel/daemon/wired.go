package daemon

import (
	"context"
	"fmt"
	"strings"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/internal/pluginhost"
	"github.com/kulehq/kule/kernel/internal/policy"
	"github.com/kulehq/kule/kernel/internal/review"
	"github.com/kulehq/kule/kernel/internal/task"
)

// The hooks wired to the real kernel: the differs through the plugin host,
// and remembered rules in rules.cedar. `kule daemon` uses these; tests may
// use the static ones. (The policy is the kernel's own: judging.go.)

// DiffReviewer names changed entities with the differs of a plugin host,
// each running out of process. Hosts, when set, is the daemon's one host
// (kule daemon sets it; the daemon closes it when it stops); otherwise
// Open makes a host for each review.
type DiffReviewer struct {
	Open  func() *pluginhost.Host
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
func (r DiffReviewer) Entities(ctx context.Context, t *task.Task, st *kernel.Status) (map[string][]string, error) {
	if r.Open == nil && r.Hosts == nil {
		return nil, nil
	}
	max := r.Max
	if max == 0 {
		max = 8 << 20
	}
	cs := kernel.ChangesOf(st, max)
	if len(cs) == 0 {
		return nil, nil
	}
	var h *pluginhost.Host
	if r.Hosts != nil {
		var release func()
		h, release = r.Hosts.acquire()
		defer release()
	} else {
		h = r.Open()
		defer h.Close()
	}
	rv := review.Compute(ctx, review.FromHost(h), cs)
	out := map[string][]string{}
	for _, f := range rv.Files {
		for _, en := range f.Entities {
			out[f.Path] = append(out[f.Path], en.String())
		}
	}
	return out, nil
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
	_, err = policy.AllowHost(r.K.Store().Root, t.Folder, q.Subject)
	return err
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
	h, port, err := policy.SplitHostPort(q.Subject)
	if err != nil {
		return false
	}
	rs, err := policy.ReadRemembered(r.K.Store().Root)
	if err != nil {
		return false
	}
	want := fmt.Sprintf("%s:%d", h, port)
	for _, x := range rs {
		if x.Host && x.Subject == want && sameFolder(x.Rule.Folder, t.Folder) {
			return true
		}
	}
	return false
}

func sameFolder(a, b string) bool { return strings.TrimSuffix(a, "/") == strings.TrimSuffix(b, "/") }

// KindConnection is the kind of a question about a connection.
const KindConnection = "connection"

// KindPermission is the kind of an agent's permission request.
const KindPermission = "permission"

var (
	_ Reviewer = DiffReviewer{}
	_ Rules    = (*CedarRules)(nil)
)
