//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// tree is a detached mount (open_tree clone) taken before anything is
// hidden, and placed back afterwards.
type tree struct {
	fd     int
	target string
	rw     bool
	dev    bool
	isDir  bool
}

// setupMounts builds the sandbox's view of the file system in the helper's
// own mount namespace. Order matters: clone what must stay visible, make
// everything read-only, hide, put the clones back, hide again what lies in
// them, then /dev, /proc and the reveal links.
func setupMounts(p *plan) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("mount namespace: make / private: %w", err)
	}
	var trees []tree
	defer func() {
		for _, t := range trees {
			unix.Close(t.fd)
		}
	}()
	take := func(src, target string, rw, dev bool) error {
		fi, err := os.Stat(src)
		if err != nil {
			return fmt.Errorf("keep %s visible: %w", src, err)
		}
		fd, err := unix.OpenTree(unix.AT_FDCWD, src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
		if err != nil {
			return fmt.Errorf("keep %s visible: open_tree: %w", src, err)
		}
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID}
		switch {
		case dev:
			attr.Attr_clr = unix.MOUNT_ATTR_NODEV
		case rw:
			attr.Attr_set |= unix.MOUNT_ATTR_NODEV
			attr.Attr_clr = unix.MOUNT_ATTR_RDONLY
		default:
			attr.Attr_set |= unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_RDONLY
		}
		if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
			unix.Close(fd)
			return fmt.Errorf("keep %s visible: set its mount flags: %w", src, err)
		}
		trees = append(trees, tree{fd: fd, target: target, rw: rw, dev: dev, isDir: fi.IsDir()})
		return nil
	}
	if err := take(p.Copy, p.Copy, true, false); err != nil {
		return err
	}
	if err := take(p.Home, p.Home, true, false); err != nil {
		return err
	}
	if err := take(p.Cache, p.Cache, true, false); err != nil {
		return err
	}
	if err := take(p.Tmp, "/tmp", true, false); err != nil {
		return err
	}
	for _, w := range p.Writable {
		if err := take(w, w, true, false); err != nil {
			return err
		}
	}
	for _, r := range p.ReadOnly {
		if err := take(r, r, false, false); err != nil {
			return err
		}
	}
	for _, k := range p.Keep {
		if err := take(k, k, false, false); err != nil {
			return err
		}
	}
	var devs []tree
	for _, d := range p.Devices {
		n := len(trees)
		if err := take(filepath.Join("/dev", d), filepath.Join("/dev", d), false, true); err != nil {
			return err
		}
		devs = append(devs, trees[n])
		trees = trees[:n]
	}
	defer func() {
		for _, t := range devs {
			unix.Close(t.fd)
		}
	}()

	// Every mount: read-only, no setuid, no devices.
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE, &unix.MountAttr{
		Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV,
	}); err != nil {
		return fmt.Errorf("make every mount read-only: %w", err)
	}

	var tmpfsHides []int // O_PATH descriptors of the hiding tmpfs roots
	defer func() {
		for _, fd := range tmpfsHides {
			unix.Close(fd)
		}
	}()
	var empty emptyTree
	defer empty.close()
	hide := func(again bool) error {
		for _, d := range p.HideDirs {
			if again && (!underTree(d, trees) || holdsTree(d, trees)) {
				// Only hides inside a tree put back (--hide .env in the
				// copy) are made again; never one that would cover a tree
				// (Kule's home under /tmp, whose copy now sits in the new /tmp).
				continue
			}
			if _, err := os.Lstat(d); err != nil {
				continue // inside an area already hidden
			}
			flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC)
			if !holdsLink(d, p.Links) && !holdsTree(d, trees) {
				// Nothing is made in it (no mount point, no link): a
				// clone of one empty read-only tmpfs, not a file system
				// of its own to make and tear down.
				if err := empty.cover(d); err != nil {
					return fmt.Errorf("hide %s: %w", d, err)
				}
				continue
			}
			if err := unix.Mount("tmpfs", d, "tmpfs", flags, "mode=0755,size=1m,nr_inodes=4096"); err != nil {
				return fmt.Errorf("hide %s: %w", d, err)
			}
			fd, err := unix.Open(d, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				return fmt.Errorf("hide %s: %w", d, err)
			}
			tmpfsHides = append(tmpfsHides, fd)
		}
		for _, f := range p.HideFiles {
			if again && !underTree(f, trees) {
				continue
			}
			if _, err := os.Lstat(f); err != nil {
				continue
			}
			if err := unix.Mount("/dev/null", f, "", unix.MS_BIND, ""); err != nil {
				return fmt.Errorf("hide %s: %w", f, err)
			}
		}
		return nil
	}
	sort.Strings(p.HideDirs)
	if err := hide(false); err != nil {
		return err
	}

	// Put the kept trees back, shallow first.
	sort.SliceStable(trees, func(i, j int) bool { return depth(trees[i].target) < depth(trees[j].target) })
	for _, t := range trees {
		if err := place(t); err != nil {
			return err
		}
	}
	if err := hide(true); err != nil {
		return err
	}

	// A /dev of named devices only.
	if err := unix.Mount("tmpfs", "/dev", "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755,size=64k,nr_inodes=1024"); err != nil {
		return fmt.Errorf("/dev: %w", err)
	}
	for _, t := range devs {
		if err := place(t); err != nil {
			return err
		}
	}
	for _, d := range []string{"/dev/pts", "/dev/shm"} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return fmt.Errorf("/dev: %w", err)
		}
	}
	if err := unix.Mount("devpts", "/dev/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620"); err != nil {
		return fmt.Errorf("/dev/pts: %w", err)
	}
	if err := unix.Mount("tmpfs", "/dev/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777,size=64m"); err != nil {
		return fmt.Errorf("/dev/shm: %w", err)
	}
	for name, target := range map[string]string{
		"ptmx": "pts/ptmx", "fd": "/proc/self/fd", "stdin": "/proc/self/fd/0",
		"stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2",
	} {
		if err := os.Symlink(target, filepath.Join("/dev", name)); err != nil {
			return fmt.Errorf("/dev: %w", err)
		}
	}

	// A /proc of this PID namespace only.
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("/proc: %w", err)
	}

	// The copy sits next to links to the revealed projects.
	for _, l := range p.Links {
		if err := os.MkdirAll(filepath.Dir(l.Path), 0o755); err != nil {
			return fmt.Errorf("reveal link %s: %w", l.Path, err)
		}
		if err := os.Symlink(l.Target, l.Path); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("reveal link %s: %w", l.Path, err)
		}
	}

	// The hiding tmpfs and /dev become read-only too (by descriptor: a
	// hide may since lie beneath another mount).
	ro := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	for _, fd := range tmpfsHides {
		if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, ro); err != nil {
			return fmt.Errorf("make a hiding tmpfs read-only: %w", err)
		}
	}
	if err := unix.MountSetattr(unix.AT_FDCWD, "/dev", 0, ro); err != nil {
		return fmt.Errorf("make /dev read-only: %w", err)
	}
	return nil
}

