// Package atomicfile writes a small file so that a crash leaves either the old
// content or the new, never half of either: through a temporary file in the
// same directory, fsynced, renamed over the target, and the directory fsynced
// so the rename itself lasts. Every record Kule keeps (task.json, journals,
// history heads, sealed secrets, remembered rules, approvals, manifests, the
// objects it copies into a folder's .git) is written this way, and
// kernel/internal/beneath writes into a task's trees with WriteAt. It is the
// one place that does so; SyncDir is the one directory fsync.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ErrDirSync marks a write whose file is in place under its name but whose
// directory fsync failed: the new content is there, yet a crash may still
// lose the new name.
var ErrDirSync = errors.New("atomicfile: the file is in place but its directory was not fsynced")

// Options change how WriteWith and WriteAtWith write; the zero value is
// Write's behaviour with the permission bits 0.
type Options struct {
	// Perm is the new file's permission bits.
	Perm os.FileMode
	// Exclusive links the written file to its name instead of renaming it
	// over: when the name exists already the write fails with an error
	// that matches fs.ErrExist and the existing file is left as it was.
	Exclusive bool
	// NoSync skips both fsyncs, for a cache that may be lost in a crash
	// (it is still whole or absent: the rename stays).
	NoSync bool
	// NoDirSync syncs the file but not its directory, for a record whose
	// last write may be lost in a crash as long as it is never torn: after
	// one, the name holds the old contents or the new, each whole, and at
	// worst a temporary file is left beside it.
	NoDirSync bool
	// TempPrefix starts the temporary file's name instead of
	// ".<name>.tmp-", so another tool's own clean-up knows it (git removes
	// the "tmp_obj_" files a crash leaves in objects/).
	TempPrefix string
	// BeforeSync, when set, is called with the path of what is about to be
	// fsynced (the temporary file, then the directory); an error it returns
	// fails the write as a failed fsync would. Tests use it to see the
	// order of fsyncs and to make one fail.
	BeforeSync func(path string) error
}

// Write replaces path with data, with the permission bits perm.
func Write(path string, data []byte, perm os.FileMode) error {
	return WriteWith(path, Options{Perm: perm}, bytesFill(data))
}

// WriteWith replaces path with what fill writes, as o says. fill writes to
// the temporary file (unbuffered: wrap it in a bufio.Writer and flush for
// many small writes); an error from fill fails the write and leaves path as
// it was.
func WriteWith(path string, o Options, fill func(io.Writer) error) error {
	dir := filepath.Dir(path)
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(dfd)
	return WriteAtWith(dfd, filepath.Base(path), path, o, fill)
}

// WriteAt replaces name in the open directory dirfd with data, with the
// permission bits perm; the temporary file is made, and renamed, relative to
// dirfd, so no path is looked up again. shown is the path for errors. A link
// at name is replaced, never written through.
func WriteAt(dirfd int, name, shown string, data []byte, perm os.FileMode) error {
	return WriteAtWith(dirfd, name, shown, Options{Perm: perm}, bytesFill(data))
}

// WriteAtWith is WriteAt with what fill writes, as o says.
func WriteAtWith(dirfd int, name, shown string, o Options, fill func(io.Writer) error) error {
	prefix := o.TempPrefix
	if prefix == "" {
		prefix = "." + name + ".tmp-"
	}
	tmp, fd, err := createTemp(dirfd, prefix)
	if err != nil {
		return &os.PathError{Op: "create", Path: shown, Err: err}
	}
	dirShown := filepath.Dir(shown)
	tmpShown := filepath.Join(dirShown, tmp)
	f := os.NewFile(uintptr(fd), tmpShown)
	placed := false
	defer func() {
		if !placed {
			_ = unix.Unlinkat(dirfd, tmp, 0)
		}
	}()
	// Each step's error is kept: on a full disk a write fails part-way,
	// and placing the cut file under its name would keep half of it.
	err = f.Chmod(o.Perm)
	if err == nil {
		err = fill(f)
	}
	if err == nil && !o.NoSync {
		err = beforeSync(o, tmpShown)
		if err == nil {
			err = f.Sync()
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if o.Exclusive {
		err := unix.Linkat(dirfd, tmp, dirfd, name, 0)
		// Linked or not, the temporary name goes now, before the directory
		// is fsynced, so the directory lasts as it is meant to stay.
		_ = unix.Unlinkat(dirfd, tmp, 0)
		placed = true
		if err != nil {
			return &os.PathError{Op: "link", Path: shown, Err: err}
		}
	} else {
		if err := unix.Renameat(dirfd, tmp, dirfd, name); err != nil {
			return &os.PathError{Op: "rename", Path: shown, Err: err}
		}
		placed = true
	}
	if o.NoSync || o.NoDirSync {
		return nil
	}
	err = beforeSync(o, dirShown)
	if err == nil {
		err = unix.Fsync(dirfd)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrDirSync, &os.PathError{Op: "sync", Path: dirShown, Err: err})
	}
	return nil
}

func beforeSync(o Options, path string) error {
	if o.BeforeSync == nil {
		return nil
	}
	return o.BeforeSync(path)
}

func bytesFill(data []byte) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	}
}

// createTemp makes a new file "<prefix><random>" in dirfd.
func createTemp(dirfd int, prefix string) (string, int, error) {
	for i := 0; ; i++ {
		tmp := fmt.Sprintf("%s%d", prefix, rand.Uint32())
		fd, err := unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err == nil {
			return tmp, fd, nil
		}
		if !errors.Is(err, unix.EEXIST) || i > 100 {
			return "", -1, err
		}
	}
}

// Append adds data at the end of path, creating it with the permission bits
// perm, in one write, then fsyncs it (and, when it made the file, its
// directory, so the new name lasts): a log of records a line each, where a
// crash can cut only the last line, which its reader skips.
func Append(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	created := false
	if errors.Is(err, fs.ErrNotExist) {
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, perm)
		created = true
	}
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && created {
		if serr := SyncDir(filepath.Dir(path)); serr != nil {
			err = fmt.Errorf("%w: %w", ErrDirSync, serr)
		}
	}
	return err
}

// SyncDir fsyncs a directory so that the names created, renamed or removed
// in it last.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
