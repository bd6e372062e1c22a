package main

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/effects"
	"github.com/kulehq/kule/kernel/pluginhost"
	"github.com/kulehq/kule/kernel/review"
	"github.com/kulehq/kule/kernel/summary"
)

// reviewMax is the largest file whose names the review reads.
const reviewMax = 8 << 20

// namesView is what kule status adds to a task's changes: the names that
// changed inside each file, where the task meets other tasks on the same
// folder and the person's own edits, and plugin notices.
type namesView struct {
	Files   []review.File `json:"files"`
	Meets   []meetView    `json:"meets,omitempty"`
	Notices []string      `json:"notices,omitempty"`
}

type meetView struct {
	// Task is the other task's id; empty for the person's edits in the folder.
	Task     string           `json:"task,omitempty"`
	ByHand   bool             `json:"by_hand,omitempty"`
	Meetings []review.Meeting `json:"meetings"`
	Line     string           `json:"line"`
}

// changesOf turns a status into the review's input; files it cannot read
// (too large, not kept by the base) are left whole.
func changesOf(st *kernel.Status) []review.Change {
	var out []review.Change
	for _, e := range st.Pending(false) {
		if !kernel.Reviewable(e) {
			continue
		}
		op := review.Changed
		switch e.Kind {
		case effects.Add:
			op = review.Added
		case effects.Delete:
			op = review.Deleted
		}
		old, new, err := st.Contents(e, reviewMax)
		if err != nil {
			continue
		}
		if e.Kind == effects.Move && string(old) == string(new) {
			continue // moved as is: nothing inside changed
		}
		out = append(out, review.Change{Path: e.Path, Op: op, Old: old, New: new})
	}
	return out
}

// wholeChangesOf is changesOf without reading any file: the paths and what
// happened to them (a move keeps its content, so it is left out as there).
func wholeChangesOf(st *kernel.Status) []review.Change {
	var out []review.Change
	for _, e := range st.Pending(false) {
		if !kernel.Reviewable(e) || e.Kind == effects.Move {
			continue
		}
		op := review.Changed
		switch e.Kind {
		case effects.Add:
			op = review.Added
		case effects.Delete:
			op = review.Deleted
		}
		out = append(out, review.Change{Path: e.Path, Op: op})
	}
	return out
}

// reviewNames reviews st by name through the plugin host and finds where it
// meets the other tasks on its folder and the person's edits since base. It
// keeps what it found as the task's summary (kernel/summary), which kule
// list reads; names of files whose bytes are as at the last status are
// reused from it, so no differ starts for them.
func reviewNames(ctx context.Context, k *kernel.Kernel, st *kernel.Status, h *pluginhost.Host, prev *summary.Summary) namesView {
	sum := summary.New(st.Task, st.Pending(false))
	sum.Named = true
	if len(st.Effects) == 0 {
		_ = summary.Save(st.Task, sum) // a cache: kule list works without it
		return namesView{}             // nothing to name, and nothing that can meet
	}
	ds := review.FromHost(h)
	plugins := summary.PluginsKey(k.Store.Root)
	compute := func(cs []review.Change) review.Review { return review.Compute(ctx, ds, cs) }
	namer := summary.NewNamer(prev, plugins)
	rv := namer.Review(compute, changesOf(st))
	v := namesView{Files: rv.Files}
	if others, err := k.Store.List(); err == nil {
		for _, o := range others {
			if o.ID == st.Task.ID || o.Folder != st.Task.Folder {
				continue
			}
			ost, err := k.Status(o)
			if err != nil {
				continue
			}
			orv := summary.NewNamer(summary.Load(o), plugins).Review(compute, changesOf(ost))
			ms := review.Meet(rv, orv)
			if len(ms) > 0 {
				v.Meets = append(v.Meets, meetView{Task: o.ID, Meetings: ms, Line: review.FormatMeet("task "+o.ID, ms)})
			}
		}
	}
	// The person's edits can meet the task only on a file the task changed:
	// the folder is compared at those paths, not walked.
	var paths []string
	for _, f := range rv.Files {
		paths = append(paths, f.Path)
	}
	if fst, err := k.FolderStatusAt(st, paths); err == nil {
		frv := namer.Review(compute, changesOf(fst))
		sum.ByHand = frv.Files
		ms := review.Meet(rv, frv)
		if len(ms) > 0 {
			v.Meets = append(v.Meets, meetView{ByHand: true, Meetings: ms, Line: byHandLine(ms)})
		}
	} else {
		v.Notices = append(v.Notices, "could not compare with the folder: "+err.Error())
	}
	sum.Files = rv.Files
	sum.Names, sum.Plugins = namer.Names()
	_ = summary.Save(st.Task, sum)
	v.Notices = append(v.Notices, h.Notices()...)
	return v
}