func place(t tree) error {
	if _, err := os.Lstat(t.target); err != nil {
		if err := os.MkdirAll(filepath.Dir(t.target), 0o755); err != nil {
			return fmt.Errorf("place %s: %w", t.target, err)
		}
		if t.isDir {
			err = os.Mkdir(t.target, 0o755)
		} else {
			var f *os.File
			f, err = os.OpenFile(t.target, os.O_CREATE|os.O_RDONLY, 0o644)
			if err == nil {
				f.Close()
			}
		}
		if err != nil {
			return fmt.Errorf("place %s: %w", t.target, err)
		}
	}
	if err := unix.MoveMount(t.fd, "", unix.AT_FDCWD, t.target, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("place %s: move_mount: %w", t.target, err)
	}
	return nil
}

func underTree(path string, trees []tree) bool {
	for _, t := range trees {
		if within(path, t.target) {
			return true
		}
	}
	return false
}

func holdsTree(dir string, trees []tree) bool {
	for _, t := range trees {
		if t.target != dir && within(t.target, dir) {
			return true
		}
	}
	return false
}

// emptyTree is one empty tmpfs, read-only in its superblock, made once and
// detached; each hide is a clone of it moved into place.
type emptyTree struct{ fd int }

func (e *emptyTree) cover(dir string) error {
	if e.fd <= 0 {
		fs, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
		if err != nil {
			return fmt.Errorf("fsopen: %w", err)
		}
		defer unix.Close(fs)
		for k, v := range map[string]string{"mode": "0755", "size": "4k", "nr_inodes": "16"} {
			if err := unix.FsconfigSetString(fs, k, v); err != nil {
				return fmt.Errorf("fsconfig %s: %w", k, err)
			}
		}
		if err := unix.FsconfigSetFlag(fs, "ro"); err != nil {
			return fmt.Errorf("fsconfig ro: %w", err)
		}
		if err := unix.FsconfigCreate(fs); err != nil {
			return fmt.Errorf("fsconfig create: %w", err)
		}
		fd, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
		if err != nil {
			return fmt.Errorf("fsmount: %w", err)
		}
		e.fd = fd
	}
	c, err := unix.OpenTree(e.fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH)
	if err != nil {
		return fmt.Errorf("open_tree: %w", err)
	}
	defer unix.Close(c)
	if err := unix.MoveMount(c, "", unix.AT_FDCWD, dir, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount: %w", err)
	}
	return nil
}

func (e *emptyTree) close() {
	if e.fd > 0 {
		unix.Close(e.fd)
	}
}

// holdsLink reports whether a reveal link is made inside dir.
func holdsLink(dir string, links []link) bool {
	for _, l := range links {
		if within(l.Path, dir) {
			return true
		}
	}
	return false
}

func depth(p string) int { return strings.Count(p, "/") }
