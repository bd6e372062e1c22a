package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/kulehq/kule/kernel"
)

// Question states.
const (
	Waiting  = "waiting"
	Approved = "approved"
	Denied   = "denied"
	Expired  = "expired" // the wait ran out: refused
)

// Wait bounds: 15 minutes unless set from 1 minute to 8 hours;
// never off.
const (
	DefaultWait = 15 * time.Minute
	MinWait     = time.Minute
	MaxWait     = 8 * time.Hour
)

// keepAnswered is how many answered questions stay listed (and on disk).
const keepAnswered = 200

// Question is something an agent, the proxy or the policy waits on a person for.
type Question struct {
	ID       string    `json:"id"`
	Task     string    `json:"task"`
	Kind     string    `json:"kind"`              // "connection", "permission", "effect", …
	Title    string    `json:"title"`             // one line a person reads
	Detail   string    `json:"detail,omitempty"`  // more, shown under it
	Subject  string    `json:"subject,omitempty"` // what "remember" keeps: host:port, tool name, path
	Asked    time.Time `json:"asked"`
	Deadline time.Time `json:"deadline"`
	State    string    `json:"state"`
	Remember bool      `json:"remember,omitempty"`
	Answered time.Time `json:"answered,omitzero"`
	By       string    `json:"by,omitempty"` // "person", "timeout", "rule"
}

// Approved reports whether the answer lets the asker go on.
func (q Question) Approved() bool { return q.State == Approved }

// Decision is a person's answer.
type Decision struct {
	Approve  bool `json:"approve"`
	Remember bool `json:"remember"`
}

// Questions is what the proxy, the ACP permission path and the policy post to:
// Ask waits for the answer (refused when the task's wait runs out).
type Questions interface {
	Ask(ctx context.Context, q Question) (Question, error)
}

// Errors a caller can test for.
var (
	ErrNoQuestion    = errors.New("no such question")
	ErrAnswered      = errors.New("the question was already answered")
	ErrWaitRange     = errors.New("a wait must be from 1 minute to 8 hours")
	ErrDamagedState  = errors.New("questions.json is damaged")
	ErrBadQuestion   = errors.New("a question needs a task, a kind and a title")
	ErrDaemonRunning = errors.New("a kule daemon already runs for this home")
	ErrNotOwner      = errors.New("the peer is another user")
)

// Queue keeps the questions, persisted in $KULE_HOME/questions.json so a
// restart loses none: a question still waiting after a restart keeps its
// deadline and can be answered; an asker that comes back (same task, kind and
// subject) gets the answer given meanwhile.
type Queue struct {
	mu      sync.Mutex
	path    string
	qs      map[string]*Question
	waits   map[string]chan struct{}
	timers  map[string]*time.Timer
	bus     *Bus
	rules   Rules
	wait    time.Duration
	perTask map[string]time.Duration
	now     func() time.Time

	// testWait, when set, replaces every wait (tests cannot wait a minute).
	testWait time.Duration
}

type queueFile struct {
	Questions []Question        `json:"questions"`
	Wait      string            `json:"wait,omitempty"`
	TaskWaits map[string]string `json:"task_waits,omitempty"`
}

// OpenQueue loads the questions kept at path (a missing file is empty).
func OpenQueue(path string, bus *Bus, rules Rules) (*Queue, error) {
	if rules == nil {
		rules = &MemoryRules{}
	}
	q := &Queue{path: path, qs: map[string]*Question{}, waits: map[string]chan struct{}{}, timers: map[string]*time.Timer{}, bus: bus, rules: rules, wait: DefaultWait, perTask: map[string]time.Duration{}, now: time.Now}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return q, nil
	}
	if err != nil {
		return nil, fmt.Errorf("questions: %w", err)
	}
	f, err := decodeQueueFile(b)
	if err != nil {
		return nil, fmt.Errorf("questions: %s: %w (move it aside to start with no questions; nothing was answered)", path, err)
	}
	if f.Wait != "" {
		q.wait, _ = time.ParseDuration(f.Wait)
	}
	for id, s := range f.TaskWaits {
		q.perTask[id], _ = time.ParseDuration(s)
	}
	// arm's clock may fire at once (a deadline passed while no daemon ran):
	// hold the lock so it waits until every question is in.
	q.mu.Lock()
	defer q.mu.Unlock()
	for i := range f.Questions {
		qq := f.Questions[i]
		q.qs[qq.ID] = &qq
		if qq.State == Waiting {
			q.arm(&qq)
		}
	}
	return q, nil
}

