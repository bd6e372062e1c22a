package kernel

import (
	"context"
	"os"
	"sync"

	"github.com/kulehq/kule/kernel/internal/effects"
	"github.com/kulehq/kule/kernel/internal/pluginhost"
	"github.com/kulehq/kule/kernel/internal/review"
	"github.com/kulehq/kule/kernel/internal/summary"
	"github.com/kulehq/kule/kernel/internal/task"
)

// This file is where the kernel meets the differ plugins (kernel/internal/review):
// the names that changed inside each file, where a task meets other tasks
// and the person's own edits, and the three-way merge a commit uses.

// reviewMax is the largest file whose names the review reads.
const reviewMax = 8 << 20

// differs opens what reads file formats: Config.Differs when set, else the
// plugin host with the built-ins cmd/kule handed over. close ends the plugin
// processes it started.
func (k *Kernel) differs() (ds review.Differs, notices func() []string, close func()) {
	if k.cfg.Differs != nil {
		return k.cfg.Differs, func() []string { return nil }, func() {}
	}
	h := pluginhost.New(k.store.Root, pluginhost.Options{Self: k.cfg.PluginBinary, Builtins: k.cfg.Plugins, Logger: k.cfg.Logger, Sandbox: k.cfg.PluginSandbox})
	return review.FromHost(h), h.Notices, h.Close
}

// mergeByDiffers is the commit's default Merge: entity by entity where a
// differ reads the file, else by lines.
func mergeByDiffers(ctx context.Context, ds review.Differs) func(string, []byte, []byte, []byte) ([]byte, []string, []string) {
	return func(path string, base, ours, theirs []byte) ([]byte, []string, []string) {
		r := review.Merge(ctx, ds, path, base, ours, theirs)
		return r.Merged, r.Conflicts, r.Notes
	}
}

// Names is what a status adds to a task's changes: the names that changed
// inside each file, where the task meets other tasks on the same folder and
// the person's own edits, and plugin notices.
type Names struct {
	Files   []review.File `json:"files"`
	Meets   []Meet        `json:"meets,omitempty"`
	Notices []string      `json:"notices,omitempty"`
}

// Meet is where a task's changes meet another's.
type Meet struct {
	// Task is the other task's id; empty for the person's edits in the folder.
	Task     string           `json:"task,omitempty"`
	ByHand   bool             `json:"by_hand,omitempty"`
	Meetings []review.Meeting `json:"meetings"`
	Line     string           `json:"line"`
}

// ByPath indexes the names by file.
func (n *Names) ByPath() map[string]review.File {
	m := map[string]review.File{}
	if n != nil {
		for _, f := range n.Files {
			m[f.Path] = f
		}
	}
	return m
}

// changesOf turns a status into the review's input (ChangesOf with the
// kernel's own size limit).
func changesOf(st *Status) []review.Change { return ChangesOf(st, reviewMax) }

