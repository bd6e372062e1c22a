package overlay

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Available says whether a sandbox on this machine can mount the copy as
// an overlayfs, and if not why: the kernel must have overlayfs, let a user
// namespace mount one (Linux 5.11) and take a lower layer's path whole
// (lowerdir+, Linux 6.8, so that no character of a folder's name is read
// as a separator). It reads /proc and uname and mounts nothing: a sandbox
// that still cannot mount one refuses its command, and says so.
func Available() error {
	b, err := os.ReadFile("/proc/filesystems")
	if err != nil {
		return fmt.Errorf("cannot tell whether this kernel has overlayfs: %w", err)
	}
	has := false
	for _, l := range bytes.Split(b, []byte("\n")) {
		if f := bytes.Fields(l); len(f) > 0 && string(f[len(f)-1]) == "overlay" {
			has = true
		}
	}
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return fmt.Errorf("cannot read the kernel's version: %w", err)
	}
	rel := unix.ByteSliceToString(u.Release[:])
	major, minor := kernelVersion(rel)
	switch {
	case major < 6 || (major == 6 && minor < 8):
		return fmt.Errorf("the kernel (Linux %s) is older than 6.8, the first to let a sandbox mount an overlay over any folder's path", rel)
	case !has:
		// overlay is often a module, loaded at its first mount.
		if _, err := os.Stat("/sys/module/overlay"); err != nil && !moduleFile(rel) {
			return fmt.Errorf("this kernel (Linux %s) has no overlayfs", rel)
		}
	}
	return nil
}

func kernelVersion(rel string) (major, minor int) {
	parts := strings.SplitN(rel, ".", 3)
	if len(parts) < 2 {
		return 0, 0
	}
	return leadingNumber(parts[0]), leadingNumber(parts[1])
}

// leadingNumber is the number s starts with (its leading digits), 0 for
// none or one too large to be a version.
func leadingNumber(s string) int {
	if i := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		s = s[:i]
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// moduleFile reports whether the running kernel ships overlay as a module.
func moduleFile(rel string) bool {
	for _, p := range []string{"/lib/modules/" + rel + "/kernel/fs/overlayfs/overlay.ko", "/lib/modules/" + rel + "/kernel/fs/overlayfs/overlay.ko.xz", "/lib/modules/" + rel + "/kernel/fs/overlayfs/overlay.ko.zst"} {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}
