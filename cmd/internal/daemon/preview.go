package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/kulehq/kule/kernel"
)

// The Preview panel's endpoints:
//
//	GET  /api/tasks/{id}/preview?path=P[&format=1][&side=before]
//	     the file's render model as the task's copy holds it now (or, with
//	     side=before, as the task's base kept it: the review's "before").
//	POST /api/tasks/{id}/about {"prompt": "...", "places": ["P:12-18", ...]}
//	     the prompt with the places listed after it, as kule run --about
//	     sends it; the app then asks the agent with it.
//
// A file that cannot be previewed is 422 with the reason; the rest of the
// app goes on.

// Previews is the plugin host the Preview panel reads with; nil means the
// daemon has none and every preview says so.
type Previews func() (*kernel.PluginHost, func())

// Acquire hands out the shared host for one preview, as reviews use it.
func (s *SharedHost) Acquire() (*kernel.PluginHost, func()) { return s.acquire() }

func (d *Daemon) previewHost() (*kernel.PluginHost, func(), error) {
	if d.cfg.Previews == nil {
		return nil, nil, fmt.Errorf("%w: this daemon has no previewers", kernel.ErrCannotPreview)
	}
	h, done := d.cfg.Previews()
	return h, done, nil
}

func failPreview(w http.ResponseWriter, err error) {
	if errors.Is(err, kernel.ErrCannotPreview) || errors.Is(err, kernel.ErrPlace) {
		writeJSON(w, http.StatusUnprocessableEntity, apiError{Error: err.Error()})
		return
	}
	fail(w, err)
}

func (d *Daemon) previewFile(w http.ResponseWriter, r *http.Request, t *kernel.Task) {
	q := r.URL.Query()
	rel := q.Get("path")
	opts := kernel.PreviewOptions{Format: q.Get("format") == "1"}
	if n, err := strconv.Atoi(q.Get("max")); err == nil {
		opts.MaxBlocks = n
	}
	h, done, err := d.previewHost()
	if err != nil {
		failPreview(w, err)
		return
	}
	defer done()
	var p *kernel.Preview
	if q.Get("side") == "before" {
		p, err = d.previewBefore(r.Context(), t, h, rel, opts)
	} else {
		p, err = d.k.Preview(r.Context(), t, h, rel, opts)
	}
	if err != nil {
		failPreview(w, err)
		return
	}
	writeJSON(w, 200, p)
}

// previewBefore previews rel as the task's base kept it.
func (d *Daemon) previewBefore(ctx context.Context, t *kernel.Task, h *kernel.PluginHost, rel string, opts kernel.PreviewOptions) (*kernel.Preview, error) {
	st, err := d.k.Status(ctx, t)
	if err != nil {
		return nil, err
	}
	for _, e := range st.Effects {
		if e.Path != rel || !kernel.Reviewable(e) || e.Kind == kernel.EffectAdd {
			continue
		}
		old, _, err := st.Contents(e, kernel.MaxPreviewBytes)
		if err != nil {
			return nil, fmt.Errorf("%w %s: its version before cannot be read: %v", kernel.ErrCannotPreview, rel, err)
		}
		return kernel.PreviewBytes(ctx, h, rel, old, opts)
	}
	return nil, fmt.Errorf("%w %s: the task did not change it, so it has no version before", kernel.ErrCannotPreview, rel)
}

// aboutPictures are the picture regions among places, cut out by their
// previewer (out of process), for an agent that takes pictures.
func (d *Daemon) aboutPictures(ctx context.Context, t *kernel.Task, args []string) ([]kernel.Picture, error) {
	places := make([]kernel.Place, 0, len(args))
	regions := false
	for _, a := range args {
		p, err := kernel.ParsePlace(a)
		if err != nil {
			return nil, err
		}
		regions = regions || p.Kind == kernel.PlaceRegion
		places = append(places, p)
	}
	if !regions {
		return nil, nil
	}
	h, done, err := d.previewHost()
	if err != nil {
		return nil, err
	}
	defer done()
	ds, err := d.k.DescribePlaces(ctx, t, h, places)
	if err != nil {
		return nil, err
	}
	return kernel.AboutPictures(ds), nil
}

// AboutRequest is the body of POST /api/tasks/{id}/about.
type AboutRequest struct {
	Prompt string   `json:"prompt"`
	Places []string `json:"places"`
}

func (d *Daemon) aboutPrompt(w http.ResponseWriter, r *http.Request, t *kernel.Task) {
	var in AboutRequest
	if err := readBody(r, &in); err != nil {
		fail(w, err)
		return
	}
	places := make([]kernel.Place, 0, len(in.Places))
	for _, a := range in.Places {
		p, err := kernel.ParsePlace(a)
		if err != nil {
			failPreview(w, err)
			return
		}
		places = append(places, p)
	}
	h, done, err := d.previewHost()
	if err != nil {
		failPreview(w, err)
		return
	}
	defer done()
	ds, err := d.k.DescribePlaces(r.Context(), t, h, places)
	if err != nil {
		failPreview(w, err)
		return
	}
	writeJSON(w, 200, map[string]any{"prompt": kernel.AboutPrompt(in.Prompt, ds), "places": ds})
}