// ChangesOf turns a status into the review's input: the old and new bytes of
// each reviewable change up to max bytes a side. Files it cannot read (too
// large, not kept by the base) and moves of unchanged content are left out:
// they are named as a whole.
func ChangesOf(st *Status, max int64) []review.Change {
	var out []review.Change
	for _, e := range st.Pending(false) {
		if !Reviewable(e) {
			continue
		}
		op := reviewOp(e.Kind)
		old, new, err := st.Contents(e, max)
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

// reviewOp is what an effect of this kind did to its file, for review.
func reviewOp(k effects.Kind) review.Op {
	switch k {
	case effects.Add:
		return review.Added
	case effects.Delete:
		return review.Deleted
	}
	return review.Changed
}

// ReviewNames names what changed inside st's files through the differs, and
// finds where st meets the other tasks on its folder and the person's edits
// since the base (see Naming.Review).
func (k *Kernel) ReviewNames(ctx context.Context, st *Status) Names {
	n := k.OpenNames(ctx, st.Task)
	defer n.Close()
	return n.Review(ctx, st)
}

// Naming is one command's use of the differs for a task: opened before
// the task's status is taken, so that a differ the status will most likely
// need starts while the copy is walked.
type Naming struct {
	k       *Kernel
	ds      review.Differs
	notices func() []string
	close   func()
	wait    sync.WaitGroup
	prev    *summary.Summary
}

// OpenNames opens the differs for a status of t. When t's summary was
// written by kule exec (which names nothing), the differs of the files it
// lists are started in the background: the status after an exec most
// likely asks them. Close ends them.
func (k *Kernel) OpenNames(ctx context.Context, t *task.Task) *Naming {
	ds, notices, done := k.differs()
	n := &Naming{k: k, ds: ds, notices: notices, close: done, prev: summary.Load(t)}
	if n.prev != nil && !n.prev.Named {
		n.wait.Add(1)
		go func() { // finding a third-party differ may start it too
			defer n.wait.Done()
			started := map[string]bool{}
			for i, f := range n.prev.Files {
				if i == 1000 { // a guess; not worth more than this
					break
				}
				if f.Op == review.Deleted {
					continue
				}
				d := ds.DifferFor(ctx, f.Path)
				if d == nil || started[d.Name()] {
					continue
				}
				started[d.Name()] = true
				_, _ = d.Entities(ctx, f.Path, []byte{}) // the first call starts the process
			}
		}()
	}
	return n
}

// Close ends the differ processes, once a start under way has finished.
// Closing twice is harmless.
func (n *Naming) Close() {
	n.wait.Wait()
	n.close()
}

// Review names what changed inside st's files, and finds where st meets
// the other tasks on its folder and the person's edits since the base. It
// keeps what it found as the task's summary (kernel/internal/summary), which kule
// list reads; the names of a file whose bytes are as at the last status
// are reused from it, so no differ is asked about them.
func (n *Naming) Review(ctx context.Context, st *Status) Names {
	// A differ started in the background is awaited, not started twice.
	n.wait.Wait()
	k := n.k
	sum := summary.New(st.Task, st.Pending(false))
	sum.Named = true
	if len(st.Effects) == 0 {
		_ = summary.Save(st.Task, sum) // a cache: kule list works without it
		return Names{}                 // nothing to name, and nothing that can meet
	}
	plugins := summary.PluginsKey(k.store.Root)
	compute := func(cs []review.Change) review.Review { return review.Compute(ctx, n.ds, cs) }
	namer := summary.NewNamer(n.prev, plugins)
	rv := namer.Review(compute, changesOf(st))
	v := Names{Files: rv.Files}
	if others, err := k.store.List(); err == nil {
		for _, o := range others {
			if o.ID == st.Task.ID || o.Folder != st.Task.Folder {
				continue
			}
			ost, err := k.Status(ctx, o)
			if err != nil {
				continue
			}
			orv := summary.NewNamer(summary.Load(o), plugins).Review(compute, changesOf(ost))
			ms := review.Meet(rv, orv)
			if len(ms) > 0 {
				v.Meets = append(v.Meets, Meet{Task: o.ID, Meetings: ms, Line: review.FormatMeet("task "+o.ID, ms)})
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
			v.Meets = append(v.Meets, Meet{ByHand: true, Meetings: ms, Line: byHandLine(ms)})
		}
	} else {
		v.Notices = append(v.Notices, "could not compare with the folder: "+err.Error())
	}
	sum.Files = rv.Files
	sum.Names, sum.Plugins = namer.Names()
	_ = summary.Save(st.Task, sum)
	v.Notices = append(v.Notices, n.notices()...)
	return v
}

func byHandLine(ms []review.Meeting) string {
	return "you changed them too, by hand in the folder: " + review.MeetList(ms)
}

// wholeChangesOf is changesOf without reading any file: the paths and what
// happened to them (a move keeps its content, so it is left out as there).
func wholeChangesOf(st *Status) []review.Change {
	var out []review.Change
	for _, e := range st.Pending(false) {
		if !Reviewable(e) || e.Kind == effects.Move {
			continue
		}
		out = append(out, review.Change{Path: e.Path, Op: reviewOp(e.Kind)})
	}
	return out
}

// SaveWholeSummary keeps st as the task's summary without naming anything
// (no differ starts): what kule exec and kule list record. Names the last
// status found stay remembered for reuse.
func (k *Kernel) SaveWholeSummary(st *Status) *summary.Summary {
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

// TaskSummary is one row of kule list: a task, what its last status found,
// and where it meets the other tasks and the person's edits.
type TaskSummary struct {
	Task    *task.Task
	Summary *summary.Summary // nil when Err
	Err     error
	Meets   []Meet
}

// Summaries lists every task with its summary (see kernel/internal/summary), and the
// meetings between them. A task without a summary, whose base moved since,
// or with an interrupted commit to finish gets one status now (no names);
// fresh does that for every task.
func (k *Kernel) Summaries(ctx context.Context, fresh bool) ([]TaskSummary, error) {
	ts, err := k.store.List()
	if err != nil {
		return nil, err
	}
	rows := make([]TaskSummary, len(ts))
	for i, t := range ts {
		rows[i].Task = t
		s := summary.Load(t)
		if _, jerr := os.Stat(t.Paths.Journal); s == nil || fresh || jerr == nil {
			st, err := k.Status(ctx, t)
			if err != nil {
				rows[i].Err = err
				continue
			}
			s = k.SaveWholeSummary(st)
		}
		rows[i].Summary = s
	}
	for i := range rows {
		s := rows[i].Summary
		if s == nil {
			continue
		}
		rows[i].Meets = []Meet{}
		for j := range rows {
			o := rows[j]
			if i == j || o.Summary == nil || o.Task.Folder != rows[i].Task.Folder {
				continue
			}
			if ms := summary.Meets(s.Files, o.Summary.Files); len(ms) > 0 {
				rows[i].Meets = append(rows[i].Meets, Meet{Task: o.Task.ID, Meetings: ms, Line: review.FormatMeet("task "+o.Task.ID, ms)})
			}
		}
		if ms := summary.Meets(s.Files, s.ByHand); len(ms) > 0 {
			rows[i].Meets = append(rows[i].Meets, Meet{ByHand: true, Meetings: ms, Line: byHandLine(ms)})
		}
	}
	return rows, nil
}
