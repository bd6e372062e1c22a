package overlay

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/kulehq/kule/kernel/internal/beneath"
	"github.com/kulehq/kule/kernel/internal/relpath"
)

// Errors of Fold.
var (
	// ErrRedirect is a redirected directory in the upper layer. Kule mounts
	// its overlays without redirect_dir (an unprivileged mount has none), so
	// one is a layer Kule did not make; nothing below it is folded.
	ErrRedirect = errors.New("overlay: a redirected directory in the upper layer, which Kule's mounts never make")
	// ErrMetacopy is a metadata-only copy-up, which Kule's mounts never make
	// either: its data would still be the lower layer's.
	ErrMetacopy = errors.New("overlay: a metadata-only copy in the upper layer, which Kule's mounts never make")
)

// Fold moves what the upper layer at upper holds into lower, the layer it
// was mounted over, so that lower alone holds what the overlay showed: a
// whiteout removes the lower entry, an opaque directory replaces the lower
// one, a file, link or other entry is renamed over the lower one, and a
// directory copied up merges with the lower directory and takes the upper
// one's mode and times. What is folded leaves the upper layer, so an upper
// layer that is empty again is one folded whole. It returns the paths
// folded, in the order they were.
//
// Fold is for a layer no overlay has mounted any longer: the command that
// wrote it has ended. Both trees are opened beneath their roots and no link
// in either is followed (a link is an entry, moved or removed as one): the
// upper layer is what a command wrote, and lower is the task's copy.
//
// A fold that stops half-way (an error, or the process killed) is resumed
// by calling Fold again: every step either took place, and its upper entry
// is gone, or did not. An opaque directory loses its opaque mark only once
// the lower directory it replaces has been emptied, so a second fold merges
// into what the first one moved there rather than removing it again.
func Fold(upper, lower string) ([]string, error) {
	up, err := beneath.Open(upper)
	if err != nil {
		return nil, fmt.Errorf("overlay: fold: %w", err)
	}
	defer up.Close()
	lo, err := beneath.Open(lower)
	if err != nil {
		return nil, fmt.Errorf("overlay: fold: %w", err)
	}
	defer lo.Close()
	// The upper layer's root is the merged root: a command's chmod of
	// its copy's root lands there. It is made searchable and writable for
	// the fold (a person's Kule need not be root) and its mode given to
	// the copy's root after.
	var root unix.Stat_t
	if err := unix.Fstat(up.Fd(), &root); err != nil {
		return nil, fmt.Errorf("overlay: fold: %w", err)
	}
	if root.Mode&0o700 != 0o700 {
		if err := unix.Fchmod(up.Fd(), root.Mode&0o7777|0o700); err != nil {
			return nil, fmt.Errorf("overlay: fold: %w", err)
		}
	}
	f := &folder{up: up, lo: lo}
	if err := f.dir(""); err != nil {
		return f.done, err
	}
	var lroot unix.Stat_t
	if err := unix.Fstat(lo.Fd(), &lroot); err != nil {
		return f.done, fmt.Errorf("overlay: fold: %w", err)
	}
	if lroot.Mode&0o7777 != root.Mode&0o7777 {
		if err := unix.Fchmod(lo.Fd(), root.Mode&0o7777); err != nil {
			return f.done, fmt.Errorf("overlay: fold: %w", err)
		}
		if err := unix.Fchmod(up.Fd(), root.Mode&0o7777|0o700); err != nil {
			return f.done, fmt.Errorf("overlay: fold: %w", err)
		}
	}
	return f.done, nil
}

// foldTypeGuard replaces whatever lower holds where the upper layer holds a
// directory and lower no directory of its own (a link among them); only a
// test turns it off, with beneath's guard, to show the link followed.
var foldTypeGuard = true

// foldHook, set only by tests, runs after each path is folded; an error
// stops the fold there, as a crash would.
var foldHook func(rel string) error

type folder struct {
	up, lo *beneath.Root
	done   []string
}

