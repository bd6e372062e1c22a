package limits

import (
	"context"
	"sync"
	"time"
)

// Task is what supervising a task's run needs to know of the task.
type Task struct {
	// Dir is the task's directory: its runs' time is kept there.
	Dir string
	// DiskPaths grow with the run (the copy, its tmp, its home layer);
	// DiskBase is what they took when the task was made.
	DiskPaths []string
	DiskBase  int64
}

// Run supervises one run of a task: `kule exec` and `kule run` both go
// through it. Steps:
//  1. Supervise checks the task's time is not used up (nothing starts when
//     it is);
//  2. the runner sets FileSizeLimit as RLIMIT_FSIZE and calls Started with
//     the pid of the run's first process;
//  3. Wait, once the run is over, says which limit stopped it, if any.
type Run struct {
	ctx context.Context
	lim Limits
	w   Watch
	mu  sync.Mutex
	sup *Supervisor
}

// Supervise prepares the supervision of one run of t under lim. activity,
// when set, reports the last thing the run did that its processes do not
// show (a Clock's Last). It fails with ErrTaskTimeSpent when the task's
// runs have used their time.
func Supervise(ctx context.Context, lim Limits, t Task, activity func() time.Time) (*Run, error) {
	file := ""
	if t.Dir != "" {
		file = TaskTimeFile(t.Dir)
		if err := CheckTaskTime(lim, file); err != nil {
			return nil, err
		}
	}
	w := Watch{DiskPaths: t.DiskPaths, DiskBase: t.DiskBase, Activity: activity, TaskTimeFile: file, Began: time.Now()}
	if lim.CPU == 0 && lim.Memory == 0 && lim.Time == 0 && lim.Idle == 0 {
		// Only disk (measured every second anyway) or time to keep: a
		// look a second is enough.
		w.Tick = time.Second
	}
	return &Run{ctx: ctx, lim: lim, w: w}, nil
}

// FileSizeLimit is the RLIMIT_FSIZE the run's first process gets (0: none).
func (r *Run) FileSizeLimit() int64 { return r.lim.Disk }

// Started begins watching the process tree rooted at pid (a runner's
// Spec.Started). A later call adds its tree to the run (an agent's
// terminal commands, started beside the agent with the same Spec).
func (r *Run) Started(pid int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sup != nil {
		r.sup.Add(pid)
		return
	}
	w := r.w
	w.Root = pid
	r.sup = Start(r.ctx, r.lim, w)
}

// Usage is what the run took so far (zero before it started).
func (r *Run) Usage() Usage {
	r.mu.Lock()
	s := r.sup
	r.mu.Unlock()
	if s == nil {
		return Usage{}
	}
	return s.Usage()
}

// Stopped reports, without waiting, the limit that stopped the run so far.
func (r *Run) Stopped() Reason {
	r.mu.Lock()
	s := r.sup
	r.mu.Unlock()
	if s == nil {
		return ReasonNone
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reason
}

// Wait ends the watch, once the run is over (its runner returned), and
// returns the stop by a limit as an error a person reads, or nil.
func (r *Run) Wait() error {
	r.mu.Lock()
	s := r.sup
	r.mu.Unlock()
	if s == nil {
		return nil
	}
	s.End()
	s.Wait()
	return s.Err()
}

// Clock keeps the last time a run did something its processes do not show:
// an agent's message or tool call. While a question waits on the person the
// run is never idle.
type Clock struct {
	mu      sync.Mutex
	last    time.Time
	waiting int
}

// NewClock starts a clock at now.
func NewClock() *Clock { return &Clock{last: time.Now()} }

// Touch records activity now.
func (c *Clock) Touch() {
	c.mu.Lock()
	c.last = time.Now()
	c.mu.Unlock()
}

// Hold marks a question waiting on the person until release is called.
func (c *Clock) Hold() (release func()) {
	c.mu.Lock()
	c.waiting++
	c.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			c.waiting--
			c.last = time.Now()
			c.mu.Unlock()
		})
	}
}

// Last is the last activity; now while a question waits.
func (c *Clock) Last() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.waiting > 0 {
		return time.Now()
	}
	return c.last
}
