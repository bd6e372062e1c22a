package agentrun

import (
	"sync"

	"github.com/kulehq/kule/kernel/internal/acp"
	"github.com/kulehq/kule/kernel/internal/memory"
)

// A turn's progress is kept in its memory record as it goes (its last
// steps, the permission questions that wait), so that when Kule stops
// before the turn ends — a crash, a reboot, a kill -9 — the run that
// resumes it (Options.Resumes: kule run --resume, the app's Resume) is
// told where it was. The record is written by one goroutine, the latest
// progress winning, so that no event waits on the database.

// progressKeeper keeps a running turn's progress and writes it.
type progressKeeper struct {
	mu      sync.Mutex
	steps   []memory.StepMark
	byStep  map[int]int // a step's number → its index in steps
	pending map[int]memory.Question
	nextQ   int

	ended bool // the run has ended: nothing more is written
	kick  chan struct{}
	done  chan struct{}
}

// startProgress starts keeping the progress of run id (0: memory could not
// record the run, so nothing is kept).
func (r *Run) startProgress(id int64) {
	if id == 0 {
		return
	}
	p := &progressKeeper{byStep: map[int]int{}, pending: map[int]memory.Question{}, kick: make(chan struct{}, 1), done: make(chan struct{})}
	r.memo.progress.Store(p)
	kick := p.kick
	go func() {
		defer close(p.done)
		for range kick {
			r.k.MemoryProgress(id, p.snapshot())
		}
	}()
}

// stopProgress waits for the last write of the progress; the run's end is
// recorded after it.
func (r *Run) stopProgress() {
	if p := r.memo.progress.Load(); p != nil {
		p.mu.Lock()
		if !p.ended {
			p.ended = true
			close(p.kick)
		}
		p.mu.Unlock()
		<-p.done
	}
}

func (p *progressKeeper) snapshot() memory.Progress {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := memory.Progress{Steps: append([]memory.StepMark(nil), p.steps...)}
	for i := 0; i < p.nextQ; i++ {
		if q, ok := p.pending[i]; ok {
			out.Pending = append(out.Pending, q)
		}
	}
	return out
}

// changed asks for a write, once the keeper's lock is released.
func (p *progressKeeper) changedLocked() {
	if p.ended {
		return
	}
	select {
	case p.kick <- struct{}{}:
	default: // a write is due already; it takes the newest progress
	}
}

// memoryProgress follows the turn's steps.
func (r *Run) memoryProgress(e acp.Event) {
	p := r.memo.progress.Load()
	if p == nil || e.Step == nil || (e.Type != acp.EventStepStart && e.Type != acp.EventStepEnd) {
		return
	}
	s := e.Step
	mark := memory.StepMark{Title: clipTitle(s.Title), Kind: s.Kind, Status: s.Status}
	for _, ef := range s.Effects {
		mark.Changed = append(mark.Changed, string(ef.Kind)+" "+ef.Path)
		if len(mark.Changed) == 20 {
			break
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if i, ok := p.byStep[s.N]; ok {
		p.steps[i] = mark
	} else {
		p.steps = append(p.steps, mark)
		if len(p.steps) > memory.MaxProgressSteps {
			p.steps = p.steps[1:]
			for n, i := range p.byStep {
				if i == 0 {
					delete(p.byStep, n)
				} else {
					p.byStep[n] = i - 1
				}
			}
		}
		p.byStep[s.N] = len(p.steps) - 1
	}
	p.changedLocked()
}

// asking records a question that waits for an answer; the func it returns
// records the answer.
func (r *Run) asking(q acp.Question) (answered func()) {
	p := r.memo.progress.Load()
	if p == nil {
		return func() {}
	}
	p.mu.Lock()
	n := p.nextQ
	p.nextQ++
	p.pending[n] = memory.Question{Title: clipTitle(q.Title), Kind: q.Kind}
	p.changedLocked()
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		delete(p.pending, n)
		p.changedLocked()
		p.mu.Unlock()
	}
}

func clipTitle(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
