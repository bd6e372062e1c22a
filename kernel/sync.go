package kernel

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/kulehq/kule/kernel/apply"
	"github.com/kulehq/kule/kernel/checkpoint"
	"github.com/kulehq/kule/kernel/clone"
	"github.com/kulehq/kule/kernel/crashpoint"
	"github.com/kulehq/kule/kernel/effects"
	"github.com/kulehq/kule/kernel/manifest"
	"github.com/kulehq/kule/kernel/relpath"
	"github.com/kulehq/kule/kernel/scan"
	"github.com/kulehq/kule/kernel/task"
	"github.com/kulehq/kule/kernel/walk"
)

// finish completes a commit or an undo once the folder holds it. Every step
// is idempotent: a recovery may run it again after a crash inside it.
func (k *Kernel) finish(t *task.Task, j *apply.Journal) error {
	var d journalData
	if err := json.Unmarshal(j.Data, &d); err != nil {
		return fmt.Errorf("journal data: %w", err)
	}
	paths := make([]string, len(d.Paths))
	for i, p := range d.Paths {
		paths[i] = string(p)
	}
	if d.Kind == "undo" {
		cp, err := checkpoint.Open(t.Paths.Checkpoints)
		if err != nil {
			return err
		}
		err = cp.MarkUndone(d.Checkpoint)
		cp.Close()
		if err != nil {
			return err
		}
		// The copy follows the folder back, so the undone change does not
		// reappear as uncommitted.
		if err := k.syncCopy(t, paths); err != nil {
			return err
		}
		if d.Git != nil {
			if err := finishGitUndo(t, d.Checkpoint); err != nil {
				return err
			}
		}
	} else if d.Git != nil {
		if err := finishGitCommit(t, d.Git); err != nil {
			return err
		}
	}
	if err := k.appendHistoryOnce(t, j.ID, d); err != nil {
		return err
	}
	crashpoint.Hit(j.Kind + ".history-appended")
	return k.resyncBase(t, paths)
}

// HistoryData is what a commit or undo entry of the history holds.
type HistoryData struct {
	Journal    string         `json:"journal"`
	Checkpoint int            `json:"checkpoint"`
	Counts     effects.Counts `json:"counts"`
	Changes    []string       `json:"changes,omitempty"`
	Approval   *Approval      `json:"approval,omitempty"` // who approved which paths (approvals.go)
}

func (k *Kernel) appendHistoryOnce(t *task.Task, jid string, d journalData) error {
	log, err := k.HistoryLog(t)
	if err != nil {
		return err
	}
	if last, ok, err := log.Last(); err != nil {
		return err
	} else if ok {
		var prev HistoryData
		if json.Unmarshal(last.Data, &prev) == nil && prev.Journal == jid {
			return nil // appended before a crash
		}
	}
	_, err = log.Append(d.Kind, HistoryData{Journal: jid, Checkpoint: d.Checkpoint, Counts: d.Counts, Changes: d.Summary, Approval: d.Approval})
	return err
}

// resyncBase makes the base's record of each path (and everything below it)
// what the folder holds now, with the copy's metadata where the copy holds
// the same: the next status then skips them unread.
func (k *Kernel) resyncBase(t *task.Task, paths []string) error {
	m, err := manifest.Load(manifestPath(t.Paths))
	if err != nil {
		return err
	}
	base := baseOf(t)
	paths = dedupeTops(paths)
	for _, p := range paths {
		m.Remove(p)
		if t.Backend == clone.Reflink {
			if err := os.RemoveAll(filepath.Join(base.Dir, "tree", p)); err != nil {
				return err
			}
		}
		it, err := walk.Lstat(t.Folder, p)
		if err != nil {
			return err
		}
		if it.Type == effects.TypeNone {
			continue
		}
		items := []walk.Item{it}
		if it.Type == effects.TypeDir {
			w, err := walk.Walk(filepath.Join(t.Folder, p), walk.Options{})
			if err != nil {
				return err
			}
			for _, c := range w.Items {
				c.Path = relpath.Join(p, c.Path)
				items = append(items, c)
			}
		}
		for _, fi := range items {
			e, err := k.baseEntry(t, base, fi)
			if err != nil {
				return err
			}
			m.Set(e)
		}
	}
	return manifest.Save(manifestPath(t.Paths), m)
}

