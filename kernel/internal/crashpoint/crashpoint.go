// Package crashpoint lets tests prove crash safety by killing the process at a
// named step. `KULE_CRASH_AT=commit.staged` makes the process SIGKILL itself
// when it reaches that step; `KULE_FAULT=stage.write:ENOSPC` makes a named
// operation fail with that error (`stage.write@3:ENOSPC`: its third call
// only, so a refusal comes with work already staged). Both are read once at
// start; unset, each
// check is a single comparison. An in-process test may instead set a Hook to
// act at a step (change the copy between judging and applying, say).
package crashpoint

import (
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

var hook atomic.Pointer[func(step string)]

// SetHook makes every Hit call fn with its step name; nil removes it. Tests
// only: it returns a function that puts the earlier hook back.
func SetHook(fn func(step string)) (restore func()) {
	var p *func(string)
	if fn != nil {
		p = &fn
	}
	old := hook.Swap(p)
	return func() { hook.Store(old) }
}

var (
	crashAt                      = os.Getenv("KULE_CRASH_AT")
	faultAt, faultNth, faultErrn = parseFault(os.Getenv("KULE_FAULT"))
	faultCalls                   atomic.Int64
)

// parseFault reads name[@N][:ERRNO]; N (from 1) picks the one call that
// fails, 0 fails every call.
func parseFault(f string) (string, int64, syscall.Errno) {
	if f == "" {
		return "", 0, 0
	}
	name, errName, _ := strings.Cut(f, ":")
	name, nth, _ := strings.Cut(name, "@")
	n, err := strconv.ParseInt(nth, 10, 64)
	if err != nil || n < 0 {
		n = 0
	}
	errn := map[string]syscall.Errno{"ENOSPC": syscall.ENOSPC, "EIO": syscall.EIO, "EACCES": syscall.EACCES, "EDQUOT": syscall.EDQUOT}[errName]
	if errn == 0 {
		errn = syscall.EIO
	}
	return name, n, errn
}

// Hit kills the process with SIGKILL if KULE_CRASH_AT names this step, after
// calling the hook, if one is set.
func Hit(step string) {
	if fn := hook.Load(); fn != nil {
		(*fn)(step)
	}
	if crashAt != "" && crashAt == step {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
}

// Fault returns the injected error for this operation, or nil.
func Fault(op string) error {
	if faultAt == "" || faultAt != op {
		return nil
	}
	if n := faultCalls.Add(1); faultNth != 0 && n != faultNth {
		return nil
	}
	return faultErrn
}
