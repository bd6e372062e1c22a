// Package walk lists a directory tree with its metadata, in parallel, without
// ever following a symbolic link or reading a file's content. It is the one
// walk every part of Kule uses: making a copy, finding effects, checking the
// folder before a commit.
package walk

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/kulehq/kule/kernel/internal/beneath"
	"github.com/kulehq/kule/kernel/internal/bigalloc"
	"github.com/kulehq/kule/kernel/internal/effects"
)

// Errors a caller can test for.
var (
	ErrNotDir = errors.New("not a folder")
)

// Item is one entry of the tree and its metadata.
type Item struct {
	Path  string // relative to the root, slash-separated
	Type  effects.EntryType
	Mode  uint32 // permission bits incl. setuid/setgid/sticky (st_mode & 07777)
	Size  int64
	MTime int64 // nanoseconds since the epoch
	CTime int64
	Ino   uint64
	Dev   uint64
	UID   uint32
	GID   uint32
}

// ProblemKind says why an entry was passed over.
type ProblemKind string

// Problem kinds.
const (
	Unreadable ProblemKind = "unreadable" // a directory that could not be listed or an entry not stat-able
	Vanished   ProblemKind = "vanished"   // gone between listing and looking at it
	Special    ProblemKind = "special"    // a device, socket or fifo: never copied
)

// Problem is an entry the walk passed over, and why. Problems are listed,
// never fatal: one unreadable directory does not hide the rest of the tree.
type Problem struct {
	Path string
	Kind ProblemKind
	Err  error
}

func (p Problem) String() string {
	if p.Err != nil {
		return fmt.Sprintf("%s: %s (%v)", effects.Quote(p.Path), p.Kind, p.Err)
	}
	return fmt.Sprintf("%s: %s", effects.Quote(p.Path), p.Kind)
}

// Options tune a walk.
type Options struct {
	// Workers is the number of directories listed at once; 0 means
	// min(GOMAXPROCS, 4) (two workers are ~1.7× faster than one here).
	Workers int
	// Skip, if set, is asked for each entry below the root; a skipped
	// directory is not descended into and neither it nor its entries are
	// returned. With Visit set, rel is valid only during the call.
	Skip func(rel string, typ effects.EntryType) bool
	// Visit, if set, is given each directory's entries (dir "" is the
	// root) as soon as the directory is listed, sorted by name, and the
	// Result holds no Items: a caller that compares a directory at a time
	// then never holds the whole tree. Visit is called from the workers,
	// several at once, in no particular order of directories. The items,
	// and the strings of their paths, are reused once it returns: a Visit
	// that keeps one keeps a copy, its Path cloned (strings.Clone).
	Visit func(dir string, items []Item)
}

// Result is a walked tree: Items sorted by path, and the problems met.
type Result struct {
	Items    []Item
	Problems []Problem
}

