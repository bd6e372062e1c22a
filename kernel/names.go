package kernel

import (
	"context"

	"github.com/kulehq/kule/kernel/effects"
	"github.com/kulehq/kule/kernel/pluginhost"
	"github.com/kulehq/kule/kernel/review"
)

// This file is where the kernel meets the differ plugins (kernel/review):
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
	h := pluginhost.New(k.Store.Root, pluginhost.Options{Builtins: k.cfg.Plugins, Logger: k.cfg.Logger, Sandbox: k.cfg.PluginSandbox})
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

// changesOf turns a status into the review's input; files it cannot read
// (too large, not kept by the base) are left whole.
func changesOf(st *Status) []review.Change {
	var out []review.Change
	for _, e := range st.Pending(false) {
		if !Reviewable(e) {
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

// ReviewNames names what changed inside st's files through the differs, and
// finds where st meets the other tasks on its folder and the person's edits
// since the base.
func (k *Kernel) ReviewNames(ctx context.Context, st *Status) Names {
	if len(st.Effects) == 0 {
		return Names{} // nothing to name, and nothing that can meet
	}
	ds, notices, done := k.differs()
	defer done()
	rv := review.Compute(ctx, ds, changesOf(st))
	v := Names{Files: rv.Files}
	if others, err := k.Store.List(); err == nil {
		for _, o := range others {
			if o.ID == st.Task.ID || o.Folder != st.Task.Folder {
				continue
			}
			ost, err := k.Status(o)
			if err != nil {
				continue
			}
			ms := review.Meet(rv, review.Compute(ctx, ds, changesOf(ost)))
			if len(ms) > 0 {
				v.Meets = append(v.Meets, Meet{Task: o.ID, Meetings: ms, Line: review.FormatMeet("task "+o.ID, ms)})
			}
		}
	}
	if fst, err := k.FolderStatusOf(st); err == nil {
		ms := review.Meet(rv, review.Compute(ctx, ds, changesOf(fst)))
		if len(ms) > 0 {
			v.Meets = append(v.Meets, Meet{ByHand: true, Meetings: ms, Line: "you changed them too, by hand in the folder: " + review.MeetList(ms)})
		}
	} else {
		v.Notices = append(v.Notices, "could not compare with the folder: "+err.Error())
	}
	v.Notices = append(v.Notices, notices()...)
	return v
}
