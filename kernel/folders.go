package kernel

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/kulehq/kule/kernel/agents"
)

// ErrFolderRefused: the folder is one Kule never makes a task on (the root,
// the home itself, a credential folder, Kule's own home).
var ErrFolderRefused = errors.New("kule does not make a task on this folder")

// CheckTaskFolder refuses a folder a task must never copy: every command run
// in a task reads its copy, so the root, the person's home, a folder of keys
// and logins (those the sandbox hides) or Kule's own home would hand them to
// the agent. folder is absolute; links in it, home and kuleHome are
// resolved where they exist. An empty home or kuleHome is not checked.
func CheckTaskFolder(folder, home, kuleHome string) error {
	f := resolvedPath(folder)
	if !filepath.IsAbs(folder) {
		return fmt.Errorf("new: %s: %w: give the folder as an absolute path (nothing was made)", folder, ErrFolderRefused)
	}
	if f == "/" {
		return fmt.Errorf("new: %s: %w: it is the root of the file system; give the project folder the agent should work on (nothing was made)", f, ErrFolderRefused)
	}
	if kuleHome != "" {
		if k := resolvedPath(kuleHome); folderWithin(f, k) || folderWithin(k, f) {
			return fmt.Errorf("new: %s: %w (%s): %w — a task there would reach Kule's signing key and the other tasks; pick a folder outside it and not containing it (nothing was made)", f, ErrInsideKuleHome, k, ErrFolderRefused)
		}
	}
	if home == "" {
		return nil
	}
	h := resolvedPath(home)
	if h == "/" {
		return nil
	}
	if folderWithin(h, f) {
		return fmt.Errorf("new: %s: %w: it is or holds your home folder, with your keys and logins; give the project folder inside it (nothing was made)", f, ErrFolderRefused)
	}
	for _, list := range [][]string{agents.Hidden, agents.KuleOwn} {
		for _, rel := range list {
			if c := filepath.Join(h, filepath.FromSlash(rel)); folderWithin(f, c) || folderWithin(c, f) {
				return fmt.Errorf("new: %s: %w: it is or holds ~/%s, where keys and logins are kept that Kule hides from every agent; give a project folder that holds no credentials (nothing was made)", f, ErrFolderRefused, rel)
			}
		}
	}
	return nil
}

// resolvedPath is p absolute and clean, with its links resolved when it exists.
func resolvedPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		p = a
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// within reports whether a is b or lies below it.
func folderWithin(a, b string) bool {
	return a == b || b == "/" || strings.HasPrefix(a, b+"/")
}
