package agentrun

import (
	"testing"

	"github.com/kulehq/kule/kernel/internal/acp"
	"github.com/kulehq/kule/kernel/internal/effects"
	"github.com/kulehq/kule/kernel/internal/memory"
)

// TestProgressKeepsTheLastSteps: the progress keeps the turn's last steps,
// each updated in place as it ends, and the questions still waiting.
func TestProgressKeepsTheLastSteps(t *testing.T) {
	r := &Run{}
	r.memo.progress.Store(&progressKeeper{byStep: map[int]int{}, pending: map[int]memory.Question{}, ended: true})
	for n := 1; n <= 12; n++ {
		r.memoryProgress(acp.Event{Type: acp.EventStepStart, Step: &acp.Step{N: n, Kind: "edit", Status: "in_progress"}})
	}
	r.memoryProgress(acp.Event{Type: acp.EventStepEnd, Step: &acp.Step{N: 11, Kind: "edit", Status: "completed", Effects: []effects.Effect{{Kind: effects.Add, Path: "a.go"}}}})
	r.memoryProgress(acp.Event{Type: acp.EventStepEnd, Step: &acp.Step{N: 2, Kind: "edit", Status: "completed"}}) // gone from the window: a new mark
	first := r.asking(acp.Question{Title: "run make", Kind: "execute"})
	r.asking(acp.Question{Title: "write b.go", Kind: "edit"})
	first()
	p := r.memo.progress.Load().snapshot()
	if len(p.Steps) != memory.MaxProgressSteps {
		t.Fatalf("%d steps kept: %+v", len(p.Steps), p.Steps)
	}
	if s := p.Steps[len(p.Steps)-3]; s.Status != "completed" || len(s.Changed) != 1 || s.Changed[0] != "add a.go" {
		t.Fatalf("step 11 as it ended: %+v (all: %+v)", s, p.Steps)
	}
	if s := p.Steps[len(p.Steps)-1]; s.Status != "completed" {
		t.Fatalf("the last mark: %+v", s)
	}
	if len(p.Pending) != 1 || p.Pending[0].Kind != "edit" {
		t.Fatalf("pending: %+v", p.Pending)
	}
}
