package kernel

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"golang.org/x/sys/unix"

	"github.com/kulehq/kule/kernel/internal/apply"
	"github.com/kulehq/kule/kernel/internal/beneath"
	"github.com/kulehq/kule/kernel/internal/checkpoint"
	"github.com/kulehq/kule/kernel/internal/clone"
	"github.com/kulehq/kule/kernel/internal/crashpoint"
	"github.com/kulehq/kule/kernel/internal/effects"
	"github.com/kulehq/kule/kernel/internal/manifest"
	"github.com/kulehq/kule/kernel/internal/relpath"
	"github.com/kulehq/kule/kernel/internal/scan"
	"github.com/kulehq/kule/kernel/internal/task"
	"github.com/kulehq/kule/kernel/internal/walk"
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
// the same: the next status then skips them unread. The base's tree (a
// reflink backend's) and the copy are opened beneath their roots: a link on
// the way is never followed.
func (k *Kernel) resyncBase(t *task.Task, paths []string) error {
	m, err := manifest.Load(manifestPath(t.Paths))
	if err != nil {
		return err
	}
	base := baseOf(t)
	cp, err := beneath.Open(t.Paths.Copy)
	if err != nil {
		return taskTreeError(t, "copy", err)
	}
	defer cp.Close()
	var tree *beneath.Root
	if t.Backend == clone.Reflink {
		if tree, err = beneath.Open(baseTree(base)); err != nil {
			return taskTreeError(t, "base", err)
		}
		defer tree.Close()
	}
	paths = dedupeTops(paths)
	var add []manifest.Entry
	bp := &basePack{dir: base.Dir}
	defer bp.abandon()
	for _, p := range paths {
		if tree != nil {
			if err := tree.RemoveAll(p); err != nil {
				return taskTreeError(t, "base", err)
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
			e, err := k.baseEntry(t, bp, cp, tree, fi)
			if err != nil {
				return taskTreeError(t, "base", err)
			}
			add = append(add, e)
		}
	}
	if err := bp.close(); err != nil { // the content is durable before the manifest names it
		return taskTreeError(t, "base", err)
	}
	m.Replace(paths, add) // one pass: a Remove and a Set per path cost the whole manifest each
	return manifest.Save(manifestPath(t.Paths), m)
}

// baseTree is where a reflink backend's base keeps its clone of the folder.
func baseTree(b clone.Base) string { return filepath.Join(b.Dir, "tree") }

// basePack is a plain-copy base's pack, opened at the first content a
// re-sync keeps and synced once at its end, not once per file.
type basePack struct {
	dir string
	a   *clone.PackAppender
}

func (p *basePack) append(b []byte) (off, n int64, err error) {
	if p.a == nil {
		if p.a, err = clone.OpenPack(p.dir); err != nil {
			return 0, 0, err
		}
	}
	return p.a.Append(b)
}

// close syncs what was appended; nothing appended, nothing to do.
func (p *basePack) close() error {
	if p.a == nil {
		return nil
	}
	a := p.a
	p.a = nil
	return a.Close()
}

// abandon closes the pack on a failed re-sync; the manifest, not saved,
// names none of what was appended.
func (p *basePack) abandon() { _ = p.close() }

// baseEntry records fi (read from the folder) in the base: cloned into
// tree (nil unless the backend is reflink), or hashed and packed. The
// copy's metadata is read beneath cp.
func (k *Kernel) baseEntry(t *task.Task, pack *basePack, cp, tree *beneath.Root, fi walk.Item) (manifest.Entry, error) {
	e := manifest.Entry{Item: fi, Folder: manifest.StatOf(fi), Len: -1}
	if st, err := cp.Lstat(fi.Path); err == nil && walk.FromStat(fi.Path, &st).Type == fi.Type {
		e.Item = walk.FromStat(fi.Path, &st)
	} else {
		e.Item.Ino, e.Item.CTime = 0, 0 // never matches the stat cache: compared by content
	}
	src := filepath.Join(t.Folder, fi.Path)
	if fi.Type == effects.TypeLink {
		target, err := os.Readlink(src)
		if err != nil {
			return e, err
		}
		e.Target = target
	}
	if tree != nil {
		return e, copyEntry(t.Folder, tree, fi, true, true)
	}
	if fi.Type == effects.TypeFile && clone.KeptInBase(fi.Path, fi.Size) {
		b, err := os.ReadFile(src)
		if err != nil {
			return e, err
		}
		e.Hash = sha256.Sum256(b)
		if clone.KeptInBase(fi.Path, int64(len(b))) {
			off, n, err := pack.append(b)
			if err != nil {
				return e, err
			}
			e.Off, e.Len = off, n
		}
	} else if fi.Type == effects.TypeFile && clone.RacilyClean(fi) {
		// Not kept: the folder's file is the base content while its
		// metadata holds (clone.Base.Open), unless it changed too recently
		// for its metadata to vouch for it.
		h, err := clone.HashFile(src)
		if err != nil {
			return e, err
		}
		e.Hash = h
	}
	return e, nil
}

// syncCopy makes the copy hold what the folder holds at each path. The copy
// is opened beneath its root: where a command put a link on the way to a
// path, nothing is removed or written through it (a *beneath.LinkError).
func (k *Kernel) syncCopy(t *task.Task, paths []string) error {
	if syncCopyStarts != nil {
		syncCopyStarts(t)
	}
	reflink := t.Backend == clone.Reflink
	root, err := beneath.Open(t.Paths.Copy)
	if err != nil {
		return taskTreeError(t, "copy", err)
	}
	defer root.Close()
	for _, p := range dedupeTops(paths) {
		if err := root.RemoveAll(p); err != nil {
			return taskTreeError(t, "copy", err)
		}
		it, err := walk.Lstat(t.Folder, p)
		if err != nil {
			return err
		}
		if it.Type == effects.TypeNone {
			continue
		}
		if err := copyEntry(t.Folder, root, it, reflink, false); err != nil {
			return taskTreeError(t, "copy", err)
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
			if err := copyEntry(t.Folder, root, c, reflink, false); err != nil {
				return taskTreeError(t, "copy", err)
			}
		}
		for i := len(w.Items) - 1; i >= 0; i-- {
			if c := w.Items[i]; c.Type == effects.TypeDir {
				_ = finishDir(root, relpath.Join(p, c.Path), c)
			}
		}
		_ = finishDir(root, p, it)
	}
	return nil
}

// syncCopyStarts, set only by tests, runs as syncCopy starts.
var syncCopyStarts func(*task.Task)

// copyEntry copies the folder's entry it into the tree to (the copy or the
// base's tree), creating it relative to its parent's descriptor there. With
// sameFile, a file must still be the one it was walked as (its inode).
func copyEntry(from string, to *beneath.Root, it walk.Item, reflink, sameFile bool) error {
	src := filepath.Join(from, it.Path)
	dfd, name, err := to.Parent(it.Path)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	shown := to.Join(it.Path)
	switch it.Type {
	case effects.TypeDir:
		return clone.MakeDirAt(dfd, name, it)
	case effects.TypeLink:
		_, _, err := clone.CopyLinkAt(src, dfd, name, it.Path)
		return err
	case effects.TypeFile:
		want := walk.Item{Path: it.Path}
		if sameFile {
			want = it
		}
		_, err := clone.CopyFileAt(src, dfd, name, shown, want, reflink, false)
		if errors.Is(err, clone.ErrNoReflink) {
			_, err = clone.CopyFileAt(src, dfd, name, shown, want, false, false)
		}
		return err
	}
	return nil
}

// finishDir sets a copied directory's mode and times, beneath root.
func finishDir(root *beneath.Root, rel string, it walk.Item) error {
	dfd, name, err := root.Parent(rel)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	return clone.FinishDirAt(dfd, name, it)
}

// copyReachable checks, before an undo changes the folder, that the copy
// can follow it back at every path: no link a command made stands on the way
// to one. Found after the folder changed, the undo could not finish.
func copyReachable(t *task.Task, items []checkpoint.Item) error {
	root, err := beneath.Open(t.Paths.Copy)
	if err != nil {
		return taskTreeError(t, "copy", err)
	}
	defer root.Close()
	paths := make([]string, len(items))
	for i, it := range items {
		paths[i] = it.Path
	}
	// As syncCopy does: the top of each changed tree is replaced whole, so
	// only the way to it must hold no link (a link the commit itself made
	// at the top is removed, not followed).
	for _, p := range dedupeTops(paths) {
		dfd, _, err := root.Parent(p)
		if err == nil {
			unix.Close(dfd)
			continue
		}
		if errors.Is(err, beneath.ErrLink) {
			return taskTreeError(t, "copy", err)
		}
	}
	return nil
}

// taskTreeError says, for a link met in the task's copy or base, where it
// is, that nothing was written through it, and what to do.
func taskTreeError(t *task.Task, tree string, err error) error {
	var le *beneath.LinkError
	if !errors.As(err, &le) {
		return err
	}
	where := effects.Quote(le.Path)
	if le.Link != "" && le.Link != le.Path {
		where = fmt.Sprintf("%s, on the way to %s,", effects.Quote(le.Link), effects.Quote(le.Path))
	}
	return fmt.Errorf("the task's %s: %s is a symbolic link a command put there; Kule writes nothing through a link, so nothing outside the %s was touched — remove the link in the copy or run `kule rollback %s`, then try again (%w)", tree, where, tree, t.ID, err)
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
// changed, and takes the folder's version as the new base there; each
// repository the task changed is reset to the folder's (rollbackGit).
//
// ctx ends the walk that finds those paths; once the copy is being
// synced, rollback goes to its end.
// The rollback is remembered (memory.go); memory never changes the result.
func (k *Kernel) Rollback(ctx context.Context, t *task.Task) (*RollbackReport, error) {
	rep, err := k.rollback(ctx, t)
	if err == nil {
		k.memRolledBack(t)
	}
	return rep, err
}

func (k *Kernel) rollback(ctx context.Context, t *task.Task) (*RollbackReport, error) {
	l, err := k.lock(t)
	if err != nil {
		return nil, err
	}
	defer l.Unlock()
	if err := forgetFolds(t); err != nil { // the copy is written below
		return nil, err
	}
	st, err := k.status(ctx, t)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("rollback: %w (the copy and the folder are as they were)", err)
	}
	var paths []string
	for _, p := range topPaths(st.Effects) {
		if !scan.IsGitPath(string(p)) {
			paths = append(paths, string(p))
		}
	}
	rep := &RollbackReport{Changes: len(st.Effects)}
	if len(paths) == 0 && len(st.Git) == 0 {
		return rep, nil
	}
	if len(paths) > 0 {
		if err := k.syncCopy(t, paths); err != nil {
			return nil, fmt.Errorf("rollback: %w (the folder is untouched; run rollback again)", err)
		}
		if err := k.resyncBase(t, paths); err != nil {
			return nil, fmt.Errorf("rollback: %w (the folder is untouched; run rollback again)", err)
		}
	}
	if rep.Git, err = rollbackGit(t, st.Git); err != nil {
		return rep, fmt.Errorf("rollback: the files match the folder again, but %w (the folder is untouched; run rollback again)", err)
	}
	if _, err := k.maskEnv(t); err != nil {
		return rep, fmt.Errorf("rollback: the copy matches the folder again, but %w — the next command masks them first or does not run", err)
	}
	return rep, nil
}
