package beneath

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/kulehq/kule/kernel/internal/atomicfile"
)

// Root is an open directory that paths are resolved beneath. Its methods
// take paths relative to it ("a/b", slash-separated) and never follow a link
// in any element; where one stands in the way they return a *LinkError.
// A Root is safe for use by one goroutine at a time per call; it holds one
// descriptor until Close.
type Root struct {
	fd   int
	name string
}

// Open opens the directory at dir as a root. dir itself must not be a link.
func Open(dir string) (*Root, error) {
	fd, err := OpenRootFd(dir)
	if err != nil {
		return nil, err
	}
	return &Root{fd: fd, name: dir}, nil
}

// Close releases the root's descriptor.
func (r *Root) Close() error {
	if r.fd < 0 {
		return nil
	}
	err := unix.Close(r.fd)
	r.fd = -1
	return err
}

// Name is the path the root was opened by.
func (r *Root) Name() string { return r.name }

// Fd is the root's descriptor, valid until Close.
func (r *Root) Fd() int { return r.fd }

// Join gives the path a person reads for rel: the root's path and rel.
// It is for messages only; nothing is opened by it.
func (r *Root) Join(rel string) string { return path.Join(r.name, rel) }

func (r *Root) wrap(op, rel string, err error) error {
	if errors.Is(err, ErrLink) {
		return newLinkError(r.name, r.fd, rel)
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return err
	}
	return &os.PathError{Op: op, Path: r.Join(rel), Err: err}
}

// OpenDir opens the directory rel; the caller closes the descriptor.
func (r *Root) OpenDir(rel string) (int, error) {
	fd, err := OpenDirAt(r.fd, rel)
	if err != nil {
		return -1, r.wrap("open", rel, unwrapRel(err))
	}
	return fd, nil
}

// Sub opens the directory rel as a root of its own.
func (r *Root) Sub(rel string) (*Root, error) {
	fd, err := r.OpenDir(rel)
	if err != nil {
		return nil, err
	}
	return &Root{fd: fd, name: r.Join(rel)}, nil
}

// unwrapRel drops the "rel: " OpenDirAt puts in front, keeping ErrLink and
// errno values testable.
func unwrapRel(err error) error {
	if errors.Is(err, ErrLink) {
		return ErrLink
	}
	var errno unix.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return err
}

// parent opens the directory holding rel's last element and returns it and
// that element's name. rel must name something below the root.
func (r *Root) parent(op, rel string) (int, string, error) {
	rel = clean(rel)
	if rel == "" || bad(rel) {
		return -1, "", &os.PathError{Op: op, Path: r.Join(rel), Err: errNotBeneath}
	}
	dir, name := "", rel
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		dir, name = rel[:i], rel[i+1:]
	}
	fd, err := OpenDirAt(r.fd, dir)
	if err != nil {
		if errors.Is(err, ErrLink) {
			return -1, "", newLinkError(r.name, r.fd, rel)
		}
		return -1, "", &os.PathError{Op: op, Path: r.Join(rel), Err: unwrapRel(err)}
	}
	return fd, name, nil
}

// OpenFile opens the file rel with flags (unix.O_* / os.O_*) and perm for a
// new file. The last element is opened O_NOFOLLOW: a link there is a
// *LinkError, not what it points to.
func (r *Root) OpenFile(rel string, flags int, perm os.FileMode) (*os.File, error) {
	dfd, name, err := r.parent("open", rel)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dfd)
	flags |= unix.O_CLOEXEC | unix.O_NOFOLLOW
	if followLinks.Load() {
		flags &^= unix.O_NOFOLLOW
	}
	fd, err := unix.Openat(dfd, name, flags, uint32(perm.Perm()))
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, newLinkError(r.name, r.fd, rel)
		}
		return nil, &os.PathError{Op: "open", Path: r.Join(rel), Err: err}
	}
	return os.NewFile(uintptr(fd), r.Join(rel)), nil
}

// Open opens the file rel for reading.
func (r *Root) Open(rel string) (*os.File, error) { return r.OpenFile(rel, os.O_RDONLY, 0) }

