package pluginhost

import (
	"context"
	"errors"
	"fmt"

	sdkplugin "github.com/kulehq/kule/sdk/plugin"
	"github.com/kulehq/kule/sdk/previewer"
)

// Previewer is a previewer plugin as the kernel uses it: every call goes to
// the plugin's process with a deadline, and what comes back is checked
// (previewer.Validate) before it is returned.
type Previewer struct{ handle }

// call runs f on the previewer's process (handle.call); a file it cannot
// show is its answer, previewer.ErrCannotPreview.
func (p *Previewer) call(ctx context.Context, what string, f func(ctx context.Context, c *sdkplugin.PreviewerClient) error) error {
	return p.handle.call(ctx, what, func(err error) bool { return errors.Is(err, previewer.ErrCannotPreview) }, func(ctx context.Context, pr *proc) error {
		if pr.previewer == nil {
			return fmt.Errorf("%w: %s is not a previewer", ErrHandshake, p)
		}
		return f(ctx, pr.previewer)
	})
}

// Preview asks the previewer for the preview of src. A file it cannot show
// is an error wrapping previewer.ErrCannotPreview; an answer that breaks the
// contract is ErrGarbage.
func (p *Previewer) Preview(ctx context.Context, req previewer.Request) (previewer.Response, error) {
	var r previewer.Response
	err := p.call(ctx, "preview of "+req.Path, func(ctx context.Context, c *sdkplugin.PreviewerClient) (err error) {
		r, err = c.Preview(ctx, req)
		return err
	})
	if err != nil {
		return previewer.Response{}, err
	}
	if err := previewer.Validate(r, req.Limit()); err != nil {
		return previewer.Response{}, fmt.Errorf("%w: %s on %s: %v", ErrGarbage, p, req.Path, err)
	}
	return r, nil
}

// PreviewerFor returns the previewer that reads the file at path (a slash
// path relative to the folder), or nil when none does; precedence as
// pluginFor says, as for differs.
func (h *Host) PreviewerFor(ctx context.Context, path string) *Previewer {
	x, ok := h.pluginFor(ctx, "previewer", path, func(ctx context.Context, x handle) (ok bool, err error) {
		err = (&Previewer{x}).call(ctx, "accepts "+path, func(ctx context.Context, c *sdkplugin.PreviewerClient) (err error) {
			ok, err = c.Accepts(ctx, path)
			return err
		})
		return ok, err
	})
	if !ok {
		return nil
	}
	return &Previewer{x}
}
