package kernel

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/kulehq/kule/kernel/internal/agents"
	"github.com/kulehq/kule/kernel/internal/credentials"
)

// ErrFolderRefused: the folder is one Kule never makes a task on (the root,
// the home itself, a credential folder, Kule's own home). The error's text
// says which and why.
var ErrFolderRefused = errors.New("kule does not make a task on this folder")

// CheckTaskFolder refuses a folder that a task must never copy: a task's
// copy is readable by every command run in it, so a folder that is or holds
// the whole file system, the person's home, a folder of keys and logins
// (the ones the sandbox hides), or Kule's own home (its signing key, other
// tasks) would hand those to the agent. folder should be absolute with its
// links resolved; home and kuleHome are resolved here where they exist.
// An empty home or kuleHome is not checked.
func CheckTaskFolder(folder, home, kuleHome string) error {
	f := filepath.Clean(folder)
	if !filepath.IsAbs(f) {
		return fmt.Errorf("new: %s: %w: the folder must be an absolute path (nothing was made)", folder, ErrFolderRefused)
	}
	if f == string(filepath.Separator) {
		return fmt.Errorf("new: %s: %w: it is the root of the file system, which holds every key and file on this machine; give the project folder the agent should work on (nothing was made)", f, ErrFolderRefused)
	}
	if kuleHome != "" {
		k := resolvedPath(kuleHome)
		if folderOverlaps(f, k) {
			return fmt.Errorf("new: %s: %w (%s): %w — a task there would reach Kule's signing key and the other tasks; pick a folder outside it and not containing it (nothing was made)", f, ErrInsideKuleHome, k, ErrFolderRefused)
		}
	}
	if home == "" {
		return nil
	}
	h := resolvedPath(home)
	if h == string(filepath.Separator) {
		return nil // no home of its own: nothing below to name
	}
	if f == h {
		return fmt.Errorf("new: %s: %w: it is your home folder, which holds your keys and logins (~/.ssh, ~/.aws, …); give the project folder inside it (nothing was made)", f, ErrFolderRefused)
	}
	if folderWithin(h, f) {
		return fmt.Errorf("new: %s: %w: it holds your home folder %s and with it your keys and logins; give the project folder inside it (nothing was made)", f, ErrFolderRefused, h)
	}
	for _, list := range [][]string{credentials.Home, credentials.AgentLogins, agents.KuleOwn} {
		for _, rel := range list {
			c := filepath.Join(h, filepath.FromSlash(rel))
			if folderOverlaps(f, c) {
				return fmt.Errorf("new: %s: %w: it is or holds ~/%s, where keys and logins are kept that Kule hides from every agent; give a project folder that holds no credentials (nothing was made)", f, ErrFolderRefused, rel)
			}
		}
	}
	return nil
}

// resolvedPath is p absolute, with its links resolved when it exists.
func resolvedPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		p = a
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// folderWithin reports whether a is b or lies below it. The root holds everything.
func folderWithin(a, b string) bool {
	if b == string(filepath.Separator) {
		return true
	}
	return a == b || strings.HasPrefix(a, b+string(filepath.Separator))
}

// folderOverlaps reports whether one of a and b holds the other.
func folderOverlaps(a, b string) bool { return folderWithin(a, b) || folderWithin(b, a) }

// folderGuard is on everywhere but in the test that shows what a task on a
// refused folder would hand the agent.
var folderGuard = true
