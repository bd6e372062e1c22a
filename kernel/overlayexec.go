package kernel

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kulehq/kule/kernel/internal/beneath"
	"github.com/kulehq/kule/kernel/internal/clone"
	"github.com/kulehq/kule/kernel/internal/overlay"
	"github.com/kulehq/kule/kernel/internal/task"
)

// On the overlay backend a command runs over an overlayfs that the sandbox
// mounts in its own user namespace: the task's copy is its lower layer and
// tasks/<id>/overlay/upper takes every write. When the command ends (and
// before the next one starts, should a fold have been cut off) the upper
// layer is folded back into the copy, at the cost of what the command
// changed. Everything else Kule does with a task — status, review, the
// Files panel, the terminal, commit, undo — reads and writes the copy as on
// the copy backend, with no overlay mounted outside a sandbox: an
// unprivileged Kule cannot mount one there, and the copy is a plain folder
// that a person can open too. Agent runs keep the copy bound directly, since
// Kule writes into it on the agent's behalf while the agent runs and a lower
// layer must not change under a mounted overlay.

// overlayLayers are the upper and work directories of a task's overlay.
func overlayLayers(t *task.Task) (upper, work string) {
	d := filepath.Join(t.Paths.Dir, "overlay")
	return filepath.Join(d, "upper"), filepath.Join(d, "work")
}

// prepareOverlay folds what an earlier command left in the upper layer
// and readies both layers for the next command. It is a no-op for tasks
// of other backends.
func prepareOverlay(t *task.Task) (upper, work string, err error) {
	if t.Backend != clone.Overlay {
		return "", "", nil
	}
	upper, work = overlayLayers(t)
	for _, d := range []string{upper, work} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return "", "", fmt.Errorf("the task's overlay: %w", err)
		}
	}
	if err := foldOverlay(t); err != nil {
		return "", "", err
	}
	// The merged root takes the upper root's mode: the copy's own.
	if st, err := os.Stat(t.Paths.Copy); err != nil {
		return "", "", fmt.Errorf("the task's copy: %w", err)
	} else if err := os.Chmod(upper, st.Mode().Perm()|0o700); err != nil {
		return "", "", fmt.Errorf("the task's overlay: %w", err)
	}
	return upper, work, nil
}

// foldOverlay moves the upper layer's changes into the copy and empties
// overlay's work directory (it leaves a directory of mode 0 there).
func foldOverlay(t *task.Task) error {
	if t.Backend != clone.Overlay {
		return nil
	}
	upper, work := overlayLayers(t)
	if _, err := os.Lstat(upper); errors.Is(err, os.ErrNotExist) {
		return nil // no command has run over an overlay yet
	}
	if err := noteFolds(t, upper); err != nil {
		return fmt.Errorf("fold the command's changes into the copy: %w (they are kept in %s and folded when the next command starts)", err, upper)
	}
	if _, err := overlay.Fold(upper, t.Paths.Copy); err != nil {
		return fmt.Errorf("fold the command's changes into the copy: %w (they are kept in %s and folded when the next command starts)", err, upper)
	}
	w, err := beneath.Open(work)
	if errors.Is(err, os.ErrNotExist) {
		return nil // made with the next command's layers
	}
	if err != nil {
		return fmt.Errorf("the task's overlay: %w", err)
	}
	defer w.Close()
	names, err := w.ReadDir("")
	if err != nil {
		return fmt.Errorf("the task's overlay: %w", err)
	}
	for _, n := range names {
		_ = w.Chmod(n, 0o700) // a link is refused here and removed as one below
		if err := w.RemoveAll(n); err != nil {
			return fmt.Errorf("the task's overlay: %w", err)
		}
	}
	return nil
}

// overlayPending reports whether the task's upper layer holds anything
// (only a command cut off before its fold leaves it so).
func overlayPending(t *task.Task) bool {
	if t.Backend != clone.Overlay {
		return false
	}
	upper, _ := overlayLayers(t)
	f, err := os.Open(upper)
	if err != nil {
		return false
	}
	defer f.Close()
	names, _ := f.Readdirnames(1)
	return len(names) > 0
}

// FoldOverlay folds into the copy what a command cut off before its fold
// left in the task's overlay (nothing on other backends). The caller holds
// the task's lock: no command is running over that layer then.
func FoldOverlay(t *task.Task) error { return foldOverlay(t) }