// ReadFile reads the whole file rel.
func (r *Root) ReadFile(rel string) ([]byte, error) {
	f, err := r.Open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// WriteFile replaces rel with data so that a crash leaves the old content or
// the new: a temporary file in the same directory (opened through the same
// descriptor), fsynced, renamed over rel, and the directory fsynced. A link
// at rel is replaced, never written through.
func (r *Root) WriteFile(rel string, data []byte, perm os.FileMode) error {
	dfd, name, err := r.parent("write", rel)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	if followLinks.Load() {
		// What a plain os.WriteFile does: follow a link at the end too.
		fd, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, uint32(perm.Perm()))
		if err != nil {
			return &os.PathError{Op: "write", Path: r.Join(rel), Err: err}
		}
		f := os.NewFile(uintptr(fd), r.Join(rel))
		_, err = f.Write(data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}
	return atomicfile.WriteAt(dfd, name, r.Join(rel), data, perm)
}

// Remove removes the file, link or empty directory rel (a link itself,
// never what it points to).
func (r *Root) Remove(rel string) error {
	dfd, name, err := r.parent("remove", rel)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	err = unix.Unlinkat(dfd, name, 0)
	if errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EPERM) {
		err = unix.Unlinkat(dfd, name, unix.AT_REMOVEDIR)
	}
	if err != nil {
		return &os.PathError{Op: "remove", Path: r.Join(rel), Err: err}
	}
	return nil
}

// RemoveAll removes rel and everything below it; a missing rel, or a
// missing directory on the way to it, is no error. A link on the way is.
func (r *Root) RemoveAll(rel string) error {
	dfd, name, err := r.parent("remove", rel)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	if err := RemoveAllAt(dfd, name); err != nil {
		return &os.PathError{Op: "remove", Path: r.Join(rel), Err: err}
	}
	return nil
}

// Mkdir makes the directory rel; its parent must exist.
func (r *Root) Mkdir(rel string, perm os.FileMode) error {
	dfd, name, err := r.parent("mkdir", rel)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	if err := unix.Mkdirat(dfd, name, uint32(perm.Perm())); err != nil {
		return &os.PathError{Op: "mkdir", Path: r.Join(rel), Err: err}
	}
	return nil
}

// MkdirAll makes rel and every missing directory above it. An element that
// exists as a link is a *LinkError.
func (r *Root) MkdirAll(rel string, perm os.FileMode) error {
	rel = clean(rel)
	if rel == "" {
		return nil
	}
	fd, err := OpenDirAt(r.fd, rel)
	if err == nil {
		unix.Close(fd)
		return nil
	}
	if errors.Is(err, ErrLink) {
		return newLinkError(r.name, r.fd, rel)
	}
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		if err := r.MkdirAll(rel[:i], perm); err != nil {
			return err
		}
	}
	if err := r.Mkdir(rel, perm); err != nil && !errors.Is(err, unix.EEXIST) {
		return err
	}
	fd, err = OpenDirAt(r.fd, rel) // a link raced in is still caught here
	if err != nil {
		return r.wrap("mkdir", rel, unwrapRel(err))
	}
	unix.Close(fd)
	return nil
}

// Symlink makes rel a link to target (which is not looked at).
func (r *Root) Symlink(target, rel string) error {
	dfd, name, err := r.parent("symlink", rel)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	if err := unix.Symlinkat(target, dfd, name); err != nil {
		return &os.PathError{Op: "symlink", Path: r.Join(rel), Err: err}
	}
	return nil
}

// Readlink gives the target of the link rel.
func (r *Root) Readlink(rel string) (string, error) {
	dfd, name, err := r.parent("readlink", rel)
	if err != nil {
		return "", err
	}
	defer unix.Close(dfd)
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dfd, name, buf)
		if err != nil {
			return "", &os.PathError{Op: "readlink", Path: r.Join(rel), Err: err}
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

// Lstat gives rel's metadata; a link is described, not followed.
func (r *Root) Lstat(rel string) (unix.Stat_t, error) {
	var st unix.Stat_t
	if clean(rel) == "" {
		err := unix.Fstat(r.fd, &st)
		return st, err
	}
	dfd, name, err := r.parent("lstat", rel)
	if err != nil {
		return st, err
	}
	defer unix.Close(dfd)
	if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return st, &os.PathError{Op: "lstat", Path: r.Join(rel), Err: err}
	}
	return st, nil
}