func (k *Kernel) baseEntry(t *task.Task, base clone.Base, fi walk.Item) (manifest.Entry, error) {
	e := manifest.Entry{Item: fi, Folder: manifest.StatOf(fi), Len: -1}
	if ci, err := walk.Lstat(t.Paths.Copy, fi.Path); err == nil && ci.Type == fi.Type {
		e.Item = ci
	} else {
		e.Item.Ino, e.Item.CTime = 0, 0 // never matches the stat cache: compared by content
	}
	src := filepath.Join(t.Folder, fi.Path)
	switch fi.Type {
	case effects.TypeLink:
		target, err := os.Readlink(src)
		if err != nil {
			return e, err
		}
		e.Target = target
		if t.Backend == clone.Reflink {
			if _, _, err := clone.CopyLink(src, filepath.Join(base.Dir, "tree", fi.Path), fi.Path); err != nil {
				return e, err
			}
		}
	case effects.TypeDir:
		if t.Backend == clone.Reflink {
			if err := clone.MakeDir(filepath.Join(base.Dir, "tree", fi.Path), fi); err != nil {
				return e, err
			}
		}
	case effects.TypeFile:
		if t.Backend == clone.Reflink {
			_, err := clone.CopyFile(src, filepath.Join(base.Dir, "tree", fi.Path), fi, true, false)
			if errors.Is(err, clone.ErrNoReflink) {
				_, err = clone.CopyFile(src, filepath.Join(base.Dir, "tree", fi.Path), fi, false, false)
			}
			return e, err
		}
		b, err := os.ReadFile(src)
		if err != nil {
			return e, err
		}
		e.Hash = sha256.Sum256(b)
		if clone.KeptInBase(fi.Path, int64(len(b))) {
			off, n, err := clone.AppendPack(base.Dir, b)
			if err != nil {
				return e, err
			}
			e.Off, e.Len = off, n
		}
	}
	return e, nil
}

// syncCopy makes the copy hold what the folder holds at each path.
func (k *Kernel) syncCopy(t *task.Task, paths []string) error {
	reflink := t.Backend == clone.Reflink
	for _, p := range dedupeTops(paths) {
		dst := filepath.Join(t.Paths.Copy, p)
		if err := os.RemoveAll(dst); err != nil {
			return err
		}
		it, err := walk.Lstat(t.Folder, p)
		if err != nil {
			return err
		}
		if it.Type == effects.TypeNone {
			continue
		}
		if err := copyEntry(t.Folder, t.Paths.Copy, it, reflink); err != nil {
			return err
		}
		if it.Type != effects.TypeDir {
			continue
		}
		w, err := walk.Walk(filepath.Join(t.Folder, p), walk.Options{})
		if err != nil {
			return err
		}
		for _, c := range w.Items {
			c.Path = relpath.Join(p, c.Path)
			if err := copyEntry(t.Folder, t.Paths.Copy, c, reflink); err != nil {
				return err
			}
		}
		for i := len(w.Items) - 1; i >= 0; i-- {
			if c := w.Items[i]; c.Type == effects.TypeDir {
				_ = clone.FinishDir(filepath.Join(dst, c.Path), c)
			}
		}
		_ = clone.FinishDir(dst, it)
	}
	return nil
}

func copyEntry(from, to string, it walk.Item, reflink bool) error {
	src, dst := filepath.Join(from, it.Path), filepath.Join(to, it.Path)
	switch it.Type {
	case effects.TypeDir:
		return clone.MakeDir(dst, it)
	case effects.TypeLink:
		_, _, err := clone.CopyLink(src, dst, it.Path)
		return err
	case effects.TypeFile:
		_, err := clone.CopyFile(src, dst, walk.Item{Path: it.Path}, reflink, false)
		if errors.Is(err, clone.ErrNoReflink) {
			_, err = clone.CopyFile(src, dst, walk.Item{Path: it.Path}, false, false)
		}
		return err
	}
	return nil
}

// dedupeTops drops paths that lie below another path of the list.
func dedupeTops(paths []string) []string {
	ps := append([]string(nil), paths...)
	sort.Slice(ps, func(i, j int) bool { return effects.ComparePaths(ps[i], ps[j]) < 0 })
	var out []string
	for _, p := range ps {
		if len(out) > 0 && (p == out[len(out)-1] || relpath.Under(p, out[len(out)-1])) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// Rollback makes the copy match the folder again at every path the task
// changed, and takes the folder's version as the new base there.
func (k *Kernel) Rollback(t *task.Task) (int, error) {
	l, err := k.lock(t)
	if err != nil {
		return 0, err
	}
	defer l.Unlock()
	st, err := k.status(t)
	if err != nil {
		return 0, err
	}
	var paths []string
	for _, p := range topPaths(st.Effects) {
		if !scan.IsGitPath(string(p)) {
			paths = append(paths, string(p))
		}
	}
	if len(paths) == 0 {
		return 0, nil
	}
	if err := k.syncCopy(t, paths); err != nil {
		return 0, fmt.Errorf("rollback: %w (the folder is untouched; run rollback again)", err)
	}
	if err := k.resyncBase(t, paths); err != nil {
		return 0, fmt.Errorf("rollback: %w (the folder is untouched; run rollback again)", err)
	}
	if _, err := k.maskEnv(t); err != nil {
		return len(st.Effects), fmt.Errorf("rollback: the copy matches the folder again, but %w — the next command masks them first or does not run", err)
	}
	return len(st.Effects), nil
}