// dir folds every entry of the upper directory rel.
func (f *folder) dir(rel string) error {
	ufd, err := f.up.OpenDir(rel)
	if err != nil {
		return fmt.Errorf("overlay: fold: %w", err)
	}
	defer unix.Close(ufd)
	names, err := beneath.ReadNames(ufd)
	if err != nil {
		return fmt.Errorf("overlay: fold: read %s: %w", f.up.Join(rel), err)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := f.entry(ufd, rel, name); err != nil {
			return err
		}
	}
	return nil
}

func (f *folder) entry(ufd int, dir, name string) error {
	rel := relpath.Join(dir, name)
	var st unix.Stat_t
	if err := unix.Fstatat(ufd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("overlay: fold: lstat %s: %w", f.up.Join(rel), err)
	}
	at := fdPath(ufd, name)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFCHR:
		if st.Rdev == 0 {
			return f.whiteout(ufd, name, rel)
		}
	case unix.S_IFREG:
		if st.Size == 0 {
			if _, ok, err := xattr(at, "whiteout"); err != nil {
				return err
			} else if ok {
				return f.whiteout(ufd, name, rel)
			}
		}
		if _, ok, err := xattr(at, "metacopy"); err != nil {
			return err
		} else if ok {
			return fmt.Errorf("%w: %s", ErrMetacopy, f.up.Join(rel))
		}
	case unix.S_IFDIR:
		return f.mergeDir(ufd, name, rel, &st)
	}
	// A file, a link or another entry: it replaces whatever lower holds.
	lfd, lname, err := f.lo.Parent(rel)
	if err != nil {
		return fmt.Errorf("overlay: fold: %w", err)
	}
	defer unix.Close(lfd)
	if ok, isDir, err := beneath.ExistsAt(lfd, lname); err != nil {
		return fmt.Errorf("overlay: fold: %s: %w", f.lo.Join(rel), err)
	} else if ok && isDir {
		if err := beneath.RemoveAllAt(lfd, lname); err != nil {
			return fmt.Errorf("overlay: fold: remove %s: %w", f.lo.Join(rel), err)
		}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFLNK { // a link holds no xattrs of its own to strip
		if err := stripXattrs(at); err != nil {
			return err
		}
	}
	if err := unix.Renameat(ufd, name, lfd, lname); err != nil {
		return fmt.Errorf("overlay: fold: move %s to %s: %w", f.up.Join(rel), f.lo.Join(rel), err)
	}
	return f.folded(rel)
}

// whiteout removes the lower entry at rel, then the whiteout itself.
func (f *folder) whiteout(ufd int, name, rel string) error {
	if err := f.lo.RemoveAll(rel); err != nil {
		return fmt.Errorf("overlay: fold: %w", err)
	}
	if err := unix.Unlinkat(ufd, name, 0); err != nil {
		return fmt.Errorf("overlay: fold: remove the whiteout %s: %w", f.up.Join(rel), err)
	}
	return f.folded(rel)
}

