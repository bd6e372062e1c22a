package kernel

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kulehq/kule/kernel/internal/apply"
	"github.com/kulehq/kule/kernel/internal/checkpoint"
	"github.com/kulehq/kule/kernel/internal/clone"
	"github.com/kulehq/kule/kernel/internal/effects"
	"github.com/kulehq/kule/kernel/internal/relpath"
	"github.com/kulehq/kule/kernel/internal/task"
	"github.com/kulehq/kule/kernel/internal/walk"
)

// UndoReport says what an undo did.
type UndoReport struct {
	Checkpoint int
	Paths      int
}

// UndoBlockedError names the paths where the folder no longer holds what the
// commit being undone wrote.
type UndoBlockedError struct {
	Checkpoint int
	Paths      []string
}

func (e *UndoBlockedError) Error() string {
	q := make([]string, len(e.Paths))
	for i, p := range e.Paths {
		q[i] = effects.Quote(p)
	}
	return fmt.Sprintf("undo: %v: %s — nothing was changed; checkpoint %d is kept, so once those paths hold the commit's version again undo can run", ErrUndoBlocked, strings.Join(q, ", "), e.Checkpoint)
}

func (e *UndoBlockedError) Unwrap() error { return ErrUndoBlocked }

// Undo reverts the newest commit not yet undone, from its checkpoint. ctx
// ends it only before its journal is written: from there it goes to its end.
// The undo is remembered (memory.go); memory never changes the result.
func (k *Kernel) Undo(ctx context.Context, t *task.Task) (*UndoReport, error) {
	rep, err := k.undo(ctx, t)
	k.memUndone(t, rep)
	return rep, err
}

func (k *Kernel) undo(ctx context.Context, t *task.Task) (*UndoReport, error) {
	l, err := k.lock(t)
	if err != nil {
		return nil, err
	}
	defer l.Unlock()
	if err := forgetFolds(t); err != nil { // the copy follows the folder back
		return nil, err
	}
	fl, err := task.LockFile(k.store.FolderLockPath(t.Folder))
	if err != nil {
		return nil, err
	}
	defer fl.Unlock()
	cp, err := checkpoint.Open(t.Paths.Checkpoints)
	if err != nil {
		return nil, err
	}
	defer cp.Close()
	rec, err := k.latestCommitted(t, cp)
	if errors.Is(err, checkpoint.ErrNone) {
		return nil, fmt.Errorf("undo: %w: task %s has no commit left to take back", ErrNothingToUndo, t.ID)
	}
	if err != nil {
		return nil, err
	}
	if bad := holdsAfter(t.Folder, rec.Items); len(bad) > 0 {
		return nil, &UndoBlockedError{Checkpoint: rec.ID, Paths: bad}
	}
	if err := copyReachable(t, rec.Items); err != nil {
		return nil, fmt.Errorf("undo: %w (the folder was not changed; checkpoint %d is kept)", err, rec.ID)
	}
	gops, err := undoGitOps(t, rec.ID) // the repositories go back with the files: see git.go
	if err != nil {
		return nil, fmt.Errorf("undo: %w (nothing was changed)", err)
	}
	ops := append(undoOps(rec.Items), gops...)
	var paths []relpath.Path
	for _, it := range rec.Items {
		paths = append(paths, relpath.Path(it.Path))
	}
	data := journalData{Kind: "undo", Checkpoint: rec.ID, Paths: paths, Summary: []string{fmt.Sprintf("undo checkpoint %d", rec.ID)}}
	if len(gops) > 0 {
		data.Git = &gitJournal{}
	}
	raw, _ := json.Marshal(data)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("undo: %w (the folder was not changed; checkpoint %d is kept)", err, rec.ID)
	}
	j := &apply.Journal{Kind: "undo", Ops: ops, Data: raw}
	if err := apply.Run(t.Folder, t.Paths.Journal, j, counted(ctx, t.Paths.Copy, ops, k.opener(t, cp, nil)), func(j *apply.Journal) error { return k.finish(t, j) }); err != nil {
		return nil, err
	}
	rep := &UndoReport{Checkpoint: rec.ID, Paths: len(rec.Items)}
	if _, err := k.maskEnv(t); err != nil {
		return rep, fmt.Errorf("undo: checkpoint %d was taken back, but %w — the next command masks them first or does not run", rec.ID, err)
	}
	return rep, nil
}

