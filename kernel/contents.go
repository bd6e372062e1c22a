package kernel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/kulehq/kule/kernel/internal/effects"
	"github.com/kulehq/kule/kernel/internal/manifest"
	"github.com/kulehq/kule/kernel/internal/scan"
	"github.com/kulehq/kule/kernel/internal/task"

	"golang.org/x/sys/unix"
)

// ErrTooLarge is returned by Contents for a file larger than its limit.
var ErrTooLarge = errors.New("contents: file larger than the review reads")

// Contents returns the bytes of a changed regular file as the base kept them
// (old) and as the changed tree holds them now (new), for the review by
// name: old is nil for an added file, new is nil for a deleted one; a move
// reads old from where it came from. A file over max bytes on either side is
// ErrTooLarge; content the base does not keep is clone.ErrNotKept.
func (s *Status) Contents(e effects.Effect, max int64) (old, new []byte, err error) {
	if !Reviewable(e) {
		return nil, nil, fmt.Errorf("contents %s: not a file's content change", e.Path)
	}
	if e.Kind != effects.Add {
		from := e.Path
		if e.Kind == effects.Move {
			from = e.From
		}
		be, ok := s.manifest.Get(from)
		if !ok || be.Type != effects.TypeFile {
			return nil, nil, fmt.Errorf("contents %s: not a file in the base", from)
		}
		if be.Size > max {
			return nil, nil, fmt.Errorf("%w: %s (%d bytes)", ErrTooLarge, from, be.Size)
		}
		rc, err := baseOf(s.Task).Open(be)
		if err != nil {
			return nil, nil, fmt.Errorf("contents %s: %w", from, err)
		}
		old, err = io.ReadAll(io.LimitReader(rc, max+1))
		rc.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("contents %s: %w", from, err)
		}
	}
	if e.Kind != effects.Delete {
		new, err = readNoFollow(filepath.Join(s.root(), filepath.FromSlash(e.Path)), max)
		if err != nil {
			return nil, nil, fmt.Errorf("contents %s: %w", e.Path, err)
		}
	}
	return old, new, nil
}

// Reviewable says whether e changed a regular file's content (added,
// modified, deleted or moved), which Contents can read.
func Reviewable(e effects.Effect) bool {
	if e.Dir {
		return false
	}
	switch e.Kind {
	case effects.Add, effects.Move:
		return e.NewType == effects.TypeFile
	case effects.Modify:
		return e.NewType == effects.TypeFile && e.OldType == effects.TypeFile
	case effects.Delete:
		return e.OldType == effects.TypeFile
	}
	return false
}

// root is the tree the Status compared with the base: the task's copy, or
// the folder itself for FolderStatus.
func (s *Status) root() string {
	if s.folder {
		return s.Task.Folder
	}
	return s.Task.Paths.Copy
}

func readNoFollow(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readRegular(f, max)
}

// readRegular reads the open file f whole, if it is a regular file of at
// most max bytes.
func readRegular(f *os.File, max int64) ([]byte, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file")
	}
	if st.Size() > max {
		return nil, fmt.Errorf("%w (%d bytes)", ErrTooLarge, st.Size())
	}
	return io.ReadAll(io.LimitReader(f, max+1))
}

// FolderStatus finds what the person changed in the real folder since the
// task's base (its last sync): the hand edits a task does not see. Nothing is
// written; the folder is only read.
func (k *Kernel) FolderStatus(ctx context.Context, t *task.Task) (*Status, error) {
	st, err := k.Status(ctx, t) // loads the manifest and rules under the same checks
	if err != nil {
		return nil, err
	}
	return k.FolderStatusOf(ctx, st)
}

// FolderStatusOf is FolderStatus for a task whose status is at hand.
func (k *Kernel) FolderStatusOf(ctx context.Context, st *Status) (*Status, error) {
	t := st.Task
	// The folder's own stat cache: the base recorded the folder's metadata
	// at the sync, so files nobody touched there are not read either.
	whole, err := st.wholeManifest()
	if err != nil {
		return nil, fmt.Errorf("folder status %s: %w", t.ID, err)
	}
	fm := &manifest.Manifest{Backend: whole.Backend, Entries: make([]manifest.Entry, len(whole.Entries))}
	for i, e := range whole.Entries {
		e.Size, e.MTime, e.CTime, e.Ino, e.Mode = e.Folder.Size, e.Folder.MTime, e.Folder.CTime, e.Folder.Ino, e.Folder.Mode
		fm.Entries[i] = e
	}
	res, err := scan.Scan(ctx, t.Folder, fm, baseOf(t), scan.Options{Ignore: st.ignore})
	if err != nil {
		return nil, fmt.Errorf("folder status %s: %w", t.ID, err)
	}
	return &Status{Task: t, Effects: res.Effects, Problems: res.Problems, manifest: whole, ignore: st.ignore, folder: true}, nil
}

// FolderStatusAt is FolderStatusOf for the given paths only: what the person
// changed by hand at them since the task's base. It stats as many entries
// as there are paths, so `kule status` can say where the person's edits meet
// the task's (both must touch the same path) without walking the folder.
func (k *Kernel) FolderStatusAt(st *Status, paths []string) (*Status, error) {
	t := st.Task
	res, err := scan.At(t.Folder, st.manifest, baseOf(t), paths, scan.Options{Ignore: st.ignore})
	if err != nil {
		return nil, fmt.Errorf("folder status %s: %w", t.ID, err)
	}
	return &Status{Task: t, Effects: res.Effects, Problems: res.Problems, manifest: st.manifest, ignore: st.ignore, folder: true}, nil
}
