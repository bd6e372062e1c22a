package daemon

import (
	"context"
	"slices"
	"sync"

	"github.com/kulehq/kule/kernel"
)

// meets remembers which pairs of tasks on one folder change the same paths,
// so the app is told when two tasks start to meet, once.
type meets struct {
	mu   sync.Mutex
	seen map[[2]string]bool
}

// checkMeets compares t's pending paths with those of the other tasks on its
// folder and publishes a "meet" event for each pair that starts to meet.
// It compares paths, not entities: two tasks meet when they change one file.
func (d *Daemon) checkMeets(t *kernel.Task) {
	ts, err := d.k.Tasks()
	if err != nil {
		return
	}
	mine, err := d.pendingPaths(t)
	if err != nil {
		return
	}
	for _, o := range ts {
		if o.ID == t.ID || o.Folder != t.Folder || d.runs.running(o.ID) {
			continue
		}
		theirs, err := d.pendingPaths(o)
		if err != nil {
			continue
		}
		var both []string
		for p := range mine {
			if theirs[p] {
				both = append(both, p)
			}
		}
		slices.Sort(both)
		key := [2]string{min(t.ID, o.ID), max(t.ID, o.ID)}
		d.meet.mu.Lock()
		was := d.meet.seen[key]
		if d.meet.seen == nil {
			d.meet.seen = map[[2]string]bool{}
		}
		d.meet.seen[key] = len(both) > 0
		d.meet.mu.Unlock()
		if len(both) > 0 && !was {
			d.Bus.Publish("meet", t.ID, map[string]any{"other": o.ID, "title": titleOf(t), "other_title": titleOf(o), "paths": both})
		}
	}
}

func (d *Daemon) pendingPaths(t *kernel.Task) (map[string]bool, error) {
	st, err := d.k.Status(context.Background(), t)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, e := range st.Pending(false) {
		out[e.Path] = true
		if e.From != "" {
			out[e.From] = true
		}
	}
	return out, nil
}

func titleOf(t *kernel.Task) string {
	if t.Name != "" {
		return t.Name
	}
	return t.ID
}

// MeetView is another task on the same folder that changes some of the same paths, as
// Review lists it under the changes.
type MeetView struct {
	Task  string   `json:"task"`
	Title string   `json:"title"`
	Paths []string `json:"paths"`
}

// meetsOf lists the other tasks on t's folder whose pending paths share some with st's. A
// task whose status cannot be read now (it runs, say) is left out.
func (d *Daemon) meetsOf(t *kernel.Task, st *kernel.Status) []MeetView {
	out := []MeetView{}
	ts, err := d.k.Tasks()
	if err != nil {
		return out
	}
	mine := map[string]bool{}
	for _, e := range st.Pending(false) {
		mine[e.Path] = true
	}
	if len(mine) == 0 {
		return out
	}
	for _, o := range ts {
		if o.ID == t.ID || o.Folder != t.Folder || d.runs.running(o.ID) {
			continue
		}
		theirs, err := d.pendingPaths(o)
		if err != nil {
			continue
		}
		var both []string
		for p := range mine {
			if theirs[p] {
				both = append(both, p)
			}
		}
		if len(both) > 0 {
			slices.Sort(both)
			out = append(out, MeetView{Task: o.ID, Title: titleOf(o), Paths: both})
		}
	}
	return out
}
