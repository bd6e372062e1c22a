//go:build linux && !(amd64 || arm64)

package walk

import "golang.org/x/sys/unix"

// fstatat is lstat of name (NUL-terminated) in the directory fd.
func fstatat(fd int, name []byte, st *unix.Stat_t) error {
	return unix.Fstatat(fd, string(name[:len(name)-1]), st, unix.AT_SYMLINK_NOFOLLOW)
}