// mergeDir folds the upper directory rel into the lower one, making that
// first where lower holds none (or, for an opaque directory, anew).
func (f *folder) mergeDir(ufd int, name, rel string, st *unix.Stat_t) error {
	at := fdPath(ufd, name)
	if _, ok, err := xattr(at, "redirect"); err != nil {
		return err
	} else if ok {
		return fmt.Errorf("%w: %s", ErrRedirect, f.up.Join(rel))
	}
	v, opaque, err := xattr(at, "opaque")
	if err != nil {
		return err
	}
	opaque = opaque && v == "y"
	lfd, lname, err := f.lo.Parent(rel)
	if err != nil {
		return fmt.Errorf("overlay: fold: %w", err)
	}
	ok, isDir, err := beneath.ExistsAt(lfd, lname)
	if !foldTypeGuard {
		isDir = ok // as a fold that took stat's word (following a link) would
	}
	if err == nil && ok && (opaque || !isDir) {
		// Replaced: nothing of what lower held there shows through.
		if err = beneath.RemoveAllAt(lfd, lname); err == nil {
			ok = false
		}
	}
	if err == nil && !ok {
		if err = unix.Mkdirat(lfd, lname, 0o700); errors.Is(err, unix.EEXIST) {
			err = nil
		}
	}
	unix.Close(lfd)
	if err != nil {
		return fmt.Errorf("overlay: fold: %s: %w", f.lo.Join(rel), err)
	}
	if opaque { // lower's directory is fresh and empty: a resumed fold merges into it
		for _, pre := range prefixes {
			if err := unix.Lremovexattr(at, pre+"opaque"); err != nil && !errors.Is(err, unix.ENODATA) && !errors.Is(err, unix.ENOTSUP) && !errors.Is(err, unix.EPERM) {
				return fmt.Errorf("overlay: fold: %s: %w", f.up.Join(rel), err)
			}
		}
	}
	if st.Mode&0o700 != 0o700 {
		// A directory the command made unreadable or read-only: the fold
		// must list it and move its entries out (its mode goes to the copy's
		// directory below, and it is removed after).
		if err := f.up.Chmod(rel, os.FileMode(st.Mode&0o777|0o700)); err != nil {
			return fmt.Errorf("overlay: fold: %w", err)
		}
	}
	if err := f.dir(rel); err != nil {
		return err
	}
	if err := f.lo.Chmod(rel, os.FileMode(st.Mode&0o777)|unixSpecial(st.Mode)); err != nil {
		return fmt.Errorf("overlay: fold: %w", err)
	}
	if err := f.lo.Utimes(rel, st.Atim, st.Mtim); err != nil {
		return fmt.Errorf("overlay: fold: %w", err)
	}
	if err := unix.Unlinkat(ufd, name, unix.AT_REMOVEDIR); err != nil {
		return fmt.Errorf("overlay: fold: remove %s: %w", f.up.Join(rel), err)
	}
	return f.folded(rel)
}

func (f *folder) folded(rel string) error {
	f.done = append(f.done, rel)
	if foldHook != nil {
		return foldHook(rel)
	}
	return nil
}

func unixSpecial(m uint32) os.FileMode {
	var fm os.FileMode
	if m&unix.S_ISUID != 0 {
		fm |= os.ModeSetuid
	}
	if m&unix.S_ISGID != 0 {
		fm |= os.ModeSetgid
	}
	if m&unix.S_ISVTX != 0 {
		fm |= os.ModeSticky
	}
	return fm
}

// fdPath names name inside the open directory fd without following a link
// at name: the L-variants of the xattr calls then act on name itself.
func fdPath(fd int, name string) string {
	return "/proc/self/fd/" + strconv.Itoa(fd) + "/" + name
}

// stripXattrs removes overlay's own xattrs (an origin, an impure mark) from
// an entry about to leave the upper layer: in the copy they mean nothing,
// and the next overlay over the copy would read them as its lower layer's.
func stripXattrs(at string) error {
	size, err := unix.Llistxattr(at, nil)
	if err != nil || size == 0 {
		if errors.Is(err, unix.ENOTSUP) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("overlay: fold: list the xattrs of %s: %w", at, err)
		}
		return nil
	}
	buf := make([]byte, size)
	n, err := unix.Llistxattr(at, buf)
	if err != nil {
		return fmt.Errorf("overlay: fold: list the xattrs of %s: %w", at, err)
	}
	for _, name := range strings.Split(string(buf[:n]), "\x00") {
		for _, pre := range prefixes {
			if !strings.HasPrefix(name, pre) {
				continue
			}
			if err := unix.Lremovexattr(at, name); err != nil && !errors.Is(err, unix.ENODATA) && !errors.Is(err, unix.EPERM) {
				return fmt.Errorf("overlay: fold: remove %s of %s: %w", name, at, err)
			}
		}
	}
	return nil
}
