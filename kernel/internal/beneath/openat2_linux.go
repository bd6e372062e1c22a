package beneath

import "golang.org/x/sys/unix"

// openat2Dir opens the directory rel beneath rootfd with openat2, refusing
// every link, magic link, ".." above the root and mount crossing on the way.
func openat2Dir(rootfd int, rel string) (int, error) {
	how := unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC | unix.O_NOFOLLOW,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV,
	}
	return unix.Openat2(rootfd, rel, &how)
}

// openPath pins what name in dirfd is now, without opening it for reading.
func openPath(dirfd int, name string) (int, error) {
	return unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
}
