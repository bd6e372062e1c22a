package acp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/kulehq/kule/kernel/internal/runner"
)

// DefaultOutputLimit bounds a terminal's kept output when the agent names no limit.
const DefaultOutputLimit = 1 << 20

// markerVar is set in the environment of everything Kule starts for an agent;
// its value is unique per process tree, so the tree can be found and ended
// even where no PID namespace holds it (the direct runner).
const markerVar = "KULE_ACP_TREE"

func newMarker() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// tailBuffer keeps the last limit bytes written to it, cut at a character
// boundary, and says whether it dropped any.
type tailBuffer struct {
	mu        sync.Mutex
	buf       []byte
	limit     int
	truncated bool
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if t.limit >= 0 && len(t.buf) > t.limit {
		cut := len(t.buf) - t.limit
		for cut < len(t.buf) && !utf8.RuneStart(t.buf[cut]) {
			cut++
		}
		t.buf = append([]byte(nil), t.buf[cut:]...)
		t.truncated = true
	}
	return len(p), nil
}

func (t *tailBuffer) String() (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.ToValidUTF8(string(t.buf), "\uFFFD"), t.truncated
}

type terminal struct {
	id      string
	command string
	marker  string
	out     *tailBuffer
	cancel  context.CancelFunc
	done    chan struct{}
	status  exitStatus
	err     error
}

type terminals struct {
	mu     sync.Mutex
	n      int
	byID   map[string]*terminal
	run    runner.Runner
	base   runner.Spec
	files  files
	onDone func(*terminal)
}

func (ts *terminals) create(ctx context.Context, p createTerminalParams) (string, *RPCError) {
	if p.Command == "" {
		return "", &RPCError{Code: CodeInvalidParams, Message: "terminal/create: no command"}
	}
	dir := ts.files.copy
	if p.Cwd != nil && *p.Cwd != "" {
		rel, rerr := ts.files.rel(*p.Cwd)
		if rerr != nil {
			return "", rerr
		}
		dir = filepath.Join(ts.files.copy, rel)
	}
	args := append([]string{p.Command}, p.Args...)
	if len(p.Args) == 0 && strings.ContainsAny(p.Command, " \t|&;<>()$`'\"*?\n") {
		// A whole command line in "command": agents send that too.
		args = []string{"/bin/sh", "-c", p.Command}
	}
	limit := int64(DefaultOutputLimit)
	if p.OutputByteLimit != nil && *p.OutputByteLimit >= 0 {
		limit = *p.OutputByteLimit
	}
	t := &terminal{command: strings.Join(args, " "), marker: newMarker(), out: &tailBuffer{limit: int(min(limit, 1<<30))}, done: make(chan struct{})}
	spec := ts.base
	spec.Args = args
	spec.Dir = dir
	spec.Env = append(append([]string(nil), ts.base.Env...), markerVar+"="+t.marker)
	for _, e := range p.Env {
		spec.Env = append(spec.Env, e.Name+"="+e.Value)
	}
	spec.Stdin = strings.NewReader("")
	spec.Stdout, spec.Stderr = t.out, t.out
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	t.cancel = cancel
	ts.mu.Lock()
	ts.n++
	t.id = fmt.Sprintf("term-%d", ts.n)
	if ts.byID == nil {
		ts.byID = map[string]*terminal{}
	}
	ts.byID[t.id] = t
	ts.mu.Unlock()
	go func() {
		code, err := ts.run.Run(rctx, spec)
		killTree(t.marker)
		if err != nil {
			t.err = err
			fmt.Fprintf(t.out, "\nkule: the command could not run: %v\n", err)
			c := 127
			t.status.ExitCode = &c
		} else if code > 128 && rctx.Err() != nil {
			sig := "SIGKILL"
			t.status.Signal = &sig
		} else {
			t.status.ExitCode = &code
		}
		close(t.done)
		if ts.onDone != nil {
			ts.onDone(t)
		}
	}()
	return t.id, nil
}

func (ts *terminals) get(id string) (*terminal, *RPCError) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t, ok := ts.byID[id]
	if !ok {
		return nil, &RPCError{Code: CodeInvalidParams, Message: fmt.Sprintf("%v: %q", ErrNoTerminal, id)}
	}
	return t, nil
}

func (ts *terminals) output(id string) (terminalOutputResult, *RPCError) {
	t, rerr := ts.get(id)
	if rerr != nil {
		return terminalOutputResult{}, rerr
	}
	var r terminalOutputResult
	select {
	case <-t.done:
		st := t.status
		r.ExitStatus = &st
	default:
	}
	r.Output, r.Truncated = t.out.String()
	return r, nil
}

func (ts *terminals) wait(ctx context.Context, id string) (exitStatus, *RPCError) {
	t, rerr := ts.get(id)
	if rerr != nil {
		return exitStatus{}, rerr
	}
	select {
	case <-t.done:
		return t.status, nil
	case <-ctx.Done():
		return exitStatus{}, &RPCError{Code: CodeInternalError, Message: "terminal/wait_for_exit: the connection ended"}
	}
}

func (ts *terminals) kill(id string) *RPCError {
	t, rerr := ts.get(id)
	if rerr != nil {
		return rerr
	}
	t.cancel()
	killTree(t.marker)
	return nil
}

func (ts *terminals) release(id string) *RPCError {
	if rerr := ts.kill(id); rerr != nil {
		return rerr
	}
	ts.mu.Lock()
	delete(ts.byID, id)
	ts.mu.Unlock()
	return nil
}

// closeAll kills every terminal and waits for each to end.
func (ts *terminals) closeAll() {
	ts.mu.Lock()
	all := make([]*terminal, 0, len(ts.byID))
	for _, t := range ts.byID {
		all = append(all, t)
	}
	ts.mu.Unlock()
	for _, t := range all {
		t.cancel()
		killTree(t.marker)
		<-t.done
	}
}
