// Package beneath opens, creates, removes and renames entries beneath a root
// directory without following a symbolic link in any component of the path.
//
// Everything a task can write (its copy, its base, its home layer, its tmp,
// the .git inside its copy) and the person's folder are trees Kule's own code
// touches from outside the sandbox. A command may have replaced any directory
// there with a link to ~/victim or to another repository's .git/hooks; a path
// joined as filepath.Join(root, rel) and then written follows it. Here every
// path is resolved from a descriptor of the root with openat2
// (RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS|RESOLVE_NO_XDEV),
// or, on kernels without openat2, one O_NOFOLLOW step per element; the last
// element is then acted on relative to its parent's descriptor, never by
// name from the top again. A link found on the way is ErrLink, wrapped in a
// *LinkError that names where it is.
//
// Go's os.Root is not used: it follows links that stay inside the root, which
// still lets a task turn a write into its copy into a write into the copy's
// .git/hooks.
package beneath

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// ErrLink is returned when a path passes through a symbolic link, or ends
// in one where Kule meant to open a file or directory.
var ErrLink = errors.New("the path passes through a symbolic link")

// LinkError says which path, beneath which root, met a link. Nothing was
// opened through it.
type LinkError struct {
	Root string // the root directory's path, as opened
	Path string // the path relative to Root that was asked for
	Link string // the element of Path that is a link, where one was found
}

func (e *LinkError) Error() string {
	if e.Link != "" && e.Link != e.Path {
		return fmt.Sprintf("%s (in %s): %v (%s is one)", e.Path, e.Root, ErrLink, e.Link)
	}
	return fmt.Sprintf("%s (in %s): %v", e.Path, e.Root, ErrLink)
}

// newLinkError makes the error for rel beneath rootfd, finding which of
// its elements is the link.
func newLinkError(root string, rootfd int, rel string) *LinkError {
	rel = clean(rel)
	e := &LinkError{Root: root, Path: rel}
	cur, err := unix.Dup(rootfd)
	if err != nil {
		return e
	}
	defer func() { unix.Close(cur) }()
	els := strings.Split(rel, "/")
	for i, el := range els {
		if isLinkAt(cur, el) {
			e.Link = strings.Join(els[:i+1], "/")
			return e
		}
		next, err := unix.Openat(cur, el, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return e
		}
		unix.Close(cur)
		cur = next
	}
	return e
}

func (e *LinkError) Unwrap() error { return ErrLink }

// followLinks makes every lookup follow links as a plain path would: the
// behaviour this package exists to prevent. Only tests set it (through
// FollowLinksForTest), to show an attack succeeding without the guard.
var followLinks atomic.Bool

// noOpenat2 makes lookups take the per-element path, as on kernels without
// openat2; the package's own tests set it.
var noOpenat2 atomic.Bool

// Cleaner is the part of testing.TB that FollowLinksForTest needs.
type Cleaner interface {
	Helper()
	Cleanup(func())
}

// FollowLinksForTest turns the guard off until the test ends: lookups follow
// links, so a test can show its attack harming the victim without it. It
// must only be called from tests; a guard test of the kernel checks that.
func FollowLinksForTest(tb Cleaner) {
	tb.Helper()
	followLinks.Store(true)
	tb.Cleanup(func() { followLinks.Store(false) })
}

// OpenRootFd opens the directory path itself, not following a link at its
// last element. Its parents are Kule's own (the task directory, the
// folder's resolved path), not the task's.
func OpenRootFd(path string) (int, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) || (errors.Is(err, unix.ENOTDIR) && isLinkPath(path)) {
			return -1, &os.PathError{Op: "open", Path: path, Err: ErrLink}
		}
		return -1, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return fd, nil
}

