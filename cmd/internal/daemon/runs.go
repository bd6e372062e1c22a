package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/kulehq/kule/kernel"
)

// runs tracks the commands and agent turns running in tasks: one at a time
// per task. Once the daemon stops (closeAndCancel) no run starts, and wait
// returns when every run has ended — its step, history and memory written.
type runs struct {
	mu     sync.Mutex
	active map[string]context.CancelFunc
	closed bool
	wg     sync.WaitGroup
}

// errStopping refuses a run asked for while the daemon stops.
var errStopping = errors.New("the daemon is stopping; nothing ran (start it again and retry)")

func newRuns() *runs { return &runs{active: map[string]context.CancelFunc{}} }

// begin registers a run of task id: errBusy when one runs there,
// errStopping once the daemon is stopping. end must follow a nil error.
func (r *runs) begin(id string, cancel context.CancelFunc) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errStopping
	}
	if _, ok := r.active[id]; ok {
		return errBusy
	}
	r.active[id] = cancel
	r.wg.Add(1)
	return nil
}

func (r *runs) start(id string, cancel context.CancelFunc) bool { return r.begin(id, cancel) == nil }

func (r *runs) end(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.active[id]; !ok {
		return
	}
	delete(r.active, id)
	r.wg.Done()
}

func (r *runs) stop(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.active[id]
	if ok {
		c()
	}
	return ok
}

func (r *runs) running(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.active[id]
	return ok
}

// closeAndCancel refuses new runs and cancels the ones going.
func (r *runs) closeAndCancel() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	for _, c := range r.active {
		c()
	}
}

// wait returns when every run begun has ended.
func (r *runs) wait() { r.wg.Wait() }

// Step is one command run in a task, as steps.jsonl keeps it.
type Step struct {
	Time    time.Time `json:"time"`
	Kind    string    `json:"kind"` // "exec"
	Command string    `json:"command"`
	Code    int       `json:"code"`
	Error   string    `json:"error,omitempty"`
	Seconds float64   `json:"seconds"`
	Summary string    `json:"summary,omitempty"` // the task's changes afterwards
	Output  string    `json:"output,omitempty"`  // the last of it, bounded
	Source  string    `json:"source"`            // "app"
	Limit   string    `json:"limit,omitempty"`   // the limit that stopped it (memory, disk, time, idle, task-time)
}

// maxOutput bounds the output kept with a step and sent back.
const maxOutput = 64 << 10

// outputSink sends a run's output to the event stream in chunks and keeps its tail.
type outputSink struct {
	mu   sync.Mutex
	bus  *Bus
	task string
	tail []byte
}

func (o *outputSink) Write(p []byte) (int, error) {
	o.mu.Lock()
	o.tail = append(o.tail, p...)
	if len(o.tail) > maxOutput {
		o.tail = o.tail[len(o.tail)-maxOutput:]
	}
	o.mu.Unlock()
	o.bus.Publish("output", o.task, map[string]any{"text": strings.ToValidUTF8(string(p), "\uFFFD")})
	return len(p), nil
}

