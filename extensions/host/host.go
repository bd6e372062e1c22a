// Package host is Kule's extension host: the process the kernel starts as
// `kule-plugins __plugin extension/host` (in the plugin sandbox: no network, no
// writes) to run JavaScript extensions on goja, one runtime per extension
// (as k6 runs one per virtual user), each with goja_nodejs's event loop for
// timers and promises.
//
// What a runtime holds is the ECMAScript language, the timers, a console
// that writes to the host's log, and the `kule` object of the SDK (see
// extensions/sdk/kule.d.ts); nothing else. There is no require, no fetch,
// no XMLHttpRequest, no file system and no process; the SDK object is made
// of plain JavaScript objects and functions, so no Go value is reachable
// through a prototype. Every call into Kule (kule.tasks.list, …) is a
// bridge call the kernel answers after checking the extension's approved
// permissions; the host decides nothing about permissions.
//
// Limits, each of which stops the runtime and leaves the host running:
//   - a time limit per call (Load, a command, a hook), enforced with
//     goja's Runtime.Interrupt: an endless loop is stopped;
//   - a call stack of at most MaxCallStack frames: deep recursion throws a
//     RangeError instead of growing the Go stack;
//   - a memory ceiling: a watchdog reads the heap's size and interrupts
//     the runtime that is running past it, which is then dropped.
package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"runtime/metrics"
	"sort"
	"sync"
	"time"

	"github.com/dop251/goja"
	"github.com/dop251/goja_nodejs/eventloop"
	"github.com/dop251/goja_nodejs/require"
	"github.com/hashicorp/go-hclog"

	"github.com/kulehq/kule/sdk/extension"
)

// Defaults of a runtime's limits, when the kernel's LoadRequest leaves them
// at zero.
const (
	DefaultCallTimeout = 2 * time.Second
	DefaultMemoryLimit = 256 << 20
	// MaxCallStack is the deepest JavaScript call stack a runtime allows.
	MaxCallStack = 4000
	// watchEvery is how often the memory watchdog reads the heap.
	watchEvery = 5 * time.Millisecond
)

// Host runs extensions; it implements extension.Handler.
type Host struct {
	log hclog.Logger

	mu  sync.Mutex
	rts map[string]*rt

	watchOnce sync.Once
}

var _ extension.Handler = (*Host)(nil)

// New returns an empty host logging to log (nil: nowhere).
func New(log hclog.Logger) *Host {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &Host{log: log, rts: map[string]*rt{}}
}

// Main serves the host to the kernel that started it (`kule-plugins __plugin
// extension/host`); it returns when the kernel ends it.
func Main() int {
	extension.Serve(New(hclog.New(&hclog.LoggerOptions{Name: extension.HostName, JSONFormat: true, Level: hclog.Info})))
	return 0
}

// rt is one extension's runtime.
type rt struct {
	id, version string
	log         hclog.Logger
	loop        *eventloop.EventLoop
	vm          *goja.Runtime // used only on the loop's goroutine, or for Interrupt
	timeout     time.Duration
	memLimit    int64
	settings    map[string]any

	// set on the loop
	commands  map[string]goja.Callable
	notes     goja.Callable
	parse     goja.Callable // JSON.parse as it was before the extension ran
	stringfy  goja.Callable // JSON.stringify, likewise
	settle    goja.Callable
	timers    map[int64]func() // a live timer's number: what clears it
	nextTimer int64

	callMu  sync.Mutex // one call at a time
	mu      sync.Mutex
	bridge  extension.Bridge
	ctx     context.Context
	inCall  bool
	inTimer int  // bounded jobs running outside a call
	over    bool // went past its memory ceiling: stopped for good
}

var errStopped = errors.New("stopped")