// latestCommitted is the newest checkpoint not undone whose commit reached
// the history. A checkpoint kept just before a crash, whose commit never
// wrote its journal, is marked undone on the way: nothing of it was applied.
func (k *Kernel) latestCommitted(t *task.Task, cp *checkpoint.Store) (*checkpoint.Record, error) {
	var done map[string]bool
	for {
		rec, err := cp.Latest()
		if err != nil || rec.Commit == "" {
			return rec, err
		}
		if done == nil {
			log, err := k.HistoryLog(t)
			if err != nil {
				return nil, err
			}
			es, err := log.Entries()
			if err != nil {
				return nil, err
			}
			done = map[string]bool{}
			for _, e := range es {
				var d HistoryData
				if e.Kind == "commit" && json.Unmarshal(e.Data, &d) == nil {
					done[d.Journal] = true
				}
			}
		}
		if done[rec.Commit] {
			return rec, nil
		}
		if err := cp.MarkUndone(rec.ID); err != nil {
			return nil, err
		}
	}
}

// holdsAfter lists the items where the folder holds something other than
// what the commit wrote.
func holdsAfter(folder string, items []checkpoint.Item) []string {
	var bad []string
	for _, it := range items {
		if !stateHolds(folder, it.Path, it.After) {
			bad = append(bad, it.Path)
		}
	}
	return bad
}

func stateHolds(folder, rel string, s checkpoint.State) bool {
	cur, err := walk.Lstat(folder, rel)
	if err != nil {
		return false
	}
	if cur.Type.String() != s.Type {
		return false
	}
	abs := filepath.Join(folder, rel)
	switch cur.Type {
	case effects.TypeFile:
		h, err := clone.HashFile(abs)
		return err == nil && hex.EncodeToString(h[:]) == s.Hash
	case effects.TypeLink:
		target, err := os.Readlink(abs)
		return err == nil && target == s.Target
	}
	return true
}

// undoOps builds the ops that put every item's Before state back: added
// entries are removed (a whole directory at once), replaced ones restored
// from their blobs, a removed directory rebuilt as one staged tree.
func undoOps(items []checkpoint.Item) []apply.Op {
	sorted := append([]checkpoint.Item(nil), items...)
	sort.Slice(sorted, func(a, b int) bool { return effects.ComparePaths(sorted[a].Path, sorted[b].Path) < 0 })
	var ops []apply.Op
	covered := "" // a directory whose op already covers everything below it
	for i, it := range sorted {
		if covered != "" && relpath.Under(it.Path, covered) && it.Path != covered {
			continue
		}
		covered = ""
		path := relpath.Path(it.Path)
		b := it.Before
		switch {
		case b.Type == "none":
			ops = append(ops, apply.Op{Kind: apply.Remove, Path: path})
			if it.After.Type == "dir" {
				covered = it.Path
			}
		case b.Type == "dir" && it.After.Type == "dir":
			if b.Mode != it.After.Mode {
				ops = append(ops, apply.Op{Kind: apply.Chmod, Path: path, Mode: b.Mode})
			}
		case b.Type == "dir":
			op := apply.Op{Kind: apply.Replace, Path: path, Type: effects.TypeDir, Mode: b.Mode, MTime: b.MTime.UnixNano(), UID: -1, GID: -1}
			for _, c := range sorted[i+1:] {
				if !relpath.Under(c.Path, it.Path) {
					break
				}
				if c.Before.Type == "none" {
					continue
				}
				rel := strings.TrimPrefix(c.Path, it.Path+"/")
				te := apply.TreeEntry{Rel: rel, Mode: c.Before.Mode, MTime: c.Before.MTime.UnixNano(), Target: c.Before.Target, UID: -1, GID: -1}
				switch c.Before.Type {
				case "file":
					te.Type, te.Src = effects.TypeFile, "blob:"+c.Before.Blob
				case "link":
					te.Type = effects.TypeLink
				case "dir":
					te.Type = effects.TypeDir
				}
				op.Tree = append(op.Tree, te)
			}
			ops = append(ops, op)
			covered = it.Path
		case b.Type == "file":
			ops = append(ops, apply.Op{Kind: apply.Replace, Path: path, Type: effects.TypeFile, Src: "blob:" + b.Blob, Mode: b.Mode, MTime: b.MTime.UnixNano(), UID: -1, GID: -1})
		case b.Type == "link":
			ops = append(ops, apply.Op{Kind: apply.Replace, Path: path, Type: effects.TypeLink, Target: b.Target, MTime: b.MTime.UnixNano(), UID: -1, GID: -1})
		}
		if b.Type != "dir" && it.After.Type == "dir" {
			covered = it.Path // the directory the commit made goes as a whole
		}
	}
	return ops
}
