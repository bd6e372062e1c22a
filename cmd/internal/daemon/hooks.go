package daemon

import (
	"context"
	"sync"

	"github.com/kulehq/kule/kernel"
)

// Reviewer names what changed inside a changed file (functions, sections,
// keys): kernel/internal/review's differs. A path missing from the answer has no names.
type Reviewer interface {
	Entities(ctx context.Context, t *kernel.Task, st *kernel.Status) (map[string][]string, error)
}

// Rules keeps the approvals a person asked to remember ("Approve and
// remember"). The real one writes rules.cedar; Allows lets a remembered
// question pass without asking again.
type Rules interface {
	Remember(q Question) error
	Allows(q Question) bool
}

// NoNames is the reviewer used when none is wired.
type NoNames struct{}

// Entities names nothing.
func (NoNames) Entities(context.Context, *kernel.Task, *kernel.Status) (map[string][]string, error) {
	return nil, nil
}

// StaticReviewer is an in-memory reviewer: fixed names per path.
type StaticReviewer map[string][]string

// Entities returns the names kept for each changed path.
func (r StaticReviewer) Entities(_ context.Context, _ *kernel.Task, st *kernel.Status) (map[string][]string, error) {
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
	_ Reviewer = NoNames{}
	_ Reviewer = StaticReviewer{}
	_ Rules    = (*MemoryRules)(nil)
)