// Load makes the extension's runtime (replacing one of the same id) and
// runs its main script within the time limit.
func (h *Host) Load(ctx context.Context, req extension.LoadRequest, bridge extension.Bridge) (extension.Result, error) {
	src, ok := req.Files[req.Main]
	if !ok {
		return extension.Result{}, &extension.CallError{Kind: extension.FailNotFound, Message: fmt.Sprintf("%s: no main script %q in the package", req.Extension, req.Main)}
	}
	h.watchOnce.Do(func() { go h.watch() })
	r := &rt{id: req.Extension, version: req.Version, log: h.log.Named(req.Extension), timeout: time.Duration(req.CallTimeoutMS) * time.Millisecond,
		memLimit: req.MemoryLimitBytes, commands: map[string]goja.Callable{}, timers: map[int64]func(){}}
	if r.timeout <= 0 {
		r.timeout = DefaultCallTimeout
	}
	if r.memLimit <= 0 {
		r.memLimit = DefaultMemoryLimit
	}
	if len(req.Settings) > 0 {
		if err := json.Unmarshal(req.Settings, &r.settings); err != nil {
			return extension.Result{}, &extension.CallError{Kind: extension.FailRefused, Message: "settings are not a JSON object: " + err.Error()}
		}
	}
	// goja_nodejs's loop always puts a require on the runtime; it is given
	// a registry that loads nothing, and deleted before any script runs.
	r.loop = eventloop.NewEventLoop(eventloop.EnableConsole(false),
		eventloop.WithRegistry(require.NewRegistry(require.WithLoader(func(string) ([]byte, error) { return nil, require.ModuleFileDoesNotExistError }))))
	ready := make(chan error, 1)
	r.loop.RunOnLoop(func(vm *goja.Runtime) { ready <- r.setup(vm) })
	r.loop.Start()
	if err := <-ready; err != nil {
		r.loop.Terminate()
		return extension.Result{}, &extension.CallError{Kind: extension.FailRefused, Message: err.Error()}
	}
	h.mu.Lock()
	if old := h.rts[req.Extension]; old != nil {
		go old.stop()
	}
	h.rts[req.Extension] = r
	h.mu.Unlock()

	_, err := r.run(ctx, bridge, func(vm *goja.Runtime) (goja.Value, error) {
		return vm.RunScript(req.Extension+"/"+req.Main, string(src))
	})
	if err != nil {
		h.drop(r)
		return extension.Result{}, err
	}
	return extension.Result{Registered: r.registered(), HeapBytes: heapBytes()}, nil
}

// Invoke calls a command or the review-notes hook.
func (h *Host) Invoke(ctx context.Context, req extension.InvokeRequest, bridge extension.Bridge) (extension.Result, error) {
	h.mu.Lock()
	r := h.rts[req.Extension]
	h.mu.Unlock()
	if r == nil {
		return extension.Result{}, &extension.CallError{Kind: extension.FailNotFound, Message: req.Extension + " is not loaded"}
	}
	args := req.Args
	if len(args) == 0 {
		args = json.RawMessage("null")
	}
	v, err := r.run(ctx, bridge, func(vm *goja.Runtime) (goja.Value, error) {
		var fn goja.Callable
		switch req.Kind {
		case "command":
			fn = r.commands[req.Name]
		case "review.notes":
			fn = r.notes
		}
		if fn == nil {
			return nil, &extension.CallError{Kind: extension.FailNotFound, Message: fmt.Sprintf("%s registered no %s %q", req.Extension, req.Kind, req.Name)}
		}
		arg, err := r.parse(goja.Undefined(), vm.ToValue(string(args)))
		if err != nil {
			return nil, err
		}
		return fn(goja.Undefined(), arg)
	})
	if err != nil {
		var ce *extension.CallError
		if errors.As(err, &ce) && ce.Kind == extension.FailMemory {
			h.drop(r)
		}
		return extension.Result{}, err
	}
	return extension.Result{Value: v, HeapBytes: heapBytes()}, nil
}

func (h *Host) drop(r *rt) {
	h.mu.Lock()
	if h.rts[r.id] == r {
		delete(h.rts, r.id)
	}
	h.mu.Unlock()
	go func() {
		r.stop()
		runtime.GC()
	}()
}

func (r *rt) stop() {
	r.vm.Interrupt(errStopped)
	r.loop.Terminate()
}

// outcome is what one call came to.
type outcome struct {
	json json.RawMessage
	err  error
}

