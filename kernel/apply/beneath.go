package apply

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrLinkInPath is returned when a path in the folder passes through a
// symbolic link: Kule never writes through one, so a task that replaced a
// directory by a link to /etc cannot make a commit write into /etc.
var ErrLinkInPath = errors.New("the path passes through a symbolic link")

// openRoot opens the folder itself. The folder's own path was resolved when
// the task was made; if it has become a link since, this fails.
func openRoot(root string) (int, error) {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open folder %s: %w", root, err)
	}
	return fd, nil
}

// openDir opens the directory rel below rootfd without following any link on
// the way (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS; on kernels without
// openat2, one O_NOFOLLOW step per element). rel "" is the root itself.
func openDir(rootfd int, rel string) (int, error) {
	if rel == "" {
		return unix.Dup(rootfd)
	}
	how := unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC | unix.O_NOFOLLOW,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV,
	}
	fd, err := unix.Openat2(rootfd, rel, &how)
	if err == nil {
		return fd, nil
	}
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) || (errors.Is(err, unix.ENOTDIR) && isLink(rootfd, rel)) {
		return -1, fmt.Errorf("%s: %w", rel, ErrLinkInPath)
	}
	if !errors.Is(err, unix.ENOSYS) {
		return -1, fmt.Errorf("%s: %w", rel, err)
	}
	cur, err := unix.Dup(rootfd)
	if err != nil {
		return -1, err
	}
	for _, el := range strings.Split(rel, "/") {
		next, err := unix.Openat(cur, el, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(cur)
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			return -1, fmt.Errorf("%s: %w", rel, ErrLinkInPath)
		}
		if err != nil {
			return -1, fmt.Errorf("%s: %w", rel, err)
		}
		cur = next
	}
	return cur, nil
}

// isLink reports whether the last element of rel is a symbolic link (O_NOFOLLOW
// with O_DIRECTORY answers ENOTDIR for one).
func isLink(rootfd int, rel string) bool {
	var st unix.Stat_t
	return unix.Fstatat(rootfd, rel, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK
}

// removeAllAt removes name in dirfd and everything below it, never following
// a link (a link is removed, not what it points to).
func removeAllAt(dirfd int, name string) error {
	err := unix.Unlinkat(dirfd, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM) {
		return err
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	names, err := readNames(fd)
	if err != nil {
		unix.Close(fd)
		return err
	}
	for _, n := range names {
		if err := removeAllAt(fd, n); err != nil {
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

func readNames(fd int) ([]string, error) {
	var names []string
	buf := make([]byte, 32<<10)
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return names, nil
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
}

// exists reports whether name exists in dirfd (a link counts; it is not
// followed), and whether it is a directory.
func exists(dirfd int, name string) (ok, isDir bool, err error) {
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
