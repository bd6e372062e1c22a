// Package atomicfile writes a small file so that a crash leaves either the old
// content or the new, never half of either: through a temporary file in the
// same directory, fsynced, renamed over the target, and the directory fsynced
// so the rename itself lasts. Every record Kule keeps (task.json, journals,
// history heads, sealed secrets, remembered rules) is written this way, and
// kernel/internal/beneath writes into a task's trees with WriteAt.
package atomicfile

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Write replaces path with data, with the permission bits perm.
func Write(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(dfd)
	return WriteAt(dfd, filepath.Base(path), path, data, perm)
}

// WriteAt replaces name in the open directory dirfd with data, with the
// permission bits perm; the temporary file is made, and renamed, relative to
// dirfd, so no path is looked up again. shown is the path for errors. A link
// at name is replaced, never written through.
func WriteAt(dirfd int, name, shown string, data []byte, perm os.FileMode) error {
	tmp, fd, err := createTemp(dirfd, name)
	if err != nil {
		return &os.PathError{Op: "create", Path: shown, Err: err}
	}
	f := os.NewFile(uintptr(fd), filepath.Join(filepath.Dir(shown), tmp))
	renamed := false
	defer func() {
		if !renamed {
			_ = unix.Unlinkat(dirfd, tmp, 0)
		}
	}()
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
	if err := unix.Renameat(dirfd, tmp, dirfd, name); err != nil {
		return &os.PathError{Op: "rename", Path: shown, Err: err}
	}
	renamed = true
	if err := unix.Fsync(dirfd); err != nil {
		return &os.PathError{Op: "sync", Path: filepath.Dir(shown), Err: err}
	}
	return nil
}

// createTemp makes a new file ".<name>.tmp-<random>" in dirfd.
func createTemp(dirfd int, name string) (string, int, error) {
	for i := 0; ; i++ {
		tmp := fmt.Sprintf(".%s.tmp-%d", name, rand.Uint32())
		fd, err := unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err == nil {
			return tmp, fd, nil
		}
		if !errors.Is(err, unix.EEXIST) || i > 100 {
			return "", -1, err
		}
	}
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
