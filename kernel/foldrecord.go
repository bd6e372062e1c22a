package kernel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/kulehq/kule/kernel/internal/atomicfile"
	"github.com/kulehq/kule/kernel/internal/clone"
	"github.com/kulehq/kule/kernel/internal/manifest"
	"github.com/kulehq/kule/kernel/internal/overlay"
	"github.com/kulehq/kule/kernel/internal/relpath"
	"github.com/kulehq/kule/kernel/internal/scan"
	"github.com/kulehq/kule/kernel/internal/task"
)

// On the overlay backend every command's writes reach the copy through a
// fold, which knows the paths it moves. A record of those paths (and of
// what the last full walk found changed) lets a status compare just them
// — O(changes), not O(tree) — for as long as nothing else wrote the copy:
//
//   - a full walk under the task's lock begins the record;
//   - each fold adds its paths before it moves anything;
//   - whatever else writes the copy ends it first (forgetFolds): an agent
//     run, which binds the copy itself; a rollback, an undo, a commit, the
//     masking of settings files; and a person's shell in the copy
//     (OpenByHand) keeps any record from being used while it is open;
//   - a record is only for the base it was begun on and the boot it was
//     written in (kernel/internal/overlay/record.go).
//
// An edit a person makes in the copy with a program of their own is not
// seen by a status while a record holds; `kule status --full` walks the
// whole copy and begins the record again. A commit always walks the whole
// copy, so nothing reaches the folder unjudged either way.

func foldRecordPath(t *task.Task) string { return filepath.Join(t.Paths.Dir, "overlay", "folds") }

func handsDir(t *task.Task) string { return filepath.Join(t.Paths.Dir, "overlay", "hands") }

// forgetFolds ends the task's record of its folds, before something other
// than a fold writes the copy.
func forgetFolds(t *task.Task) error {
	if err := os.Remove(foldRecordPath(t)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("end the record of the task's folds: %w (nothing was changed)", err)
	}
	return nil
}

// ForgetFolds is forgetFolds for what writes a task's copy from outside
// the kernel (an agent run).
func ForgetFolds(t *task.Task) error { return forgetFolds(t) }

// noteFolds adds to the task's record what a fold of the upper layer at
// upper is about to move.
func noteFolds(t *task.Task, upper string) error {
	if _, err := os.Lstat(foldRecordPath(t)); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	changes, err := overlay.Changes(upper)
	if err != nil {
		// The fold itself will say what it cannot read; the record
		// cannot stand for it.
		return forgetFolds(t)
	}
	if err := overlay.AppendRecord(foldRecordPath(t), overlay.RecordEntries(changes)); err != nil {
		// A record that cannot take the fold's paths ends; the fold
		// goes on, and the next status walks.
		return forgetFolds(t)
	}
	return nil
}

// OpenByHand marks the task's copy as open to a person's own shell until
// done is called: no record of folds is used meanwhile, and it is ended,
// so a status walks the copy and sees what the person did.
func OpenByHand(t *task.Task) (done func(), err error) {
	if t.Backend != clone.Overlay {
		return func() {}, nil
	}
	if err := os.MkdirAll(handsDir(t), 0o700); err != nil {
		return nil, fmt.Errorf("the task's overlay: %w", err)
	}
	f, err := os.CreateTemp(handsDir(t), "shell-"+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return nil, fmt.Errorf("the task's overlay: %w", err)
	}
	f.Close()
	if err := forgetFolds(t); err != nil {
		os.Remove(f.Name())
		return nil, err
	}
	return func() {
		_ = forgetFolds(t) // what the shell wrote is seen by the next walk
		os.Remove(f.Name())
	}, nil
}

// openByHand reports whether a person's shell has the copy open. A mark
// whose process is gone (a daemon that ended without saying so) is
// removed: what its shell wrote was ended with the record at its start,
// and the next walk sees it.
func openByHand(t *task.Task) bool {
	names, err := os.ReadDir(handsDir(t))
	if err != nil {
		return false
	}
	open := false
	for _, n := range names {
		var pid int
		if _, err := fmt.Sscanf(n.Name(), "shell-%d-", &pid); err == nil && pid > 0 && errors.Is(unix.Kill(pid, 0), unix.ESRCH) {
			_ = os.Remove(filepath.Join(handsDir(t), n.Name()))
			continue
		}
		open = true
	}
	return open
}

