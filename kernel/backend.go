package kernel

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/kulehq/kule/kernel/internal/clone"
	"github.com/kulehq/kule/kernel/internal/overlay"
)

// backendSource names where a forced backend came from, for messages.
func (k *Kernel) backendSource() string {
	if k.cfg.Backend != "" {
		return "the kernel's configured backend"
	}
	return "KULE_BACKEND"
}

// checkBackend refuses a forced backend Kule does not have, saying where the
// name came from and what to do: a misspelt KULE_BACKEND would otherwise
// make a plain copy in silence.
func (k *Kernel) checkBackend() error {
	if clone.CheckBackend(k.backend) != nil {
		return fmt.Errorf("%s=%q is %w (%s): unset it to let Kule pick by the file system, or set one of those (nothing was made)", k.backendSource(), k.backend, clone.ErrUnknownBackend, strings.Join(clone.Backends, ", "))
	}
	if k.backend == clone.Overlay {
		if err := overlay.Available(); err != nil {
			return fmt.Errorf("%s=overlay: %w: unset it for the copy backend (nothing was made)", k.backendSource(), err)
		}
	}
	return nil
}

// BackendFor says which workspace backend a new task of folder gets and
// why, as kule new would pick it: the one forced (KULE_BACKEND or the
// configuration) when there is one, else what a reflink probe from the
// folder into the home's tasks directory finds. It changes nothing in the
// folder; it makes the tasks directory if missing and a probe inside it
// that it removes.
func (k *Kernel) BackendFor(folder string) (name, reason string) {
	if st, err := os.Stat(folder); err != nil {
		return "", fmt.Sprintf("cannot read %s: %v", folder, err)
	} else if !st.IsDir() {
		return "", fmt.Sprintf("%s is not a folder", folder)
	}
	if k.backend != "" {
		if err := k.checkBackend(); err != nil {
			return "", err.Error()
		}
		if k.backend == clone.Overlay {
			return k.backend, fmt.Sprintf("%s forces the overlay backend: the copy is made as the copy backend makes it, and each command runs over an overlay of it that takes its writes", k.backendSource())
		}
		return k.backend, fmt.Sprintf("%s forces the %s backend", k.backendSource(), k.backend)
	}
	name, reason = clone.Probe(folder, k.store.TasksDir())
	if name != clone.Copy {
		return name, reason
	}
	from := k.overlayFrom()
	if from == 0 {
		if err := overlay.Available(); err != nil {
			reason += fmt.Sprintf("; the overlay backend, which a folder of %d entries or more would get, cannot be had here: %v", DefaultOverlayFrom, err)
		}
		return name, reason
	}
	if countUpTo(folder, from) < from {
		return name, reason + fmt.Sprintf("; the folder holds fewer than %d entries, below which a walk of the copy costs a few milliseconds (a larger one gets the overlay backend)", from)
	}
	return clone.Overlay, strings.TrimPrefix(reason, "plain copy: ") + fmt.Sprintf("; the folder holds %d entries or more, so it gets the overlay backend: the copy is made as the copy backend makes it, each command runs over an overlay of it, and a status reads what the commands changed rather than walking the copy", from)
}

// DefaultOverlayFrom is how many entries a folder on a file system without
// reflinks must hold to get the overlay backend when none is forced. Below
// it a walk of the copy costs a few milliseconds, and the copy backend
// keeps every status a walk (one sees an edit made in the copy by hand);
// at and above it a status on the copy backend costs a walk of the whole
// tree, where the overlay backend's reads what the commands changed.
const DefaultOverlayFrom = 20_000

// overlayFrom is clone.Options.OverlayFrom for a task made now: 0 where a
// backend is forced or overlays cannot be had here.
func (k *Kernel) overlayFrom() int {
	if k.backend != "" || overlay.Available() != nil {
		return 0
	}
	if k.cfg.OverlayFrom > 0 {
		return k.cfg.OverlayFrom
	}
	return DefaultOverlayFrom
}

// countUpTo counts the entries below folder, stopping at n: whether a
// folder reaches the overlay backend's size is told without walking all of
// a large one. Links are not followed.
func countUpTo(folder string, n int) int {
	count := 0
	stop := errors.New("enough")
	_ = filepath.WalkDir(folder, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == folder {
			return nil
		}
		if count++; count >= n {
			return stop
		}
		return nil
	})
	return count
}

// OverlayAvailable says whether the overlay backend can be had on this
// machine, and if not why (kernel/internal/overlay.Available).
func OverlayAvailable() error { return overlay.Available() }
