package kernel

import (
	"fmt"
	"os"
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
	return clone.Probe(folder, k.store.TasksDir())
}

// OverlayAvailable says whether the overlay backend can be had on this
// machine, and if not why (kernel/internal/overlay.Available).
func OverlayAvailable() error { return overlay.Available() }
