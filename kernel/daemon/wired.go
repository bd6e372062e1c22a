package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/effects"
	"github.com/kulehq/kule/kernel/group"
	"github.com/kulehq/kule/kernel/pluginhost"
	"github.com/kulehq/kule/kernel/policy"
	"github.com/kulehq/kule/kernel/review"
	"github.com/kulehq/kule/kernel/task"
)

// The hooks wired to the real kernel: the Cedar policy (the task's group's
// or the home's), the differs through the plugin host, and remembered rules
// in rules.cedar. `kule daemon` uses these; tests may use the static ones.

// CedarPolicy judges with kernel/policy, as `kule commit` does. Made with
// NewCedarPolicy it keeps each loaded policy until one of the files it was
// read from changes (a load parses Cedar: about 2 ms, for every task the
// list shows).
type CedarPolicy struct {
	K     *kernel.Kernel
	cache *engineCache
}

// NewCedarPolicy is a CedarPolicy that keeps loaded policies.
func NewCedarPolicy(k *kernel.Kernel) CedarPolicy {
	return CedarPolicy{K: k, cache: &engineCache{m: map[string]cachedEngine{}}}
}

type engineCache struct {
	mu sync.Mutex
	m  map[string]cachedEngine
}

type cachedEngine struct {
	sig string
	eng *policy.Engine
}

// signature says when a task's policy must be read again: the size, time
// and inode of every file its load reads.
func (p CedarPolicy) signature(t *task.Task) string {
	home := p.K.Store.Root
	files := []string{filepath.Join(home, "config.toml"), policy.PersonPath(home), policy.RulesPath(home),
		filepath.Join(home, "groups.json"), policy.FolderPath(t.Folder)}
	if t.Group != "" {
		files = append(files, group.Open(home).PolicyPath(t.Group))
	}
	var b strings.Builder
	for _, f := range files {
		if fi, err := os.Lstat(f); err == nil {
			st, _ := fi.Sys().(*syscall.Stat_t)
			ino := uint64(0)
			if st != nil {
				ino = st.Ino
			}
			fmt.Fprintf(&b, "%d.%d.%d;", fi.Size(), fi.ModTime().UnixNano(), ino)
		} else {
			b.WriteString("-;")
		}
	}
	return b.String()
}

func (p CedarPolicy) engine(t *task.Task) (*policy.Engine, error) {
	if p.cache == nil {
		return p.K.LoadPolicyFor(t)
	}
	key, sig := t.Group+"\x00"+t.Folder, p.signature(t)
	p.cache.mu.Lock()
	c, ok := p.cache.m[key]
	p.cache.mu.Unlock()
	if ok && c.sig == sig {
		return c.eng, nil
	}
	eng, err := p.K.LoadPolicyFor(t)
	if err != nil {
		return nil, err
	}
	p.cache.mu.Lock()
	p.cache.m[key] = cachedEngine{sig: sig, eng: eng}
	p.cache.mu.Unlock()
	return eng, nil
}

func (p CedarPolicy) ruling(t *task.Task, es []effects.Effect) (policy.Ruling, error) {
	eng, err := p.engine(t)
	if err != nil {
		return policy.Ruling{}, err
	}
	facts := policy.GatherFacts(t.Paths.Copy, t.Folder, es)
	return eng.Judge(kernel.TaskInfo(t), policy.FromEffects(es, facts)), nil
}

// Judge gives each effect the worst verdict of the requests about it.
func (p CedarPolicy) Judge(_ context.Context, t *task.Task, es []effects.Effect) (map[string]Ruling, error) {
	r, err := p.ruling(t, es)
	if err != nil {
		return nil, err
	}
	out := map[string]Ruling{}
	for _, v := range r.Verdicts {
		i := v.Request.Effect
		if i < 0 || i >= len(es) {
			continue
		}
		path := es[i].Path
		nv := verdictOf(v.Outcome)
		if old, ok := out[path]; ok && rank(old.Verdict) >= rank(nv) {
			continue
		}
		out[path] = Ruling{Verdict: nv, Rule: strings.Join(v.Rules, ", "), Reason: v.Reason}
	}
	return out, nil
}

// RememberPaths keeps the approval of the asked-about effects at paths in
// rules.cedar for the task's folder (Approve and remember from Review). It
// returns the rules added.
func (p CedarPolicy) RememberPaths(_ context.Context, t *task.Task, es []effects.Effect, paths []string) ([]string, error) {
	r, err := p.ruling(t, es)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, x := range paths {
		want[x] = true
	}
	var vs []policy.Verdict
	for _, v := range r.Verdicts {
		if i := v.Request.Effect; i >= 0 && i < len(es) && want[es[i].Path] {
			vs = append(vs, v)
		}
	}
	added, notKept, err := policy.Remember(p.K.Store.Root, t.Folder, vs)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, a := range added {
		out = append(out, a.String())
	}
	if len(notKept) > 0 {
		return out, fmt.Errorf("remember: %s cannot be written as a rule (approved this once only)", strings.Join(notKept, ", "))
	}
	return out, nil
}

func verdictOf(o policy.Outcome) Verdict {
	switch o {
	case policy.Pass:
		return Pass
	case policy.Ask:
		return Ask
	}
	return Deny
}

func rank(v Verdict) int {
	switch v {
	case Ask:
		return 1
	case Deny:
		return 2
	}
	return 0
}

// Rememberer is a Policy that can keep an approval given in Review.
type Rememberer interface {
	RememberPaths(ctx context.Context, t *task.Task, es []effects.Effect, paths []string) ([]string, error)
}

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
	_, err = policy.AllowHost(r.K.Store.Root, t.Folder, q.Subject)
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
	rs, err := policy.ReadRemembered(r.K.Store.Root)
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
	_ Policy     = CedarPolicy{}
	_ Rememberer = CedarPolicy{}
	_ Reviewer   = DiffReviewer{}
	_ Rules      = (*CedarRules)(nil)
)
