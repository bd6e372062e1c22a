// Package clone makes a task's copy of a folder and its base: with reflinks
// (FICLONE) where the file system shares blocks between files, and as a plain
// copy elsewhere. Modes, times and ownership are kept; symbolic links are
// copied as links and never followed; special files are skipped and said.
package clone

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/kulehq/kule/kernel/internal/walk"
)

// Errors a caller can test for.
var (
	ErrChanged   = errors.New("changed while being copied")
	ErrNoReflink = errors.New("the file system cannot share blocks between files (no reflinks)")
)

// smallFile is the size up to which a file is read whole into memory.
const smallFile = 1 << 20

// FileResult is what copying one file learned.
type FileResult struct {
	// Hash is the sha256 of the content: of a small file, read whole anyway;
	// of a large one only when it is racily clean (see racilyClean). It is
	// zero when the file was cloned or moved in the kernel unread.
	Hash    [32]byte
	Content []byte // the whole content when the file was read whole (≤ 1 MiB)
	Stat    walk.Item
}

// CopyFile copies the regular file src to dst (which must not exist), keeping
// mode, ownership (when permitted) and times. With reflink it shares blocks
// (FICLONE) and reads nothing; it fails with ErrNoReflink where the file
// system cannot. Without, it reads a small file whole, hashes it and writes
// it, and moves a large one in the kernel (copyLarge). The returned Stat is dst's metadata after its times were set: the stat cache.
//
// It works on raw descriptors, not os.File: an os.File's set-up costs eight
// fcntl and two epoll_ctl calls per file (the poller cannot take regular
// files anyway), which for 100,000 small files was a fifth of a copy's
// system calls.
func CopyFile(src, dst string, want walk.Item, reflink, keepContent bool) (FileResult, error) {
	return copyFile(src, unix.AT_FDCWD, dst, dst, want, reflink, keepContent)
}

// CopyFileAt is CopyFile writing the new file name in the open directory
// dirfd (a directory of a task's tree opened beneath its root, so no link
// on the way is followed); shown is its path for messages.
func CopyFileAt(src string, dirfd int, name, shown string, want walk.Item, reflink, keepContent bool) (FileResult, error) {
	return copyFile(src, dirfd, name, shown, want, reflink, keepContent)
}

func copyFile(src string, dirfd int, name, dst string, want walk.Item, reflink, keepContent bool) (FileResult, error) {
	var res FileResult
	in, err := unix.Open(src, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return res, &os.PathError{Op: "open", Path: src, Err: err}
	}
	defer unix.Close(in)
	var st unix.Stat_t
	if err := unix.Fstat(in, &st); err != nil {
		return res, &os.PathError{Op: "stat", Path: src, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || (want.Ino != 0 && st.Ino != want.Ino) {
		return res, fmt.Errorf("%s: %w", src, ErrChanged)
	}
	out, err := unix.Openat(dirfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return res, &os.PathError{Op: "open", Path: dst, Err: err}
	}
	ok := false
	defer func() {
		unix.Close(out)
		if !ok {
			_ = unix.Unlinkat(dirfd, name, 0)
		}
	}()
	if reflink {
		if err := unix.IoctlFileClone(out, in); err != nil {
			if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EXDEV) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOTTY) {
				return res, fmt.Errorf("%w: %v", ErrNoReflink, err)
			}
			return res, err
		}
	} else if st.Size <= smallFile {
		buf := make([]byte, st.Size+1)
		n, err := readFull(in, buf)
		if err != nil {
			return res, &os.PathError{Op: "read", Path: src, Err: err}
		}
		if int64(n) != st.Size {
			return res, fmt.Errorf("%s: %w (size %d, read %d)", src, ErrChanged, st.Size, n)
		}
		buf = buf[:n]
		if err := writeAll(out, buf); err != nil {
			return res, &os.PathError{Op: "write", Path: dst, Err: err}
		}
		res.Hash = sha256.Sum256(buf)
		if keepContent {
			res.Content = buf
		}
	} else {
		hash, err := copyLarge(in, out, src, dst, st, racilyClean(&st, now()))
		if err != nil {
			return res, err
		}
		res.Hash = hash
	}
	if isRoot {
		_ = unix.Fchown(out, int(st.Uid), int(st.Gid)) // best effort, as cp -a
	}
	if err := unix.Fchmod(out, st.Mode&0o7777); err != nil {
		return res, &os.PathError{Op: "chmod", Path: dst, Err: err}
	}
	if err := futimens(out, st.Atim, st.Mtim); err != nil {
		return res, &os.PathError{Op: "utimes", Path: dst, Err: err}
	}
	var ost unix.Stat_t
	if err := unix.Fstat(out, &ost); err != nil {
		return res, &os.PathError{Op: "stat", Path: dst, Err: err}
	}
	res.Stat = walk.FromStat(want.Path, &ost)
	ok = true
	return res, nil
}

