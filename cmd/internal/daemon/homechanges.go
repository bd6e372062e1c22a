package daemon

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/kulehq/kule/kernel"
)

// Review's home changes: what a task's commands changed in their home (the task's home layer:
// ~/.bashrc, ~/.gitconfig, …), with Show (the person's version against the task's), Apply (the
// task's version into the person's home, when the policy lets it; the person's own file is
// kept for Undo) and Undo (the last apply taken back), as `kule home` does. Files that run at
// every start of a shell or a tool are listed first. The kernel does the reading and the
// writing (homelayer, beneath the home, never through a link).

// HomeChangeView is one home change as Review lists it.
type HomeChangeView struct {
	Path        string `json:"path"`
	Kind        string `json:"kind"`
	RunsAtStart bool   `json:"runs_at_start,omitempty"`
	Verdict     string `json:"verdict"`
	Rule        string `json:"rule,omitempty"`
	Reason      string `json:"reason,omitempty"`
}

func (d *Daemon) listHome(w http.ResponseWriter, r *http.Request, t *kernel.Task) {
	cs, err := kernel.HomeChanges(kernel.HomeLayer(t))
	if errors.Is(err, os.ErrNotExist) {
		writeJSON(w, 200, []HomeChangeView{})
		return
	}
	if err != nil {
		fail(w, err)
		return
	}
	out := make([]HomeChangeView, 0, len(cs))
	paths := make([]string, 0, len(cs))
	for _, c := range cs {
		paths = append(paths, c.Path)
	}
	var vs []kernel.Verdict
	if len(paths) > 0 {
		if vs, err = d.k.JudgeHome(t, paths); err != nil {
			fail(w, fmt.Errorf("%w — no home change can be applied until the policy reads", err))
			return
		}
	}
	for i, c := range cs {
		v := HomeChangeView{Path: c.Path, Kind: c.Kind, RunsAtStart: c.RunsAtStart, Verdict: word(kernel.OutcomeDeny)}
		if i < len(vs) {
			v.Verdict, v.Rule, v.Reason = word(vs[i].Outcome), strings.Join(vs[i].Rules, ", "), vs[i].Reason
		}
		out = append(out, v)
	}
	// What runs at every start first, as kule home lists it.
	slices.SortStableFunc(out, func(a, b HomeChangeView) int {
		if a.RunsAtStart != b.RunsAtStart {
			if a.RunsAtStart {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Path, b.Path)
	})
	writeJSON(w, 200, out)
}

func (d *Daemon) homeDiff(w http.ResponseWriter, r *http.Request, t *kernel.Task) {
	rel := r.URL.Query().Get("path")
	if err := kernel.CheckRelPath(rel); err != nil {
		fail(w, fmt.Errorf("%w: %v", errPath, err))
		return
	}
	mine, theirs, err := kernel.HomeDiff(kernel.HomeLayer(t), rel)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		fail(w, err)
		return
	}
	if len(mine) > maxDiffBytes || len(theirs) > maxDiffBytes {
		writeJSON(w, 200, FileDiff{Path: rel, Hunks: [][]DiffLine{}, Large: true, Note: "larger than 1 MiB: compare it with kule home"})
		return
	}
	if !isText(mine) || !isText(theirs) {
		writeJSON(w, 200, FileDiff{Path: rel, Hunks: [][]DiffLine{}, Binary: true, Note: "not text: no line diff"})
		return
	}
	writeJSON(w, 200, LineDiff(rel, string(mine), string(theirs)))
}

func (d *Daemon) applyHome(w http.ResponseWriter, r *http.Request, t *kernel.Task) {
	var in struct {
		Path string `json:"path"`
	}
	if err := readBody(r, &in); err != nil {
		fail(w, err)
		return
	}
	if err := kernel.CheckRelPath(in.Path); err != nil {
		fail(w, fmt.Errorf("%w: %v", errPath, err))
		return
	}
	if err := d.k.ApplyHome(t, in.Path); err != nil {
		writeJSON(w, http.StatusConflict, apiError{Error: err.Error()})
		return
	}
	d.Bus.Publish("task", t.ID, map[string]any{"action": "home"})
	writeJSON(w, 200, map[string]any{"applied": in.Path})
}

func (d *Daemon) undoHome(w http.ResponseWriter, r *http.Request, t *kernel.Task) {
	rel, err := d.k.UndoHome(t)
	if err != nil {
		writeJSON(w, http.StatusConflict, apiError{Error: "home: " + err.Error() + "; your home is as it was"})
		return
	}
	d.Bus.Publish("task", t.ID, map[string]any{"action": "home"})
	writeJSON(w, 200, map[string]any{"undone": rel})
}

// homeRoutes adds Review's home endpoints to the API.
func (d *Daemon) homeRoutes(m *http.ServeMux) {
	m.HandleFunc("GET /api/tasks/{id}/home", d.withTask(d.listHome))
	m.HandleFunc("GET /api/tasks/{id}/home/diff", d.withTask(d.homeDiff))
	m.HandleFunc("POST /api/tasks/{id}/home/apply", d.withTask(d.applyHome))
	m.HandleFunc("POST /api/tasks/{id}/home/undo", d.withTask(d.undoHome))
}