// decodeQueueFile parses questions.json strictly.
func decodeQueueFile(b []byte) (*queueFile, error) {
	var f queueFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDamagedState, err)
	}
	seen := map[string]bool{}
	for _, qq := range f.Questions {
		if qq.ID == "" || seen[qq.ID] {
			return nil, fmt.Errorf("%w: a question without an id or twice", ErrDamagedState)
		}
		seen[qq.ID] = true
		switch qq.State {
		case Waiting, Approved, Denied, Expired:
		default:
			return nil, fmt.Errorf("%w: question %s has state %q", ErrDamagedState, qq.ID, qq.State)
		}
	}
	if f.Wait != "" {
		if d, err := time.ParseDuration(f.Wait); err != nil || CheckWait(d) != nil {
			return nil, fmt.Errorf("%w: wait %q", ErrDamagedState, f.Wait)
		}
	}
	for id, s := range f.TaskWaits {
		if d, err := time.ParseDuration(s); err != nil || CheckWait(d) != nil {
			return nil, fmt.Errorf("%w: wait of task %s %q", ErrDamagedState, id, s)
		}
	}
	return &f, nil
}

// CheckWait refuses a wait outside 1 minute–8 hours (and so "off").
func CheckWait(d time.Duration) error {
	if d < MinWait || d > MaxWait {
		return fmt.Errorf("%w (got %s)", ErrWaitRange, d)
	}
	return nil
}

// SetWait sets the wait of one task, or the default when taskID is "".
func (q *Queue) SetWait(taskID string, d time.Duration) error {
	if err := CheckWait(d); err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if taskID == "" {
		q.wait = d
	} else {
		q.perTask[taskID] = d
	}
	return q.saveLocked()
}

// WaitFor is how long a question of this task waits.
func (q *Queue) WaitFor(taskID string) time.Duration {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.waitLocked(taskID)
}

func (q *Queue) waitLocked(taskID string) time.Duration {
	if q.testWait > 0 {
		return q.testWait
	}
	if d, ok := q.perTask[taskID]; ok {
		return d
	}
	return q.wait
}

func newQuestionID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Post puts a question up and returns at once. A question like one the
// person remembered is approved by the rule without asking; one that repeats
// a question answered since the asker last asked (after a restart) gets that
// answer.
func (q *Queue) Post(in Question) (Question, error) {
	if in.Task == "" || in.Kind == "" || in.Title == "" {
		return Question{}, ErrBadQuestion
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.now().UTC()
	out := in
	out.ID = newQuestionID()
	out.Asked = now
	out.Answered = time.Time{}
	out.Remember = false
	out.Deadline = now.Add(q.waitLocked(in.Task))
	out.State = Waiting
	out.By = ""
	if q.rules.Allows(out) {
		out.State, out.By, out.Answered = Approved, "rule", now
	} else if in.Subject != "" {
		// A waiting twin (the asker came back after a restart) is the same question.
		for _, old := range q.qs {
			if old.Task == in.Task && old.Kind == in.Kind && old.Subject == in.Subject && old.State == Waiting {
				return *old, nil
			}
		}
	}
	q.qs[out.ID] = &out
	if out.State == Waiting {
		q.arm(&out)
	}
	if err := q.saveLocked(); err != nil {
		delete(q.qs, out.ID)
		return Question{}, err
	}
	q.publish(out)
	return out, nil
}

// arm starts the question's clock; q.mu is held.
func (q *Queue) arm(qq *Question) {
	id := qq.ID
	q.waits[id] = make(chan struct{})
	d := time.Until(qq.Deadline)
	if d < 0 {
		d = 0
	}
	q.timers[id] = time.AfterFunc(d, func() { q.expire(id) })
}

func (q *Queue) expire(id string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	qq, ok := q.qs[id]
	if !ok || qq.State != Waiting {
		return
	}
	qq.State, qq.By, qq.Answered = Expired, "timeout", q.now().UTC()
	q.settleLocked(qq)
}

// settleLocked wakes the waiters, saves and publishes; q.mu is held.
func (q *Queue) settleLocked(qq *Question) {
	if c, ok := q.waits[qq.ID]; ok {
		close(c)
		delete(q.waits, qq.ID)
	}
	if t, ok := q.timers[qq.ID]; ok {
		t.Stop()
		delete(q.timers, qq.ID)
	}
	q.trimLocked()
	_ = q.saveLocked() // the answer is in memory and reaches the asker even if the disk fails
	q.publish(*qq)
}

func (q *Queue) publish(qq Question) {
	if q.bus != nil {
		q.bus.Publish("question", qq.Task, qq)
	}
}

// Answer records a person's decision on a waiting question.
func (q *Queue) Answer(id string, d Decision) (Question, error) { return q.answer(id, d, nil) }

// answer is Answer with settled, when not nil, called with the answered
// question before its asker is woken: what settled records (the chat's
// answer in the task's history) is there before the run goes on.
func (q *Queue) answer(id string, d Decision, settled func(Question)) (Question, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	qq, ok := q.qs[id]
	if !ok {
		return Question{}, fmt.Errorf("answer %s: %w", id, ErrNoQuestion)
	}
	if qq.State != Waiting {
		return *qq, fmt.Errorf("answer %s: %w (%s)", id, ErrAnswered, qq.State)
	}
	qq.State, qq.By, qq.Answered = Denied, "person", q.now().UTC()
	if d.Approve {
		qq.State = Approved
		if d.Remember {
			qq.Remember = true
			if err := q.rules.Remember(*qq); err != nil {
				qq.Remember = false
				qq.State, qq.Answered, qq.By = Waiting, time.Time{}, ""
				return *qq, fmt.Errorf("answer %s: remember: %w (the question still waits)", id, err)
			}
		}
	}
	if settled != nil {
		settled(*qq)
	}
	q.settleLocked(qq)
	return *qq, nil
}

// Withdraw refuses a question whose asker is gone (the run ended first).
func (q *Queue) Withdraw(id, by string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	qq, ok := q.qs[id]
	if !ok || qq.State != Waiting {
		return
	}
	qq.State, qq.By, qq.Answered = Denied, by, q.now().UTC()
	q.settleLocked(qq)
}

// Wait blocks until the question is answered or refused, or ctx ends.
func (q *Queue) Wait(ctx context.Context, id string) (Question, error) {
	q.mu.Lock()
	qq, ok := q.qs[id]
	if !ok {
		q.mu.Unlock()
		return Question{}, fmt.Errorf("wait %s: %w", id, ErrNoQuestion)
	}
	c, waiting := q.waits[id]
	cur := *qq
	q.mu.Unlock()
	if !waiting {
		return cur, nil
	}
	select {
	case <-c:
	case <-ctx.Done():
		return cur, ctx.Err()
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return *q.qs[id], nil
}

// Ask posts a question and waits for its answer. An error means no answer
// came (ctx ended): treat it as refused.
func (q *Queue) Ask(ctx context.Context, in Question) (Question, error) {
	qq, err := q.Post(in)
	if err != nil {
		return qq, err
	}
	return q.Wait(ctx, qq.ID)
}

// List returns the questions, waiting first, then newest first.
func (q *Queue) List() []Question {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]Question, 0, len(q.qs))
	for _, qq := range q.qs {
		out = append(out, *qq)
	}
	sort.Slice(out, func(i, j int) bool {
		wi, wj := out[i].State == Waiting, out[j].State == Waiting
		if wi != wj {
			return wi
		}
		if wi {
			return out[i].Asked.Before(out[j].Asked)
		}
		return out[i].Answered.After(out[j].Answered)
	})
	return out
}

