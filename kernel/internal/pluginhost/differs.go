package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kulehq/kule/sdk/differ"
	sdkplugin "github.com/kulehq/kule/sdk/plugin"
)

// Differ is a differ plugin as the kernel uses it: every call goes to the
// plugin's process with a deadline, and what comes back is checked before it
// is returned.
type Differ struct {
	h       *Host
	name    string
	builtin bool
}

// Name is the differ's name ("go", "ini").
func (d *Differ) Name() string { return d.name }

// Builtin says whether the differ is compiled into kule.
func (d *Differ) Builtin() bool { return d.builtin }

// String is "differ go (built-in)" or "differ ini".
func (d *Differ) String() string {
	if d.builtin {
		return "differ " + d.name + " (built-in)"
	}
	return "differ " + d.name
}

// call runs f on the plugin's process with the host's per-call deadline; a
// process that crashed or hung is stopped so the next call starts afresh.
func (d *Differ) call(ctx context.Context, what string, f func(ctx context.Context, c *sdkplugin.DifferClient) error) error {
	p, err := d.h.get(ctx, "differ", d.name, d.builtin)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, d.h.opts.CallTimeout)
	defer cancel()
	err = f(cctx, p.differ)
	if err == nil {
		return nil
	}
	if errors.Is(err, sdkplugin.ErrUnimplemented) {
		return err
	}
	// gRPC may report the deadline a moment before the context's own timer
	// marks it done: either is the call running out of time.
	if (cctx.Err() != nil || status.Code(err) == codes.DeadlineExceeded) && ctx.Err() == nil {
		d.h.drop(p)
		d.h.opts.Logger.Warn("plugin call timed out; plugin stopped", "plugin", d.name, "call", what, "timeout", d.h.opts.CallTimeout)
		return fmt.Errorf("%w: %s: %s took longer than %v; the plugin was stopped", ErrCall, d, what, d.h.opts.CallTimeout)
	}
	if mustRestart(p, err) {
		d.h.drop(p)
		d.h.opts.Logger.Warn("plugin call failed; plugin stopped", "plugin", d.name, "call", what, "error", err)
		return fmt.Errorf("%w: %s: %s: the plugin stopped answering (%v)", ErrCall, d, what, err)
	}
	return fmt.Errorf("%w: %s: %s: %v", ErrCall, d, what, err)
}

// Entities asks the differ for the entities of src and checks them
// (differ.Validate). Any failure is an error for this file only.
func (d *Differ) Entities(ctx context.Context, path string, src []byte) ([]differ.Entity, error) {
	var es []differ.Entity
	err := d.call(ctx, "entities of "+path, func(ctx context.Context, c *sdkplugin.DifferClient) (err error) {
		r, err := c.Entities(ctx, differ.EntitiesRequest{Path: path, Content: src})
		es = r.Entities
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := differ.Validate(src, es); err != nil {
		return nil, fmt.Errorf("%w: %s on %s: %v", ErrGarbage, d, path, err)
	}
	return es, nil
}

// Merge asks the differ to merge three versions of path. It returns an error
// wrapping sdkplugin.ErrUnimplemented when the differ has no Merger.
func (d *Differ) Merge(ctx context.Context, path string, base, ours, theirs []byte) (differ.MergeResponse, error) {
	var r differ.MergeResponse
	err := d.call(ctx, "merge of "+path, func(ctx context.Context, c *sdkplugin.DifferClient) (err error) {
		r, err = c.Merge(ctx, differ.MergeRequest{Path: path, Base: base, Ours: ours, Theirs: theirs})
		return err
	})
	if err != nil {
		return differ.MergeResponse{}, err
	}
	if len(r.Conflicts) == 0 && r.Merged == nil {
		return differ.MergeResponse{}, fmt.Errorf("%w: %s: merge of %s returned neither a file nor conflicts", ErrGarbage, d, path)
	}
	return r, nil
}

// scanDiffers reads the manifests of installed differs once per host.
func (h *Host) scanDiffers() []installed {
	h.mu.Lock()
	if h.scanned {
		defer h.mu.Unlock()
		return h.third
	}
	h.mu.Unlock()
	names, err := h.List()
	if err != nil {
		h.notice("plugins: %v", err)
	}
	aps, err := h.approvals()
	if err != nil {
		h.notice("plugins: %v", err)
	}
	var out []installed
	for _, n := range names {
		in, err := h.readInstalled(n)
		if err != nil {
			h.notice("plugin %s is not used: %v", n, err)
			continue
		}
		if in.manifest.Kind != "differ" {
			continue
		}
		if a, ok := aps[n]; ok && reasonByRecord(in, &a) == "" {
			in.approved = true
		} else {
			var ap *Approval
			if ok {
				ap = &a
			}
			h.notice("plugin %s waits for approval: %s; see kule plugins show %s", n, reason(in, in.manifest.SHA256, ap), n)
		}
		out = append(out, in)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].manifest.Name < out[j].manifest.Name })
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.scanned {
		h.third, h.scanned = out, true
	}
	return h.third
}

// DifferFor returns the differ that reads the file at path (a slash path
// relative to the folder), or nil when none does. Precedence: approved
// third-party differs whose patterns match and whose Accepts agrees, by name;
// then built-ins in table order, except those a third-party plugin of the
// same name replaces. A third-party differ that waits for approval or fails
// to start is passed over, and Notices says why.
func (h *Host) DifferFor(ctx context.Context, path string) *Differ {
	third := h.scanDiffers()
	replaced := map[string]bool{}
	for _, in := range third {
		if !in.approved {
			continue // waits for approval: the built-in of that name, if any, still reads
		}
		replaced[in.manifest.Name] = true
		if !in.manifest.Matches(path) {
			continue
		}
		d := &Differ{h: h, name: in.manifest.Name}
		var ok bool
		err := d.call(ctx, "accepts "+path, func(ctx context.Context, c *sdkplugin.DifferClient) (err error) {
			ok, err = c.Accepts(ctx, path)
			return err
		})
		if err != nil {
			h.notice("plugin %s is not used for %s: %v", in.manifest.Name, path, err)
			continue
		}
		if ok {
			return d
		}
	}
	for _, b := range h.opts.Builtins {
		if b.Kind != "differ" || replaced[b.Name] || b.Accepts == nil || !b.Accepts(path) {
			continue
		}
		return &Differ{h: h, name: b.Name, builtin: true}
	}
	return nil
}

// IsBuiltinReplaced reports whether an approved installed plugin replaces
// the built-in differ name.
func (h *Host) IsBuiltinReplaced(name string) bool {
	for _, in := range h.scanDiffers() {
		if in.approved && in.manifest.Name == name {
			return true
		}
	}
	return false
}
