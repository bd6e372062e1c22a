package kernel

import (
	"context"
	"fmt"
	"time"

	"github.com/kulehq/kule/kernel/internal/config"
	"github.com/kulehq/kule/kernel/internal/graduation"
	"github.com/kulehq/kule/kernel/internal/history"
	"github.com/kulehq/kule/kernel/internal/memory"
	"github.com/kulehq/kule/kernel/internal/policy"
	"github.com/kulehq/kule/kernel/internal/task"
)

// Graduation (kernel/internal/graduation): the evidence is the memory of
// runs; a review follows every commit, rollback, undo and run's end, so a
// failure in a graduated category withdraws its rule before the next run.

// Graduation types, for the CLI and the daemon.
type (
	GraduationProposal = graduation.Proposal
	GraduationDemotion = graduation.Demotion
	GraduationReport   = graduation.Report
)

// graduationRuns is how many of the newest runs a review reads.
const graduationRuns = 20000

// graduationKeeper is the home's keeper with the thresholds of config.toml.
func (k *Kernel) graduationKeeper() (*graduation.Keeper, error) {
	cfg, err := config.Load(k.store.Root)
	if err != nil {
		return nil, err
	}
	s := graduation.Defaults()
	g := cfg.Graduation
	if g.MinSuccesses > 0 {
		s.MinSuccesses = g.MinSuccesses
	}
	if g.MinDistinctTasks > 0 {
		s.MinDistinctTasks = g.MinDistinctTasks
	}
	if g.CooldownDays > 0 {
		s.Cooldown = time.Duration(g.CooldownDays) * 24 * time.Hour
	}
	if g.KeptDays > 0 {
		s.Kept = time.Duration(g.KeptDays) * 24 * time.Hour
	}
	key, err := k.signingKey()
	if err != nil {
		return nil, err
	}
	engines := map[string]*policy.Engine{}
	choice := cfg.Policy.Choice
	return &graduation.Keeper{
		Home: k.store.Root, Settings: s, Log: history.Open(graduation.LogPath(k.store.Root), key),
		Eligible: func(c graduation.Category) bool {
			e, ok := engines[c.Folder]
			if !ok {
				e, _ = policy.Load(k.store.Root, c.Folder, choice)
				engines[c.Folder] = e
			}
			return e != nil && e.Graduates(c.Rule)
		},
	}, nil
}

func (k *Kernel) graduationEvidence(ctx context.Context, folder string) ([]graduation.Run, error) {
	st, err := k.Memory()
	if err != nil {
		return nil, fmt.Errorf("graduation: the memory of runs: %w", err)
	}
	rs, err := st.Runs(ctx, memory.Filter{Folder: folder, Limit: graduationRuns})
	if err != nil {
		return nil, fmt.Errorf("graduation: the memory of runs: %w", err)
	}
	return graduation.FromMemory(rs), nil
}

// ReviewGraduation judges the memory of runs (on folder, or every folder
// when ""): failures demote their categories (a graduated rule is
// withdrawn), and the report lists the proposals that stand.
func (k *Kernel) ReviewGraduation(ctx context.Context, folder string) (*graduation.Report, error) {
	runs, err := k.graduationEvidence(ctx, folder)
	if err != nil {
		return nil, err
	}
	g, err := k.graduationKeeper()
	if err != nil {
		return nil, err
	}
	return g.Review(runs)
}

// AcceptGraduation makes proposal id a remembered rule, signed into
// $KULE_HOME/graduation.jsonl with its evidence.
func (k *Kernel) AcceptGraduation(ctx context.Context, id string) (graduation.Proposal, policy.Remembered, error) {
	runs, err := k.graduationEvidence(ctx, "")
	if err != nil {
		return graduation.Proposal{}, policy.Remembered{}, err
	}
	g, err := k.graduationKeeper()
	if err != nil {
		return graduation.Proposal{}, policy.Remembered{}, err
	}
	return g.Accept(runs, id)
}

// graduationAfter reviews t's folder after an outcome (advisory: a review
// that fails is logged, the work it followed stands); a demotion is said
// in the log.
func (k *Kernel) graduationAfter(t *task.Task) {
	if !k.hasGraduated() {
		// Nothing graduated to demote; counts and proposals are worked
		// out from the memory whenever they are asked for.
		return
	}
	rep, err := k.ReviewGraduation(context.Background(), t.Folder)
	if err != nil {
		k.memWarn("graduation", err)
		return
	}
	for _, d := range rep.Demotions {
		if d.Withdrawn != "" && k.cfg.Logger != nil {
			k.cfg.Logger.Warn("graduation: demoted", "category", d.Category.String(), "why", d.Why, "withdrawn", d.Withdrawn)
		}
	}
}

// hasGraduated reports whether rules.cedar holds a graduated rule.
func (k *Kernel) hasGraduated() bool {
	rs, err := policy.ReadRemembered(k.store.Root)
	if err != nil {
		return true // cannot tell: review
	}
	for _, r := range rs {
		if r.Graduated != "" {
			return true
		}
	}
	return false
}

// inputUntrusted reports whether t's changes come from a run whose input
// was not all trusted: a pending run (not yet committed, rolled back or
// undone) whose prompt came from a chat user who is not the operator, or
// that was given untrusted recalled items. A memory that cannot be read
// is untrusted too: graduated permits are withheld when in doubt.
func (k *Kernel) inputUntrusted(t *task.Task) bool {
	st, err := k.Memory()
	if err != nil {
		return true
	}
	rs, err := st.Runs(context.Background(), memory.Filter{Task: t.ID, Limit: 200})
	if err != nil {
		return true
	}
	for _, r := range rs {
		if r.Outcome == "" && r.Trust != memory.Trusted {
			return true
		}
	}
	return false
}

// trustGate is eng, less its graduated permits when t's input was not all
// trusted.
func (k *Kernel) trustGate(t *task.Task, eng *policy.Engine) *policy.Engine {
	if eng.HasGraduated() && k.inputUntrusted(t) {
		return eng.WithoutGraduated()
	}
	return eng
}