// ReadDir lists the names in the directory rel.
func (r *Root) ReadDir(rel string) ([]string, error) {
	fd, err := r.OpenDir(rel)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	names, err := ReadNames(fd)
	if err != nil {
		return nil, &os.PathError{Op: "readdir", Path: r.Join(rel), Err: err}
	}
	return names, nil
}

// Rename moves from to to, both beneath the root.
func (r *Root) Rename(from, to string) error {
	ffd, fname, err := r.parent("rename", from)
	if err != nil {
		return err
	}
	defer unix.Close(ffd)
	tfd, tname, err := r.parent("rename", to)
	if err != nil {
		return err
	}
	defer unix.Close(tfd)
	if err := unix.Renameat(ffd, fname, tfd, tname); err != nil {
		return &os.PathError{Op: "rename", Path: r.Join(from), Err: err}
	}
	return nil
}

// Chmod sets rel's permission bits. A link at rel is a *LinkError (Linux
// links have no mode of their own; chmod would reach their target).
func (r *Root) Chmod(rel string, mode os.FileMode) error {
	dfd, name, err := r.parent("chmod", rel)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	// O_PATH|O_NOFOLLOW pins what rel is now; the mode is set through
	// /proc/self/fd, which acts on that very inode.
	fd, err := openPath(dfd, name)
	if errors.Is(err, unix.ELOOP) {
		return newLinkError(r.name, r.fd, rel)
	}
	if err != nil {
		return &os.PathError{Op: "chmod", Path: r.Join(rel), Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "chmod", Path: r.Join(rel), Err: err}
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return newLinkError(r.name, r.fd, rel)
	}
	perm := uint32(mode.Perm())
	if mode&os.ModeSetuid != 0 {
		perm |= unix.S_ISUID
	}
	if mode&os.ModeSetgid != 0 {
		perm |= unix.S_ISGID
	}
	if mode&os.ModeSticky != 0 {
		perm |= unix.S_ISVTX
	}
	if err := unix.Fchmodat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", fd), perm, 0); err != nil {
		// No /proc: the name again, relative to the pinned parent.
		if err2 := unix.Fchmodat(dfd, name, perm, 0); err2 != nil {
			return &os.PathError{Op: "chmod", Path: r.Join(rel), Err: err2}
		}
	}
	return nil
}

// Lchown sets rel's owner; a link's own owner, not its target's.
func (r *Root) Lchown(rel string, uid, gid int) error {
	dfd, name, err := r.parent("chown", rel)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	if err := unix.Fchownat(dfd, name, uid, gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &os.PathError{Op: "chown", Path: r.Join(rel), Err: err}
	}
	return nil
}

// Utimes sets rel's access and modification times (a link's own).
func (r *Root) Utimes(rel string, atime, mtime unix.Timespec) error {
	dfd, name, err := r.parent("utimes", rel)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	if err := unix.UtimesNanoAt(dfd, name, []unix.Timespec{atime, mtime}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &os.PathError{Op: "utimes", Path: r.Join(rel), Err: err}
	}
	return nil
}

// Parent opens the directory holding rel's last element (never through a
// link) and returns its descriptor, which the caller closes, and that
// element's name: for helpers that act relative to a directory descriptor.
func (r *Root) Parent(rel string) (int, string, error) { return r.parent("open", rel) }

// NoLinkBelow checks the absolute path against the roots it may lie in (a
// task's copy, tmp, home layer, caches): if it lies beneath one, no element
// of it below that root, the last included, may be a symbolic link — a
// *LinkError says which is. Elements above the root are Kule's own and are
// not looked at; a path beneath none of the roots passes, as does one that
// does not exist (whoever opens it says so).
func NoLinkBelow(abs string, roots ...string) error {
	abs = path.Clean(abs)
	for _, root := range roots {
		if root == "" {
			continue
		}
		root = path.Clean(root)
		if abs == root || !strings.HasPrefix(abs, root+"/") {
			continue
		}
		r, err := Open(root)
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(abs, root+"/")
		st, err := r.Lstat(rel)
		if err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK && !followLinks.Load() {
			err = newLinkError(r.name, r.fd, rel)
		}
		r.Close()
		if errors.Is(err, ErrLink) {
			return err
		}
	}
	return nil
}
