package clone

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/kulehq/kule/kernel/internal/walk"
)

// Backends are the workspace backends Tree can make, in the order a person
// reads them in a message.
var Backends = []string{Reflink, Copy, Overlay}

// ErrUnknownBackend is a backend name Kule does not have.
var ErrUnknownBackend = errors.New("not a workspace backend Kule has")

// CheckBackend accepts "" (pick by the file system) and the names in
// Backends; anything else is ErrUnknownBackend, so a misspelt name never
// falls back to a plain copy in silence.
func CheckBackend(name string) error {
	if name == "" {
		return nil
	}
	for _, b := range Backends {
		if name == b {
			return nil
		}
	}
	return fmt.Errorf("%q is %w (it has %s)", name, ErrUnknownBackend, strings.Join(Backends, ", "))
}

// Probe says which backend Tree picks for a copy of folder made in dir (the
// home's tasks directory), and why: one reflink of a probe file made in the
// folder into dir's file system. It writes only a temporary directory in
// dir (never in the folder), and removes it.
func Probe(folder, dir string) (name, reason string) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Copy, fmt.Sprintf("plain copy: could not make %s to try a reflink (%v)", dir, err)
	}
	src, err := findFile(folder)
	if err != nil {
		return Copy, fmt.Sprintf("plain copy: could not read %s to try a reflink (%v)", folder, err)
	}
	if src == "" {
		return Copy, "plain copy: the folder holds no file to try a reflink with (an empty folder costs nothing to copy)"
	}
	probe, err := os.MkdirTemp(dir, ".backend-probe-")
	if err != nil {
		return Copy, fmt.Sprintf("plain copy: could not make a probe in %s (%v)", dir, err)
	}
	defer os.RemoveAll(probe)
	_, err = CopyFile(src, filepath.Join(probe, "f"), walk.Item{}, true, false)
	switch {
	case err == nil:
		return Reflink, "reflink copy: the folder's file system shares blocks with the tasks' directory, so a copy takes no extra space"
	case errors.Is(err, ErrNoReflink):
		return Copy, fmt.Sprintf("plain copy: %v between the folder and %s, so each task holds a second copy of the folder's files", ErrNoReflink, dir)
	default:
		return Copy, fmt.Sprintf("plain copy: a reflink probe failed (%v)", err)
	}
}

// findFile is the first regular file found below folder (links are not
// followed), or "" where it holds none. It stops at the first: a probe
// costs nothing like a walk of the folder.
func findFile(folder string) (string, error) {
	found := ""
	err := filepath.WalkDir(folder, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == folder {
				return err
			}
			return nil // an unreadable directory: look elsewhere
		}
		if d.Type().IsRegular() {
			found = p
			return fs.SkipAll
		}
		return nil
	})
	return found, err
}