// statusOf is the status of t: from the record of its folds where one
// holds, else a walk of the whole copy, which begins a record when locked
// (the caller holds the task's lock, so no fold runs meanwhile).
func (k *Kernel) statusOf(ctx context.Context, t *task.Task, locked bool) (*Status, error) {
	if t.Backend != clone.Overlay {
		return k.status(ctx, t)
	}
	if st, err := k.statusFromFolds(ctx, t); err == nil {
		return st, nil
	} else if !errors.Is(err, overlay.ErrNoRecord) && !errors.Is(err, manifest.ErrNoIndex) {
		return nil, err
	}
	st, err := k.status(ctx, t)
	if err == nil && locked && !openByHand(t) {
		k.beginFoldRecord(t, st)
	}
	return st, err
}

// beginFoldRecord writes a new record: the paths the walk found changed.
func (k *Kernel) beginFoldRecord(t *task.Task, st *Status) {
	var es []overlay.RecordEntry
	for _, e := range st.Effects {
		es = append(es, overlay.RecordEntry{Path: e.Path, Deep: e.Dir})
		if e.From != "" {
			es = append(es, overlay.RecordEntry{Path: e.From, Deep: e.Dir})
		}
	}
	for _, p := range st.Problems {
		if p.Path != "" {
			es = append(es, overlay.RecordEntry{Path: p.Path, Deep: true})
		}
	}
	for _, d := range st.gitDirs {
		if d == "." { // how GitDirs names the root
			d = ""
		}
		es = append(es, overlay.RecordEntry{Path: relpath.Join(d, ".git")})
	}
	writeFoldRecord(t, es)
}

// writeFoldRecord begins the record of the task's folds with es, for the
// base as it is now. Without the manifest's index no record can be read,
// so none is begun.
func writeFoldRecord(t *task.Task, es []overlay.RecordEntry) {
	x, err := manifest.OpenIndexed(manifestPath(t.Paths))
	if err != nil {
		return
	}
	size, crc := x.Identity()
	x.Close()
	if err := os.MkdirAll(filepath.Dir(foldRecordPath(t)), 0o700); err != nil {
		return
	}
	data := overlay.EncodeRecord(overlay.RecordBase{Size: size, CRC: crc}, es)
	// A cache: lost in a crash, the next status walks (the boot check
	// refuses one whose appends a power loss may have dropped).
	_ = atomicfile.WriteWith(foldRecordPath(t), atomicfile.Options{Perm: 0o600, NoSync: true}, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// statusFromFolds is the status from the record of the task's folds:
// overlay.ErrNoRecord or manifest.ErrNoIndex where there is none to use.
func (k *Kernel) statusFromFolds(ctx context.Context, t *task.Task) (*Status, error) {
	if openByHand(t) {
		return nil, fmt.Errorf("%w: a person's shell has the copy open", overlay.ErrNoRecord)
	}
	data, err := os.ReadFile(foldRecordPath(t))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", overlay.ErrNoRecord, err)
	}
	x, err := manifest.OpenIndexed(manifestPath(t.Paths))
	if err != nil {
		return nil, err
	}
	defer x.Close()
	size, crc := x.Identity()
	es, err := overlay.DecodeRecord(data, overlay.RecordBase{Size: size, CRC: crc})
	if err != nil {
		return nil, err
	}
	dirty := make([]scan.Dirty, len(es))
	for i, e := range es {
		dirty[i] = scan.Dirty{Path: e.Path, Deep: e.Deep}
	}
	gb, git, err := compareGit(t)
	if err != nil {
		return nil, fmt.Errorf("status %s: git: %w", t.ID, err)
	}
	ign := ignoreRules(t, slices.Values(x.Named()))
	res, part, err := scan.Paths(ctx, t.Paths.Copy, x, baseOf(t), dirty, scan.Options{Ignore: ign})
	if err != nil {
		return nil, fmt.Errorf("status %s: %w", t.ID, err)
	}
	part.Backend = x.Backend()
	st, err := finishStatus(t, res, gb, git, part, ign)
	if st != nil {
		st.partial = true
	}
	return st, err
}

// wholeManifest is the base's whole manifest: the status's own, or, for
// a status from the record of folds, which read only the entries its
// effects name, the manifest loaded now.
func (s *Status) wholeManifest() (*manifest.Manifest, error) {
	if !s.partial {
		return s.manifest, nil
	}
	return manifest.Load(manifestPath(s.Task.Paths))
}
