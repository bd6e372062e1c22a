package overlay

import (
	"errors"

	"golang.org/x/sys/unix"
)

var errNoUserXattr = errors.New("no user xattrs here")

func setxattr(p, name, v string) error {
	err := unix.Lsetxattr(p, name, []byte(v), 0)
	if errors.Is(err, unix.ENOTSUP) {
		return errNoUserXattr
	}
	return err
}
