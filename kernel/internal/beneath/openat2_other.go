//go:build !linux

package beneath

import "golang.org/x/sys/unix"

// openat2Dir: no openat2 here; the per-element walk resolves the path.
func openat2Dir(rootfd int, rel string) (int, error) { return -1, unix.ENOSYS }

// openPath pins what name in dirfd is now (O_NOFOLLOW: a link fails).
func openPath(dirfd int, name string) (int, error) {
	return unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
}
