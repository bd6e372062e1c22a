package agentrun

import (
	"context"

	"github.com/kulehq/kule/kernel/acp"
	"github.com/kulehq/kule/kernel/runner"
)

// The hooks where a run's limits and budgets are applied.
//
// Not wired yet: `kule exec` applies kernel/limits (see kernel.Exec); a run of
// an agent does not. startLimits is where the run's limits supervisor starts
// (spec.Started gets the agent's first pid), stopLimits where it is waited for
// and its verdict read, and onUsage where each usage line arrives for budgets.

// limitsWatch is the run's limits supervisor and what it watches.
type limitsWatch struct{}

// startLimits is called once with the agent's spec before it starts.
func (r *Run) startLimits(ctx context.Context, spec *runner.Spec) {
	_ = ctx
	_ = spec
}

// stopLimits is called once the agent has stopped; a non-nil error says
// which limit ended the run.
func (r *Run) stopLimits() error {
	if r.limits == nil {
		return nil
	}
	return nil
}

// onUsage is called with every line written to usage.jsonl.
func (r *Run) onUsage(u acp.Usage) {
	if r.o.OnUsage != nil {
		r.o.OnUsage(u)
	}
}