// largeChunk is how much of a large file one copy_file_range moves before
// the piece is hashed (when it is).
const largeChunk = 8 << 20

// racyWindow is how recently a file may have changed and still be trusted
// by its metadata alone. File times tick coarsely (a jiffy, up to 10 ms): a
// write in the same tick as the stat that recorded a file leaves its times
// as they were, so a file that changed this recently is hashed, as git
// re-reads a "racily clean" entry.
const racyWindow = 2 * time.Second

// clockAhead moves the clock racilyClean is read against on, in tests
// (NowForTest): a file a test has just written is always racily clean.
var clockAhead atomic.Int64

func now() time.Time { return time.Now().Add(time.Duration(clockAhead.Load())) }

// racilyClean reports whether st changed too close to now for its
// metadata to vouch for its content later.
func racilyClean(st *unix.Stat_t, now time.Time) bool {
	return racy(st.Ctim.Nano(), st.Mtim.Nano(), now)
}

func racy(ctime, mtime int64, now time.Time) bool {
	limit := now.Add(-racyWindow).UnixNano()
	return ctime >= limit || mtime >= limit
}

// RacilyClean reports whether the walked entry it changed too recently for
// its metadata alone to vouch for its content: such a file is hashed.
func RacilyClean(it walk.Item) bool { return racy(it.CTime, it.MTime, now()) }

// NowForTest moves the clock RacilyClean and the copy read on by d until
// the test ends: a file a test has just written is otherwise always
// racily clean, and hashed. A test that calls it must not run in parallel
// with tests that expect large files hashed.
func NowForTest(tb interface{ Cleanup(func()) }, d time.Duration) {
	clockAhead.Store(int64(d))
	tb.Cleanup(func() { clockAhead.Store(0) })
}

// copyLarge copies a file larger than smallFile from in to out, and returns
// its sha256 when hash is set. The bytes move inside the kernel
// (copy_file_range: no copy through this process, what cp does); only to be
// hashed is each piece read back from the page cache. A large file is not
// hashed when it is copied: the manifest records its metadata in the
// folder, and a base that needs its content later reads the folder's file
// while that metadata still holds (Base.Open). Where copy_file_range cannot
// copy between the two (an old kernel, two file systems that refuse it), it
// reads and writes. A file that changed while it was copied (its size or
// change time moved) is ErrChanged: the copy would not be of one content.
func copyLarge(in, out int, src, dst string, st unix.Stat_t, hash bool) ([32]byte, error) {
	var sum [32]byte
	h := sha256.New()
	var buf []byte // only for hashing, or for reading and writing
	if hash || !useCopyFileRange {
		buf = make([]byte, largeChunk)
	}
	var n int64
	kernelCopy := useCopyFileRange
	for {
		var k int
		var err error
		if kernelCopy {
			roff, woff := n, n
			k, err = unix.CopyFileRange(in, &roff, out, &woff, largeChunk, 0)
			if err == unix.EINTR {
				continue
			}
			if err != nil && n == 0 && (errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EXDEV) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EINVAL)) {
				kernelCopy = false // nothing copied yet: read and write instead
				if buf == nil {
					buf = make([]byte, largeChunk)
				}
				continue
			}
			if err != nil {
				return sum, &os.PathError{Op: "copy_file_range", Path: dst, Err: err}
			}
			if k > 0 && hash {
				if err := preadFull(in, buf[:k], n); err != nil {
					return sum, &os.PathError{Op: "read", Path: src, Err: err}
				}
			}
		} else {
			if k, err = readFull(in, buf); err != nil {
				return sum, &os.PathError{Op: "read", Path: src, Err: err}
			}
			if k > 0 {
				if err := writeAll(out, buf[:k]); err != nil {
					return sum, &os.PathError{Op: "write", Path: dst, Err: err}
				}
			}
		}
		if k == 0 {
			break
		}
		if hash {
			h.Write(buf[:k])
		}
		n += int64(k)
	}
	if n != st.Size {
		return sum, fmt.Errorf("%s: %w (size %d, read %d)", src, ErrChanged, st.Size, n)
	}
	var after unix.Stat_t
	if err := unix.Fstat(in, &after); err != nil {
		return sum, &os.PathError{Op: "stat", Path: src, Err: err}
	}
	if after.Size != st.Size || after.Ctim != st.Ctim || after.Mtim != st.Mtim {
		return sum, fmt.Errorf("%s: %w (it was written to during the copy)", src, ErrChanged)
	}
	if hash {
		copy(sum[:], h.Sum(nil))
	}
	return sum, nil
}