// run runs start on the loop, waits for its value (a promise is waited
// for) and returns it as JSON, within the runtime's time limit.
func (r *rt) run(ctx context.Context, bridge extension.Bridge, start func(*goja.Runtime) (goja.Value, error)) (json.RawMessage, error) {
	r.callMu.Lock()
	defer r.callMu.Unlock()
	r.mu.Lock()
	if r.over {
		r.mu.Unlock()
		return nil, &extension.CallError{Kind: extension.FailMemory, Message: r.id + " was stopped after it went past its memory ceiling; reload it"}
	}
	r.bridge, r.ctx, r.inCall = bridge, ctx, true
	r.mu.Unlock()
	defer func() { r.mu.Lock(); r.inCall = false; r.mu.Unlock() }()

	done := make(chan outcome, 2)
	started := make(chan struct{})
	r.loop.RunOnLoop(func(vm *goja.Runtime) {
		close(started)
		v, err := start(vm)
		if err != nil {
			done <- outcome{err: r.classify(err)}
			return
		}
		ok := func(c goja.FunctionCall) goja.Value {
			s, err := r.toJSON(c.Argument(0))
			done <- outcome{json: s, err: err}
			return goja.Undefined()
		}
		fail := func(c goja.FunctionCall) goja.Value {
			done <- outcome{err: &extension.CallError{Kind: extension.FailException, Message: describe(c.Argument(0))}}
			return goja.Undefined()
		}
		if _, err := r.settle(goja.Undefined(), v, vm.ToValue(ok), vm.ToValue(fail)); err != nil {
			done <- outcome{err: r.classify(err)}
		}
	})
	// The call's clock starts when it starts: a timer still running on the
	// loop is stopped at its own limit first. Every job on the loop is
	// bounded, so the wait is too; past twice the limit, whatever holds
	// the loop is stopped and this call with it.
	wait := time.NewTimer(2 * r.timeout)
	defer wait.Stop()
	select {
	case <-started:
	case <-wait.C:
		r.interrupt()
		return nil, &extension.CallError{Kind: extension.FailInterrupted, Message: fmt.Sprintf("%s kept its runtime busy past its time limit of %s and was stopped; the host and other extensions go on", r.id, r.timeout)}
	case <-ctx.Done():
		r.interrupt()
		return nil, ctx.Err()
	}
	t := time.NewTimer(r.timeout)
	defer t.Stop()
	select {
	case o := <-done:
		return o.json, o.err
	case <-t.C:
		r.interrupt()
		r.mu.Lock()
		over := r.over
		r.mu.Unlock()
		if over {
			return nil, &extension.CallError{Kind: extension.FailMemory, Message: fmt.Sprintf("%s went past its memory ceiling of %d MiB and was stopped; the host and other extensions go on", r.id, r.memLimit>>20)}
		}
		return nil, &extension.CallError{Kind: extension.FailInterrupted, Message: fmt.Sprintf("%s ran past its time limit of %s and was stopped; the host and other extensions go on", r.id, r.timeout)}
	case <-ctx.Done():
		r.interrupt()
		return nil, ctx.Err()
	}
}

// interrupt stops whatever script runs on the loop and waits until the loop
// is free again, so the next call starts clean.
func (r *rt) interrupt() {
	r.vm.Interrupt(errStopped)
	ack := make(chan struct{})
	if !r.loop.RunOnLoop(func(vm *goja.Runtime) { vm.ClearInterrupt(); close(ack) }) {
		return
	}
	select {
	case <-ack:
	case <-time.After(30 * time.Second):
		r.log.Error("runtime did not stop after an interrupt")
	}
}

