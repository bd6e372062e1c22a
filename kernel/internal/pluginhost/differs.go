package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/kulehq/kule/sdk/differ"
	sdkplugin "github.com/kulehq/kule/sdk/plugin"
)

// Differ is a differ plugin as the kernel uses it: every call goes to the
// plugin's process with a deadline, and what comes back is checked before it
// is returned.
type Differ struct{ handle }

// call runs f on the differ's process (handle.call); a differ without the
// asked method answers sdkplugin.ErrUnimplemented.
func (d *Differ) call(ctx context.Context, what string, f func(ctx context.Context, c *sdkplugin.DifferClient) error) error {
	return d.handle.call(ctx, what, func(err error) bool { return errors.Is(err, sdkplugin.ErrUnimplemented) }, func(ctx context.Context, p *proc) error {
		if p.differ == nil {
			return fmt.Errorf("%w: %s is not a differ", ErrHandshake, d)
		}
		return f(ctx, p.differ)
	})
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

// scanDiffers reads the manifests of installed differs and previewers once
// per host.
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
		if in.manifest.Kind != "differ" && in.manifest.Kind != "previewer" {
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
// relative to the folder), or nil when none does; precedence as pluginFor
// says.
func (h *Host) DifferFor(ctx context.Context, path string) *Differ {
	x, ok := h.pluginFor(ctx, "differ", path, func(ctx context.Context, x handle) (ok bool, err error) {
		err = (&Differ{x}).call(ctx, "accepts "+path, func(ctx context.Context, c *sdkplugin.DifferClient) (err error) {
			ok, err = c.Accepts(ctx, path)
			return err
		})
		return ok, err
	})
	if !ok {
		return nil
	}
	return &Differ{x}
}

// IsBuiltinReplaced reports whether an approved installed plugin replaces
// the built-in differ name.
func (h *Host) IsBuiltinReplaced(name string) bool {
	for _, in := range h.scanDiffers() {
		if in.approved && in.manifest.Name == name && in.manifest.Kind == "differ" {
			return true
		}
	}
	return false
}
