package daemon

import (
	"context"
	"strings"
	"sync"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/effects"
	"github.com/kulehq/kule/kernel/task"
)

// Verdict is the policy's word on one effect or connection.
type Verdict string

// The three verdicts of ARCHITECTURE.md §6.
const (
	Pass Verdict = "pass" // goes in with a plain commit
	Ask  Verdict = "ask"  // waits for a person: "Approve and commit" takes it in
	Deny Verdict = "deny" // never committed; stays in the copy
)

// Ruling is a verdict on one path, with the rule that gave it.
type Ruling struct {
	Verdict Verdict `json:"verdict"`
	Rule    string  `json:"rule,omitempty"`   // the policy's @id
	Reason  string  `json:"reason,omitempty"` // what a person reads
}

// Policy judges a task's effects. The real one is kernel/policy (Cedar); the
// lead wires it in Config.Policy. A path missing from the answer passes.
type Policy interface {
	Judge(ctx context.Context, t *task.Task, es []effects.Effect) (map[string]Ruling, error)
}

// Reviewer names what changed inside a changed file (functions, sections,
// keys): kernel/review's differs. A path missing from the answer has no names.
type Reviewer interface {
	Entities(ctx context.Context, t *task.Task, st *kernel.Status) (map[string][]string, error)
}

// Rules keeps the approvals a person asked to remember ("Approve and
// remember"). The real one writes rules.cedar; Allows lets a remembered
// question pass without asking again.
type Rules interface {
	Remember(q Question) error
	Allows(q Question) bool
}

// PassAll is the policy used when none is wired: every effect passes.
type PassAll struct{}

// Judge passes everything.
func (PassAll) Judge(context.Context, *task.Task, []effects.Effect) (map[string]Ruling, error) {
	return nil, nil
}

// StaticPolicy is an in-memory policy: verdicts by path glob suffix or exact
// path, for tests and for trying the app without kernel/policy.
type StaticPolicy struct {
	// ByPath maps an exact path, or "*.ext", or "dir/" (a prefix), to a ruling.
	ByPath map[string]Ruling
}

// Judge looks each effect's path up.
func (p StaticPolicy) Judge(_ context.Context, _ *task.Task, es []effects.Effect) (map[string]Ruling, error) {
	out := map[string]Ruling{}
	for _, e := range es {
		for k, r := range p.ByPath {
			switch {
			case k == e.Path,
				strings.HasPrefix(k, "*.") && strings.HasSuffix(e.Path, k[1:]),
				strings.HasSuffix(k, "/") && strings.HasPrefix(e.Path, k):
				out[e.Path] = r
			}
		}
	}
	return out, nil
}

// NoNames is the reviewer used when none is wired.
type NoNames struct{}

// Entities names nothing.
func (NoNames) Entities(context.Context, *task.Task, *kernel.Status) (map[string][]string, error) {
	return nil, nil
}

// StaticReviewer is an in-memory reviewer: fixed names per path.
type StaticReviewer map[string][]string

// Entities returns the names kept for each changed path.
func (r StaticReviewer) Entities(_ context.Context, _ *task.Task, st *kernel.Status) (map[string][]string, error) {
	out := map[string][]string{}
	for _, e := range st.Pending(false) {
		if n, ok := r[e.Path]; ok {
			out[e.Path] = n
		}
	}
	return out, nil
}

// MemoryRules keeps remembered approvals in memory, by task, kind and subject.
type MemoryRules struct {
	mu   sync.Mutex
	kept map[string]bool
}

func ruleKey(q Question) string { return q.Task + "\x00" + q.Kind + "\x00" + q.Subject }

// Remember keeps q's approval.
func (m *MemoryRules) Remember(q Question) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.kept == nil {
		m.kept = map[string]bool{}
	}
	m.kept[ruleKey(q)] = true
	return nil
}

// Allows reports whether an approval like q was remembered.
func (m *MemoryRules) Allows(q Question) bool {
	if q.Subject == "" {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.kept[ruleKey(q)]
}

var (
	_ Policy   = PassAll{}
	_ Policy   = StaticPolicy{}
	_ Reviewer = NoNames{}
	_ Reviewer = StaticReviewer{}
	_ Rules    = (*MemoryRules)(nil)
)