// useCopyFileRange is false only in tests of the read-and-write path.
var useCopyFileRange = true

// preadFull reads len(b) bytes at off, or fails.
func preadFull(fd int, b []byte, off int64) error {
	for len(b) > 0 {
		k, err := unix.Pread(fd, b, off)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if k == 0 {
			return io.ErrUnexpectedEOF
		}
		b, off = b[k:], off+int64(k)
	}
	return nil
}

// isRoot: ownership is copied only by root (as cp -a does), asked once.
var isRoot = os.Geteuid() == 0

// readFull reads into buf until it is full or the file ends, and returns
// how much it read.
func readFull(fd int, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		k, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, err
		}
		if k == 0 {
			break
		}
		n += k
	}
	return n, nil
}

func writeAll(fd int, b []byte) error {
	for len(b) > 0 {
		k, err := unix.Write(fd, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		b = b[k:]
	}
	return nil
}

// futimens sets fd's access and modification times (utimensat with no
// path: no lookup of the name again).
func futimens(fd int, atime, mtime unix.Timespec) error {
	ts := [2]unix.Timespec{atime, mtime}
	_, _, errno := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(fd), 0, uintptr(unsafe.Pointer(&ts[0])), 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// CopyLink recreates the symbolic link src at dst with the same target and
// times; it never follows it. It returns the target and dst's metadata.
func CopyLink(src, dst string, rel string) (string, walk.Item, error) {
	return CopyLinkAt(src, unix.AT_FDCWD, dst, rel)
}

// CopyLinkAt is CopyLink making the link name in the open directory dirfd.
func CopyLinkAt(src string, dirfd int, name, rel string) (string, walk.Item, error) {
	target, err := os.Readlink(src)
	if err != nil {
		return "", walk.Item{}, err
	}
	if err := unix.Symlinkat(target, dirfd, name); err != nil {
		return "", walk.Item{}, &os.PathError{Op: "symlink", Path: rel, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Lstat(src, &st); err == nil {
		if isRoot {
			_ = unix.Fchownat(dirfd, name, int(st.Uid), int(st.Gid), unix.AT_SYMLINK_NOFOLLOW)
		}
		_ = unix.UtimesNanoAt(dirfd, name, []unix.Timespec{st.Atim, st.Mtim}, unix.AT_SYMLINK_NOFOLLOW)
	}
	var ost unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &ost, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return "", walk.Item{}, &os.PathError{Op: "lstat", Path: rel, Err: err}
	}
	return target, walk.FromStat(rel, &ost), nil
}

// MakeDir creates dst with src's mode and ownership. Its times are set by
// FinishDir once everything below it is in place (adding entries changes a
// directory's mtime).
func MakeDir(dst string, it walk.Item) error { return MakeDirAt(unix.AT_FDCWD, dst, it) }

// MakeDirAt is MakeDir making name in the open directory dirfd.
func MakeDirAt(dirfd int, name string, it walk.Item) error {
	if err := unix.Mkdirat(dirfd, name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
		return &os.PathError{Op: "mkdir", Path: it.Path, Err: err}
	}
	if isRoot {
		_ = unix.Fchownat(dirfd, name, int(it.UID), int(it.GID), unix.AT_SYMLINK_NOFOLLOW)
	}
	return nil
}

// FinishDir sets a copied directory's mode and times to the source's.
func FinishDir(dst string, it walk.Item) error { return FinishDirAt(unix.AT_FDCWD, dst, it) }

// FinishDirAt is FinishDir for the directory name in the open directory
// dirfd; a link there is not followed (it fails).
func FinishDirAt(dirfd int, name string, it walk.Item) error {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: it.Path, Err: err}
	}
	defer unix.Close(fd)
	if err := unix.Fchmod(fd, it.Mode&0o7777); err != nil {
		return &os.PathError{Op: "chmod", Path: it.Path, Err: err}
	}
	mt := unix.NsecToTimespec(it.MTime)
	return futimens(fd, mt, mt)
}