// Walk lists root. root itself must be a directory (a link to one is
// refused: Kule never follows links); it is not in the result. Each
// directory below it is opened beneath it, following no link on the way:
// a directory a command swaps for a link while the walk goes on is a
// problem, never a way out of the tree.
func Walk(root string, opt Options) (*Result, error) {
	var st unix.Stat_t
	if err := unix.Lstat(root, &st); err != nil {
		return nil, fmt.Errorf("walk %s: %w", root, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil, fmt.Errorf("walk %s: %w", root, ErrNotDir)
	}
	fd, err := beneath.OpenRootFd(root)
	if err != nil {
		return nil, fmt.Errorf("walk %s: %w", root, err)
	}
	defer unix.Close(fd)
	return walkFd(fd, root, opt)
}

// WalkBeneath lists the directory sub of root, as Walk lists root, with
// sub opened beneath root: a link in any element of sub is refused
// (beneath.ErrLink), where Walk of the joined path would follow it. root is
// Kule's own (a task's copy); sub may come from what a command wrote.
func WalkBeneath(root, sub string, opt Options) (*Result, error) {
	rfd, err := beneath.OpenRootFd(root)
	if err != nil {
		return nil, fmt.Errorf("walk %s: %w", root, err)
	}
	fd, err := beneath.OpenDirAt(rfd, sub)
	unix.Close(rfd)
	if err != nil {
		return nil, fmt.Errorf("walk %s/%s: %w", root, sub, err)
	}
	defer unix.Close(fd)
	return walkFd(fd, root+"/"+sub, opt)
}

func walkFd(rootFd int, root string, opt Options) (*Result, error) {
	workers := opt.Workers
	if workers <= 0 {
		workers = min(runtime.GOMAXPROCS(0), 4)
	}
	w := &walker{root: root, rootFd: rootFd, skip: opt.Skip, visit: opt.Visit, queue: make(chan string, 1024)}
	results := make([]*worker, workers)
	var wg sync.WaitGroup
	w.pending.Add(1)
	w.queue <- ""
	go func() { w.pending.Wait(); close(w.queue) }()
	for i := range workers {
		results[i] = &worker{buf: make([]byte, 32<<10)}
		wg.Add(1)
		go func(r *worker) {
			defer wg.Done()
			for dir := range w.queue {
				w.listDir(dir, r)
				w.pending.Done()
			}
		}(results[i])
	}
	wg.Wait()
	out := &Result{}
	for _, r := range results {
		out.Problems = append(out.Problems, r.problems...)
	}
	sort.Slice(out.Problems, func(i, j int) bool { return out.Problems[i].Path < out.Problems[j].Path })
	if w.visit != nil {
		return out, nil
	}
	// Each directory was listed sorted by name; put the listings together
	// in path order (a plain byte order of whole paths, as the manifest
	// keeps it) without sorting all the paths at once.
	byDir := make(map[string]*listing)
	n := 0
	for _, r := range results {
		for i := range r.listings {
			l := &r.listings[i]
			byDir[l.dir] = l
			n += len(l.items)
		}
	}
	items := make([]Item, 0, n)
	bigalloc.Advise(items)
	out.Items = assemble("", byDir, items)
	return out, nil
}

// assemble appends dir's listing and, in their place, its subdirectories'
// listings. A subdirectory "a" is followed by its own entry and then, where
// "a/" sorts among its siblings, its subtree: "a", "a-b", "a/x", "a0".
func assemble(dir string, byDir map[string]*listing, out []Item) []Item {
	l := byDir[dir]
	if l == nil {
		return out
	}
	subs := 0
	for _, i := range l.order {
		if l.items[i].Type == effects.TypeDir && byDir[l.items[i].Path] != nil {
			subs++
		}
	}
	if subs == 0 {
		for _, i := range l.order {
			out = append(out, l.items[i])
		}
		return out
	}
	type key struct {
		name string
		i    int32
		sub  bool
	}
	keys := make([]key, 0, len(l.items)+subs)
	for _, i := range l.order {
		it := &l.items[i]
		name := it.Path[len(it.Path)-nameLen(it.Path):]
		keys = append(keys, key{name, i, false})
		if it.Type == effects.TypeDir && byDir[it.Path] != nil {
			keys = append(keys, key{name + "/", i, true})
		}
	}
	slices.SortFunc(keys, func(a, b key) int { return strings.Compare(a.name, b.name) })
	for _, k := range keys {
		if k.sub {
			out = assemble(l.items[k.i].Path, byDir, out)
		} else {
			out = append(out, l.items[k.i])
		}
	}
	return out
}

func nameLen(rel string) int { return len(rel) - strings.LastIndexByte(rel, '/') - 1 }

// countDirents counts the records in a getdents buffer.
func countDirents(b []byte) int {
	n := 0
	for len(b) >= 19 {
		reclen := int(binary.NativeEndian.Uint16(b[16:18]))
		if reclen < 19 || reclen > len(b) {
			break
		}
		b = b[reclen:]
		n++
	}
	return n
}

// byName orders a directory's items by name: the order of their indexes,
// so that sorting moves four bytes an item, not a whole Item.
func byName(items []Item) []int32 {
	idx := make([]int32, len(items))
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortFunc(idx, func(a, b int32) int { return strings.Compare(items[a].Path, items[b].Path) })
	return idx
}

type walker struct {
	root    string // for messages
	rootFd  int    // the directory walked: every listing is opened beneath it
	skip    func(string, effects.EntryType) bool
	visit   func(string, []Item)
	queue   chan string
	pending sync.WaitGroup
}

// worker is what one goroutine of the walk found, and its buffer.
type worker struct {
	buf      []byte
	listings []listing
	problems []Problem
	arena    []Item // the directories' items are cut from here (see grow)
	// With Visit, a directory's items and the bytes of their paths live
	// here, reused from one directory to the next: nothing of a listing
	// outlives its Visit, so a walk of 100,000 entries allocates only for
	// its directories.
	visitItems []Item
	names      []byte
}

// grow returns items with room for n more, cut from the worker's arena
// rather than allocated a directory at a time: 1,000 directories of 100
// files were 8.8 MB in 9 KB pieces, each a first touch of fresh pages. The
// arena's blocks double up to 64K items (5.8 MB, under huge pages), so a
// small walk stays small. A listing is never appended to once it is done,
// so the slices cut from one block never overlap.
func (r *worker) grow(items []Item, n int) []Item {
	if cap(items)-len(items) >= n {
		return items
	}
	need := len(items) + n
	if cap(r.arena)-len(r.arena) < need {
		size := min(max(2*cap(r.arena), 1024), 64<<10)
		r.arena = make([]Item, 0, max(size, need))
		bigalloc.Advise(r.arena)
	}
	at := len(r.arena)
	r.arena = r.arena[:at+need]
	return append(r.arena[at:at:at+need], items...)
}

// listing is one directory's entries; order lists them by name.
type listing struct {
	dir   string
	items []Item
	order []int32
}

// enqueue hands a directory to the workers. The queue is bounded, and a worker
// must never block on it (all workers could be producers), so when it is full
// the directory is listed right here instead.
func (w *walker) enqueue(dir string, r *worker) {
	w.pending.Add(1)
	select {
	case w.queue <- dir:
	default:
		w.listDir(dir, r)
		w.pending.Done()
	}
}

func (w *walker) listDir(dir string, r *worker) {
	abs := w.root
	if dir != "" {
		abs = w.root + "/" + dir
	}
	fd, err := beneath.OpenDirAt(w.rootFd, dir)
	if err != nil {
		kind := Unreadable
		if errors.Is(err, unix.ENOENT) {
			kind = Vanished
		}
		r.problems = append(r.problems, Problem{Path: dir, Kind: kind, Err: err})
		return
	}
	defer unix.Close(fd)
	prefix := ""
	if dir != "" {
		prefix = dir + "/"
	}
	var items []Item
	var subdirs []string
	visiting := w.visit != nil
	if visiting {
		items, r.names = r.visitItems[:0], r.names[:0]
	}
	for {
		n, err := unix.Getdents(fd, r.buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			r.problems = append(r.problems, Problem{Path: dir, Kind: Unreadable, Err: &os.PathError{Op: "readdirent", Path: abs, Err: err}})
			break // what was read is still listed
		}
		if n <= 0 {
			break
		}
		// linux_dirent64: ino u64, off s64, reclen u16, type u8, name NUL-terminated.
		count := countDirents(r.buf[:n])
		if visiting {
			items = slices.Grow(items, count)
			r.names = slices.Grow(r.names, n+count*len(prefix)) // every path of this read
		} else {
			items = r.grow(items, count) // no growing garbage
		}
		for b := r.buf[:n]; len(b) >= 19; {
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				break
			}
			name := b[19:reclen]
			i := bytes.IndexByte(name, 0)
			if i < 0 {
				break // the kernel always ends a name with NUL
			}
			cname := name[:i+1] // with its NUL, for the system call
			name = name[:i]
			b = b[reclen:]
			if len(name) == 0 || (name[0] == '.' && (len(name) == 1 || (len(name) == 2 && name[1] == '.'))) {
				continue
			}
			var rel string
			if visiting {
				// Cut from r.names (grown above for the whole read): were it
				// to move, the paths already cut would keep the old bytes.
				at := len(r.names)
				r.names = append(append(r.names, prefix...), name...)
				rel = unsafe.String(&r.names[at], len(r.names)-at)
			} else {
				rel = prefix + string(name)
			}
			var st unix.Stat_t
			if err := fstatat(fd, cname, &st); err != nil {
				kind := Unreadable
				if errors.Is(err, unix.ENOENT) {
					kind = Vanished
				}
				r.problems = append(r.problems, Problem{Path: strings.Clone(rel), Kind: kind, Err: err})
				continue
			}
			it := FromStat(rel, &st)
			if it.Type == effects.TypeNone {
				r.problems = append(r.problems, Problem{Path: strings.Clone(rel), Kind: Special, Err: fmt.Errorf("%s", describeSpecial(st.Mode))})
				continue
			}
			if w.skip != nil && w.skip(rel, it.Type) {
				continue
			}
			items = append(items, it)
			if it.Type == effects.TypeDir {
				if visiting {
					rel = strings.Clone(rel) // it outlives this listing
				}
				subdirs = append(subdirs, rel)
			}
		}
	}
	if visiting {
		slices.SortFunc(items, func(a, b Item) int { return strings.Compare(a.Path, b.Path) })
		w.visit(dir, items)
		r.visitItems = items[:0]
	} else {
		r.listings = append(r.listings, listing{dir: dir, items: items, order: byName(items)})
	}
	for _, sd := range subdirs {
		w.enqueue(sd, r)
	}
}