func isLinkPath(path string) bool {
	var st unix.Stat_t
	return unix.Lstat(path, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK
}

// OpenDirAt opens the directory rel beneath rootfd, following no link on
// the way nor at its end. rel "" (or ".") is the root itself. The error
// wraps ErrLink where a link stood in the way.
func OpenDirAt(rootfd int, rel string) (int, error) {
	rel = clean(rel)
	if rel == "" {
		return unix.Dup(rootfd)
	}
	if bad(rel) {
		return -1, fmt.Errorf("%s: %w", rel, errNotBeneath)
	}
	if followLinks.Load() {
		return unix.Openat(rootfd, rel, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	}
	if !noOpenat2.Load() {
		fd, err := openat2Dir(rootfd, rel)
		if err == nil {
			return fd, nil
		}
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) || (errors.Is(err, unix.ENOTDIR) && linkOnTheWay(rootfd, rel)) {
			return -1, fmt.Errorf("%s: %w", rel, ErrLink)
		}
		if !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EPERM) {
			return -1, fmt.Errorf("%s: %w", rel, err)
		}
		// ENOSYS: no openat2; EPERM: a seccomp filter refusing it.
	}
	cur, err := unix.Dup(rootfd)
	if err != nil {
		return -1, err
	}
	for _, el := range strings.Split(rel, "/") {
		next, err := unix.Openat(cur, el, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ELOOP) || (errors.Is(err, unix.ENOTDIR) && isLinkAt(cur, el)) {
			unix.Close(cur)
			return -1, fmt.Errorf("%s: %w", rel, ErrLink)
		}
		unix.Close(cur)
		if err != nil {
			return -1, fmt.Errorf("%s: %w", rel, err)
		}
		cur = next
	}
	return cur, nil
}

var errNotBeneath = errors.New("the path leaves its root")

// clean drops a leading "./" and trailing slashes; the paths Kule passes are
// already relpath-clean.
func clean(rel string) string {
	rel = strings.TrimRight(rel, "/")
	if rel == "." {
		return ""
	}
	return strings.TrimPrefix(rel, "./")
}

// bad reports a path that is absolute or climbs out with "..": refused even
// when following links for a test.
func bad(rel string) bool {
	if strings.HasPrefix(rel, "/") {
		return true
	}
	for _, el := range strings.Split(rel, "/") {
		if el == ".." {
			return true
		}
	}
	return false
}

// linkOnTheWay reports whether some element of rel (walked without
// following anything) is a link: openat2 answers ENOTDIR, not ELOOP, for a
// link at the last element opened with O_DIRECTORY|O_NOFOLLOW.
func linkOnTheWay(rootfd int, rel string) bool { return newLinkError("", rootfd, rel).Link != "" }

func isLinkAt(dirfd int, name string) bool {
	var st unix.Stat_t
	return unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK
}

// RemoveAllAt removes name in dirfd and everything below it, never
// following a link (a link is removed, not what it points to). A missing
// name is no error.
func RemoveAllAt(dirfd int, name string) error {
	err := unix.Unlinkat(dirfd, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM) {
		return err
	}
	flags := unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	if followLinks.Load() {
		flags &^= unix.O_NOFOLLOW
	}
	fd, err := unix.Openat(dirfd, name, flags, 0)
	if err != nil {
		return err
	}
	names, err := ReadNames(fd)
	if err != nil {
		unix.Close(fd)
		return err
	}
	for _, n := range names {
		if err := RemoveAllAt(fd, n); err != nil {
			unix.Close(fd)
			return err
		}
	}
	unix.Close(fd)
	err = unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	return err
}

// ReadNames lists the names in the open directory fd (without "." and "..").
func ReadNames(fd int) ([]string, error) {
	dup, err := unix.Dup(fd)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(dup), "")
	defer f.Close()
	return f.Readdirnames(-1)
}

// ExistsAt reports whether name exists in dirfd (a link counts; it is not
// followed), and whether it is a directory.
func ExistsAt(dirfd int, name string) (ok, isDir bool, err error) {
	var st unix.Stat_t
	err = unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return false, false, nil
	}
	if err != nil {
		return false, false, err
	}
	return true, st.Mode&unix.S_IFMT == unix.S_IFDIR, nil
}