// bounded runs job (a timer's callback, or the reactions to an answer
// that came after its call) on the loop within the runtime's time limit
// and memory ceiling, as a call would be: it runs between calls too, and
// nothing else would stop it there. It reports false when job was stopped.
// Its own interrupt is cleared here, on the loop, before the next job.
func (r *rt) bounded(what string, job func() error) bool {
	r.mu.Lock()
	if r.over {
		r.mu.Unlock()
		return false
	}
	r.inTimer++
	r.mu.Unlock()
	var mu sync.Mutex
	armed, fired := true, false
	deadline := time.AfterFunc(r.timeout, func() {
		mu.Lock()
		defer mu.Unlock()
		if armed {
			fired = true
			r.vm.Interrupt(errStopped)
		}
	})
	err := job()
	deadline.Stop()
	mu.Lock()
	armed = false
	if fired {
		r.vm.ClearInterrupt()
	}
	mu.Unlock()
	r.mu.Lock()
	r.inTimer--
	r.mu.Unlock()
	var ie *goja.InterruptedError
	switch {
	case fired:
		r.log.Warn(what+" ran past its time limit and was stopped", "limit", r.timeout)
		return false
	case errors.As(err, &ie):
		return false // a call's limit or the memory watchdog stopped it; they report it
	case err != nil:
		r.log.Warn(what+" failed", "error", err.Error())
	}
	return true
}

// classify turns a script's failure into a CallError.
func (r *rt) classify(err error) error {
	var ce *extension.CallError
	if errors.As(err, &ce) {
		return ce
	}
	var ie *goja.InterruptedError
	if errors.As(err, &ie) {
		r.mu.Lock()
		over := r.over
		r.mu.Unlock()
		if over {
			return &extension.CallError{Kind: extension.FailMemory, Message: fmt.Sprintf("%s went past its memory ceiling of %d MiB and was stopped; the host and other extensions go on", r.id, r.memLimit>>20)}
		}
		return &extension.CallError{Kind: extension.FailInterrupted, Message: fmt.Sprintf("%s ran past its time limit of %s and was stopped; the host and other extensions go on", r.id, r.timeout)}
	}
	var ex *goja.Exception
	if errors.As(err, &ex) {
		return &extension.CallError{Kind: extension.FailException, Message: ex.Error()}
	}
	var se *goja.StackOverflowError
	if errors.As(err, &se) {
		return &extension.CallError{Kind: extension.FailException, Message: "RangeError: call stack too deep"}
	}
	return &extension.CallError{Kind: extension.FailException, Message: err.Error()}
}

func describe(v goja.Value) string {
	if v == nil || goja.IsUndefined(v) {
		return "rejected"
	}
	if o, ok := v.(*goja.Object); ok {
		if s := o.Get("stack"); s != nil && !goja.IsUndefined(s) {
			return s.String()
		}
	}
	return v.String()
}

func (r *rt) toJSON(v goja.Value) (json.RawMessage, error) {
	if v == nil || goja.IsUndefined(v) {
		return json.RawMessage("null"), nil
	}
	s, err := r.stringfy(goja.Undefined(), v)
	if err != nil {
		return nil, r.classify(err)
	}
	if goja.IsUndefined(s) {
		return json.RawMessage("null"), nil
	}
	return json.RawMessage(s.String()), nil
}

func (r *rt) registered() []string {
	done := make(chan []string, 1)
	r.loop.RunOnLoop(func(*goja.Runtime) {
		var out []string
		for id := range r.commands {
			out = append(out, "command:"+id)
		}
		if r.notes != nil {
			out = append(out, "review.notes")
		}
		sort.Strings(out)
		done <- out
	})
	return <-done
}

// watch is the memory watchdog: a runtime that is running a call while the
// heap is past its ceiling is interrupted and marked over.
func (h *Host) watch() {
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	for range t.C {
		heap := heapBytes()
		h.mu.Lock()
		for _, r := range h.rts {
			r.mu.Lock()
			if (r.inCall || r.inTimer > 0) && !r.over && heap > r.memLimit {
				r.over = true
				r.vm.Interrupt(errStopped)
				r.log.Warn("runtime stopped: past its memory ceiling", "heap", heap, "limit", r.memLimit)
			}
			r.mu.Unlock()
		}
		h.mu.Unlock()
	}
}

var heapSample = []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
var heapMu sync.Mutex

// heapBytes is the bytes of live and not yet swept heap objects.
func heapBytes() int64 {
	heapMu.Lock()
	defer heapMu.Unlock()
	metrics.Read(heapSample)
	return int64(heapSample[0].Value.Uint64())
}