// prestartDiffers starts, in the background, the differs of the files a
// summary kule exec wrote lists (exec names nothing, so the status after it
// most likely asks them): a differ's process start then overlaps the walk
// of the copy instead of following it. A differ started for nothing is
// stopped with the host; call the returned wait before closing the host,
// so that no start finishes after it.
func prestartDiffers(ctx context.Context, h *pluginhost.Host, prev *summary.Summary) (wait func()) {
	var wg sync.WaitGroup
	if prev == nil || prev.Named {
		return wg.Wait
	}
	wg.Add(1)
	go func() { // finding a third-party differ may start it too
		defer wg.Done()
		started := map[string]bool{}
		for i, f := range prev.Files {
			if i == 1000 { // a guess; not worth more than this
				break
			}
			if f.Op == review.Deleted {
				continue
			}
			d := h.DifferFor(ctx, f.Path)
			if d == nil || started[d.Name()] {
				continue
			}
			started[d.Name()] = true
			_, _ = d.Entities(ctx, f.Path, []byte{}) // the first call starts the process
		}
	}()
	return wg.Wait
}

func byHandLine(ms []review.Meeting) string {
	return "you changed them too, by hand in the folder: " + review.MeetList(ms)
}

// saveWholeSummary keeps st as the task's summary without naming anything
// (no differ starts): what kule exec and kule list record. Names the last
// status found stay remembered for reuse.
func saveWholeSummary(k *kernel.Kernel, st *kernel.Status) *summary.Summary {
	sum := summary.New(st.Task, st.Pending(false))
	sum.Files = summary.Whole(wholeChangesOf(st))
	if len(sum.Files) > 0 {
		var paths []string
		for _, f := range sum.Files {
			paths = append(paths, f.Path)
		}
		if fst, err := k.FolderStatusAt(st, paths); err == nil {
			sum.ByHand = summary.Whole(wholeChangesOf(fst))
		}
	}
	if prev := summary.Load(st.Task); prev != nil {
		sum.Names, sum.Plugins = prev.Names, prev.Plugins
	}
	_ = summary.Save(st.Task, sum)
	return sum
}

// namesByPath indexes the review for printing under each effect.
func (v *namesView) namesByPath() map[string]review.File {
	m := map[string]review.File{}
	if v != nil {
		for _, f := range v.Files {
			m[f.Path] = f
		}
	}
	return m
}

// printNames prints the entities that changed inside one file, under its
// effect line; a file the differ could not read says why.
func printNames(w io.Writer, f review.File) {
	if f.Note != "" {
		fmt.Fprintf(w, "      (changed as a whole: %s)\n", f.Note)
	}
	for _, e := range f.Entities {
		fmt.Fprintf(w, "      %s\n", e)
	}
}

// printMeets prints where the task meets others and the person's own edits,
// then plugin notices.
func printMeets(w io.Writer, v *namesView) {
	if v == nil {
		return
	}
	for _, m := range v.Meets {
		fmt.Fprintln(w, m.Line)
	}
	for _, n := range v.Notices {
		fmt.Fprintln(w, "note: "+n)
	}
}