// FromStat turns a stat result into an Item; Type is TypeNone for special files.
func FromStat(rel string, st *unix.Stat_t) Item {
	it := Item{
		Path:  rel,
		Mode:  st.Mode & 0o7777,
		Size:  st.Size,
		MTime: st.Mtim.Nano(),
		CTime: st.Ctim.Nano(),
		Ino:   st.Ino,
		Dev:   uint64(st.Dev),
		UID:   st.Uid,
		GID:   st.Gid,
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		it.Type = effects.TypeFile
	case unix.S_IFDIR:
		it.Type = effects.TypeDir
	case unix.S_IFLNK:
		it.Type = effects.TypeLink
	}
	return it
}

// Lstat returns the Item for one path below root without following links.
// A missing path is an Item of TypeNone and no error.
func Lstat(root, rel string) (Item, error) {
	var st unix.Stat_t
	err := unix.Lstat(root+"/"+rel, &st)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return Item{Path: rel}, nil
	}
	if err != nil {
		return Item{}, err
	}
	return FromStat(rel, &st), nil
}

// FileMode turns an Item's type and bits into an fs.FileMode.
func (it Item) FileMode() fs.FileMode {
	m := fs.FileMode(it.Mode & 0o777)
	if it.Mode&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if it.Mode&unix.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if it.Mode&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	switch it.Type {
	case effects.TypeDir:
		m |= fs.ModeDir
	case effects.TypeLink:
		m |= fs.ModeSymlink
	}
	return m
}

func describeSpecial(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return "a fifo, not copied"
	case unix.S_IFSOCK:
		return "a socket, not copied"
	case unix.S_IFCHR, unix.S_IFBLK:
		return "a device, not copied"
	}
	return "a special file, not copied"
}
