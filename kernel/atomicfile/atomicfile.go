// Package atomicfile writes a small file so that a crash leaves either the old
// content or the new, never half of either: through a temporary file in the
// same directory, fsynced, renamed over the target, and the directory fsynced
// so the rename itself lasts. Every record Kule keeps (task.json, journals,
// history heads, sealed secrets, remembered rules) is written this way.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write replaces path with data, with the permission bits perm.
func Write(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op once renamed
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return SyncDir(dir)
}

// SyncDir fsyncs a directory so that the names created or renamed in it last.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