func (o *outputSink) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	b := o.tail
	for len(b) > 0 && !utf8.Valid(b[:min(len(b), 4)]) {
		b = b[1:]
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// ExecRequest is a command typed in the app's command line.
type ExecRequest struct {
	Command string   `json:"command"` // run with /bin/sh -c
	Args    []string `json:"args"`    // or an argv
}

func (d *Daemon) execTask(w http.ResponseWriter, r *http.Request, t *kernel.Task) {
	var in ExecRequest
	if err := readBody(r, &in); err != nil {
		fail(w, err)
		return
	}
	argv := in.Args
	label := strings.Join(in.Args, " ")
	if strings.TrimSpace(in.Command) != "" {
		argv = []string{"/bin/sh", "-c", in.Command}
		label = in.Command
	}
	if len(argv) == 0 {
		fail(w, fmt.Errorf("%w: no command given", errBadRequest))
		return
	}
	step, err := d.Exec(r.Context(), t, argv, label)
	if err != nil && step == nil {
		fail(w, err)
		return
	}
	writeJSON(w, 200, step)
}

// Exec runs argv in the task's copy through the kernel (so the wired runner
// — the sandbox — applies), streams its output as events, records a step and
// returns it. The command outlives the request that started it only until
// the daemon stops.
func (d *Daemon) Exec(ctx context.Context, t *kernel.Task, argv []string, label string) (*Step, error) {
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	if err := d.runs.begin(t.ID, cancel); err != nil {
		return nil, fmt.Errorf("exec %s: %w", t.ID, err)
	}
	defer d.runs.end(t.ID)
	defer d.busy()()
	out := &outputSink{bus: d.Bus, task: t.ID}
	d.Bus.Publish("run", t.ID, map[string]any{"state": "start", "command": label})
	start := time.Now()
	cfg, err := d.k.Settings()
	if err != nil {
		err = fmt.Errorf("exec %s: %w (nothing ran)", t.ID, err)
		d.Bus.Publish("run", t.ID, map[string]any{"state": "end", "command": label, "code": -1, "error": err.Error()})
		return nil, err
	}
	opt := kernel.ExecOptions{Args: argv, Limits: kernel.LimitsFor(t, cfg.Limits)}
	var sup atomic.Pointer[kernel.LimitRun]
	opt.Supervised = sup.Store
	m := d.startMeter(t.ID, opt.Limits, func() kernel.LimitUsage {
		if s := sup.Load(); s != nil {
			return s.Usage()
		}
		return kernel.LimitUsage{}
	})
	stopped := func(err error) string {
		var r kernel.LimitReason
		if s := sup.Load(); s != nil {
			r = s.Stopped()
		}
		return stopLimit(r, err)
	}
	opt.Spec.Stdout, opt.Spec.Stderr = out, out
	opt.Spec.Stdin = strings.NewReader("")
	hooks := kernel.RunHooks{Net: d.netHooks(label)} // this run's runner and hooks only
	if d.cfg.RunnerFor != nil {
		r, err := d.cfg.RunnerFor(t, &opt.Spec)
		if err != nil {
			m.End("")
			d.Bus.Publish("run", t.ID, map[string]any{"state": "end", "command": label, "code": -1, "error": err.Error()})
			return nil, fmt.Errorf("exec %s: %w (nothing ran)", t.ID, err)
		}
		hooks.Runner = r
	}
	k := d.k.With(hooks)
	logged := d.k.SandboxLogSize(t)
	code, st, err := k.Exec(rctx, t, opt)
	d.publishRefusals(t, logged)
	limit := stopped(err)
	m.End(limit)
	if limit != "" {
		// Stopped by a limit: why is the run's last output too.
		sep := ""
		if o := out.String(); o != "" && !strings.HasSuffix(o, "\n") {
			sep = "\n"
		}
		fmt.Fprintf(out, "%skule: %v\n", sep, err)
	}
	step := &Step{Time: start.UTC(), Kind: "exec", Command: label, Code: code, Seconds: time.Since(start).Seconds(), Output: out.String(), Source: "app", Limit: limit}
	if err != nil {
		step.Error = err.Error()
	}
	if st != nil {
		step.Summary = kernel.EffectsSummary(st.Pending(false))
	}
	if werr := appendStep(t, step); werr != nil {
		d.log.Warn("step not recorded", "task", t.ID, "err", werr)
	}
	d.Bus.Publish("run", t.ID, map[string]any{"state": "end", "command": label, "code": code, "error": step.Error, "summary": step.Summary, "limit": limit})
	d.Bus.Publish("step", t.ID, step)
	d.checkMeets(t)
	return step, err
}

// netHooks put a run's connections on the event stream and its asked-about
// ones to a person: the connection is held until the question is answered
// or the task's wait runs out (then refused, and the command goes on
// without it).
func (d *Daemon) netHooks(label string) kernel.NetHooks {
	return kernel.NetHooks{
		Ask: func(ctx context.Context, t *kernel.Task, host string, port int, rule string) bool {
			hp := net.JoinHostPort(host, strconv.Itoa(port))
			detail := "asked for by " + label
			if rule != "" {
				detail += " · rule " + rule
			}
			detail += " · the connection is held until you answer"
			q, err := d.Q.Ask(ctx, Question{Task: t.ID, Kind: KindConnection, Title: "Connect to " + hp + "?", Detail: detail, Subject: hp})
			if err != nil {
				if q.ID != "" {
					d.Q.Withdraw(q.ID, "run ended")
				}
				return false
			}
			return q.Approved()
		},
		Seen: func(t *kernel.Task, host string, port int, verdict, rule string, allowed bool) {
			d.Bus.Publish("connection", t.ID, map[string]any{"host": host, "port": port, "verdict": verdict, "rule": rule, "allowed": allowed})
		},
	}
}

func (d *Daemon) stopTask(w http.ResponseWriter, r *http.Request, t *kernel.Task) {
	writeJSON(w, 200, map[string]any{"task": t.ID, "stopped": d.runs.stop(t.ID)})
}

func stepsPath(t *kernel.Task) string { return filepath.Join(t.Paths.Dir, "steps.jsonl") }

// appendStep adds s to the task's Timeline. Not fsynced: the Timeline is
// what the app shows of the task's past steps, and a crash of the machine
// that takes the last line with it loses a line of that view only (the
// run itself is in the memory, its changes in the copy; readJSONLines
// passes over a torn line, as it did when a crash came mid-write with the
// fsync). The fsync waited on the disk at the end of every `kule exec`,
// however busy the disk was.
func appendStep(t *kernel.Task, s *Step) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(stepsPath(t), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// readSteps reads steps.jsonl, passing over lines it cannot read (other
// writers — the ACP runner — may add kinds of their own).
func readSteps(t *kernel.Task) ([]json.RawMessage, error) { return readJSONLines(stepsPath(t)) }

// readJSONLines reads the last 500 valid lines of a JSON-lines file (a
// missing file is empty).
func readJSONLines(path string) ([]json.RawMessage, error) {
	out := []json.RawMessage{}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if json.Valid(line) {
			out = append(out, json.RawMessage(append([]byte(nil), line...)))
		}
	}
	if len(out) > 500 {
		out = out[len(out)-500:]
	}
	return out, sc.Err()
}

// taskNetwork lists the task's connections as its proxy logged them
// (network.jsonl), newest last, bounded like the steps.
func (d *Daemon) taskNetwork(w http.ResponseWriter, r *http.Request, t *kernel.Task) {
	out, err := readJSONLines(filepath.Join(t.Paths.Dir, "network.jsonl"))
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, 200, out)
}

// RecordStep keeps a run started outside the daemon (kule exec in a terminal) in the task's
// steps.jsonl, as the app's own runs are kept, so Live and the Timeline show every run of the
// task after a reload, wherever it was started. source says where ("cli"). It returns the
// step, for the caller to put on a running daemon's event stream.
func RecordStep(t *kernel.Task, source, command string, start time.Time, code int, runErr error, st *kernel.Status) (*Step, error) {
	step := &Step{Time: start.UTC(), Kind: "exec", Command: command, Code: code, Seconds: time.Since(start).Seconds(), Source: source}
	if runErr != nil {
		step.Error = runErr.Error()
		step.Limit = stopLimit(kernel.LimitReasonNone, runErr)
	}
	if st != nil {
		step.Summary = kernel.EffectsSummary(st.Pending(false))
	}
	return step, appendStep(t, step)
}