// Pending counts the waiting questions.
func (q *Queue) Pending() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.waits)
}

// DropTask removes the questions of a deleted task (waiting ones are refused first).
func (q *Queue) DropTask(taskID string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for id, qq := range q.qs {
		if qq.Task != taskID {
			continue
		}
		if qq.State == Waiting {
			qq.State, qq.By, qq.Answered = Denied, "deleted", q.now().UTC()
			q.settleLocked(qq)
		}
		delete(q.qs, id)
	}
	delete(q.perTask, taskID)
	_ = q.saveLocked()
}

// Close stops the clocks (questions stay on disk, still waiting).
func (q *Queue) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for id, t := range q.timers {
		t.Stop()
		delete(q.timers, id)
	}
}

func (q *Queue) trimLocked() {
	var done []*Question
	for _, qq := range q.qs {
		if qq.State != Waiting {
			done = append(done, qq)
		}
	}
	if len(done) <= keepAnswered {
		return
	}
	sort.Slice(done, func(i, j int) bool { return done[i].Answered.After(done[j].Answered) })
	for _, qq := range done[keepAnswered:] {
		delete(q.qs, qq.ID)
	}
}

func (q *Queue) saveLocked() error {
	f := queueFile{Questions: make([]Question, 0, len(q.qs))}
	for _, qq := range q.qs {
		f.Questions = append(f.Questions, *qq)
	}
	sort.Slice(f.Questions, func(i, j int) bool { return f.Questions[i].Asked.Before(f.Questions[j].Asked) })
	if q.wait != DefaultWait {
		f.Wait = q.wait.String()
	}
	if len(q.perTask) > 0 {
		f.TaskWaits = map[string]string{}
		for id, d := range q.perTask {
			f.TaskWaits[id] = d.String()
		}
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := kernel.WriteFileAtomic(q.path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("questions: save: %w", err)
	}
	return nil
}

var _ Questions = (*Queue)(nil)
