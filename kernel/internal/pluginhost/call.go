package pluginhost

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// handle is one plugin as the kernel calls it: its kind ("differ",
// "previewer"), its name, and whether it is compiled into kule.
type handle struct {
	h       *Host
	kind    string
	name    string
	builtin bool
}

// Name is the plugin's name ("go", "text", "ini").
func (x handle) Name() string { return x.name }

// Builtin says whether the plugin is compiled into kule.
func (x handle) Builtin() bool { return x.builtin }

// String is "differ go (built-in)" or "previewer ini".
func (x handle) String() string {
	if x.builtin {
		return x.kind + " " + x.name + " (built-in)"
	}
	return x.kind + " " + x.name
}

// call runs f on the plugin's process with the host's per-call deadline; a
// process that crashed or hung is stopped so the next call starts afresh.
// answer says which errors are the plugin's own answer (a differ without a
// merger, a file a previewer cannot show): those come back as they are.
func (x handle) call(ctx context.Context, what string, answer func(error) bool, f func(ctx context.Context, p *proc) error) error {
	p, err := x.h.get(ctx, x.kind, x.name, x.builtin)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, x.h.opts.CallTimeout)
	defer cancel()
	err = f(cctx, p)
	if err == nil || answer(err) {
		return err
	}
	// gRPC may report the deadline a moment before the context's own timer
	// marks it done: either is the call running out of time.
	if (cctx.Err() != nil || status.Code(err) == codes.DeadlineExceeded) && ctx.Err() == nil {
		x.h.drop(p)
		x.h.opts.Logger.Warn("plugin call timed out; plugin stopped", "plugin", x.name, "call", what, "timeout", x.h.opts.CallTimeout)
		return fmt.Errorf("%w: %s: %s took longer than %v; the plugin was stopped", ErrCall, x, what, x.h.opts.CallTimeout)
	}
	if mustRestart(p, err) {
		x.h.drop(p)
		x.h.opts.Logger.Warn("plugin call failed; plugin stopped", "plugin", x.name, "call", what, "error", err)
		return fmt.Errorf("%w: %s: %s: the plugin stopped answering (%v)", ErrCall, x, what, err)
	}
	return fmt.Errorf("%w: %s: %s: %v", ErrCall, x, what, err)
}

// pluginFor finds the plugin of kind that reads the file at path (a slash
// path relative to the folder), or reports false when none does.
// Precedence: approved third-party plugins of that kind whose patterns match
// and whose Accepts agrees (asked through accepts), by name; then built-ins
// in table order, except those a third-party plugin of the same name
// replaces. A third-party plugin that waits for approval or fails to start
// is passed over (the built-in of that name, if any, still reads), and
// Notices says why.
func (h *Host) pluginFor(ctx context.Context, kind, path string, accepts func(ctx context.Context, x handle) (bool, error)) (handle, bool) {
	replaced := map[string]bool{}
	for _, in := range h.scanDiffers() {
		if in.manifest.Kind != kind || !in.approved {
			continue
		}
		replaced[in.manifest.Name] = true
		if !in.manifest.Matches(path) {
			continue
		}
		x := handle{h: h, kind: kind, name: in.manifest.Name}
		ok, err := accepts(ctx, x)
		if err != nil {
			h.notice("plugin %s is not used for %s: %v", in.manifest.Name, path, err)
			continue
		}
		if ok {
			return x, true
		}
	}
	for _, b := range h.opts.Builtins {
		if b.Kind != kind || replaced[b.Name] || b.Accepts == nil || !b.Accepts(path) {
			continue
		}
		return handle{h: h, kind: kind, name: b.Name, builtin: true}, true
	}
	return handle{}, false
}
