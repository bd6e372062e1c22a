package agentrun

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/internal/acp"
	"github.com/kulehq/kule/kernel/internal/budget"
	"github.com/kulehq/kule/kernel/internal/config"
	"github.com/kulehq/kule/kernel/internal/limits"
	"github.com/kulehq/kule/kernel/internal/runner"
)

// The hooks where a run's limits and budgets are applied (kernel/internal/limits,
// kernel/internal/budget): startLimits refuses a run whose budget or task time is
// spent and starts the limits supervisor on the agent's process tree (and
// every terminal it opens) and the budget watcher; onUsage gives the
// watcher each usage line; event keeps the idle clock; stopLimits says
// which limit or budget ended the run.

// stopGrace is how long a cancelled turn may take to end before the agent
// is killed (Stop, and a run stopped by its budget).
const stopGrace = 10 * time.Second

// limitsWatch is the run's limits supervisor and budget watcher.
type limitsWatch struct {
	lim    limits.Limits
	sup    *limits.Run
	clock  *limits.Clock
	budget *budget.Watcher
}

// startLimits is called once with the agent's spec before it starts; an
// error means the run must not start (nothing of the agent runs yet).
func (r *Run) startLimits(ctx context.Context, spec *runner.Spec) error {
	t, k := r.Task, r.k
	cfg, err := config.Load(k.Store().Root)
	if err != nil {
		return err
	}
	lim := kernel.LimitsFor(t, cfg.Limits)
	if r.o.Pids > 0 {
		lim.Pids = r.o.Pids
	}
	st, err := budget.Stand(k.Store().Root, t.Paths.Dir, time.Now())
	if err != nil {
		return fmt.Errorf("run: %w (nothing was started)", err)
	}
	if err := st.Check(); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	if lim.Disk > 0 && t.DiskBase == 0 {
		// Measured once, at the first run with a disk limit (as kule exec).
		t.DiskBase = limits.DiskUsage(kernel.DiskPaths(t)...)
		if err := k.Store().Save(t); err != nil {
			return fmt.Errorf("run: %w", err)
		}
	}
	w := &limitsWatch{lim: lim, clock: limits.NewClock()}
	w.sup, err = limits.Supervise(ctx, lim, limits.Task{Dir: t.Paths.Dir, DiskPaths: kernel.DiskPaths(t), DiskBase: t.DiskBase}, w.clock.Last)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	if err := markRun(t.Paths.Dir); err != nil {
		return err
	}
	spec.FileSizeLimit = w.sup.FileSizeLimit()
	started := spec.Started
	spec.Started = func(pid int) {
		w.sup.Started(pid) // the agent first, then each terminal it opens
		if started != nil {
			started(pid)
		}
	}
	w.budget = st.Watch(func(n budget.Notice) {
		r.notice(n.Text)
		if r.o.OnBudget != nil {
			r.o.OnBudget(n)
		}
	}, func(err error) {
		r.notice(err.Error())
		r.Cancel() // the turn is cancelled; the agent is killed after stopGrace
	})
	r.limits = w
	return nil
}

// markRun starts the run's count in usage.jsonl: the agent's process
// reports its session's cost from zero.
func markRun(taskDir string) error {
	f, err := os.OpenFile(taskDir+"/"+acp.UsageFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	defer f.Close()
	return budget.MarkRun(f, time.Now())
}

// stopLimits is called once the agent has stopped; a non-nil error says
// which limit or budget ended the run.
func (r *Run) stopLimits() error {
	w := r.limits
	if w == nil {
		return nil
	}
	if err := w.sup.Wait(); err != nil {
		return err
	}
	return w.budget.Err()
}

// onUsage is called with every line written to usage.jsonl.
func (r *Run) onUsage(u acp.Usage) {
	if w := r.limits; w != nil {
		w.budget.Cost(u.Session, u.Cost)
	}
	if r.o.OnUsage != nil {
		r.o.OnUsage(u)
	}
}

// touch records activity: the agent said or did something.
func (r *Run) touch() {
	if w := r.limits; w != nil {
		w.clock.Touch()
	}
}

// heldAsk wraps a permission question so that the run is never idle
// while the question waits on the person.
func (r *Run) heldAsk(ask acp.AskFunc) acp.AskFunc {
	if ask == nil {
		return nil
	}
	return func(ctx context.Context, q acp.Question) (string, error) {
		if w := r.limits; w != nil {
			defer w.clock.Hold()()
		}
		return ask(ctx, q)
	}
}

// Limits is what the run may take and what it took so far, for the app's
// Live view.
func (r *Run) Limits() (limits.Limits, limits.Usage) {
	w := r.limits
	if w == nil {
		return limits.Limits{}, limits.Usage{}
	}
	return w.lim, w.sup.Usage()
}

// Cost is what the run cost so far, as its agent reported it (one amount a
// currency).
func (r *Run) Cost() []budget.Money {
	if w := r.limits; w != nil {
		return w.budget.Run()
	}
	return nil
}

// Stopped is the limit that stopped the run so far (limits.ReasonNone when
// none did; a budget's stop is Result.LimitErr, budget.ErrSpent).
func (r *Run) Stopped() limits.Reason {
	if w := r.limits; w != nil {
		return w.sup.Stopped()
	}
	return limits.ReasonNone
}
