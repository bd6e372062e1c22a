// Package walk lists a directory tree with its metadata, in parallel, without
// ever following a symbolic link or reading a file's content. It is the one
// walk every part of Kule uses: making a copy, finding effects, checking the
// folder before a commit.
package walk

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"sort"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/kulehq/kule/kernel/effects"
	"github.com/kulehq/kule/kernel/relpath"
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
	// returned.
	Skip func(rel string, typ effects.EntryType) bool
}

// Result is a walked tree: Items sorted by path, and the problems met.
type Result struct {
	Items    []Item
	Problems []Problem
}

// Walk lists root. root itself must be a directory (a link to one is
// refused: Kule never follows links); it is not in the result.
func Walk(root string, opt Options) (*Result, error) {
	var st unix.Stat_t
	if err := unix.Lstat(root, &st); err != nil {
		return nil, fmt.Errorf("walk %s: %w", root, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil, fmt.Errorf("walk %s: %w", root, ErrNotDir)
	}
	workers := opt.Workers
	if workers <= 0 {
		workers = min(runtime.GOMAXPROCS(0), 4)
	}
	w := &walker{root: root, skip: opt.Skip, queue: make(chan string, 1024)}
	results := make([]*Result, workers)
	var wg sync.WaitGroup
	w.pending.Add(1)
	w.queue <- ""
	go func() { w.pending.Wait(); close(w.queue) }()
	for i := range workers {
		results[i] = &Result{}
		wg.Add(1)
		go func(r *Result) {
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
		out.Items = append(out.Items, r.Items...)
		out.Problems = append(out.Problems, r.Problems...)
	}
	sort.Slice(out.Items, func(i, j int) bool { return out.Items[i].Path < out.Items[j].Path })
	sort.Slice(out.Problems, func(i, j int) bool { return out.Problems[i].Path < out.Problems[j].Path })
	return out, nil
}

type walker struct {
	root    string
	skip    func(string, effects.EntryType) bool
	queue   chan string
	pending sync.WaitGroup
}

// enqueue hands a directory to the workers. The queue is bounded, and a worker
// must never block on it (all workers could be producers), so when it is full
// the directory is listed right here instead.
func (w *walker) enqueue(dir string, r *Result) {
	w.pending.Add(1)
	select {
	case w.queue <- dir:
	default:
		w.listDir(dir, r)
		w.pending.Done()
	}
}

func (w *walker) listDir(dir string, r *Result) {
	abs := w.root
	if dir != "" {
		abs = w.root + "/" + dir
	}
	fd, err := unix.Open(abs, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		kind := Unreadable
		if errors.Is(err, unix.ENOENT) {
			kind = Vanished
		}
		r.Problems = append(r.Problems, Problem{Path: dir, Kind: kind, Err: err})
		return
	}
	f := os.NewFile(uintptr(fd), abs)
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		r.Problems = append(r.Problems, Problem{Path: dir, Kind: Unreadable, Err: err})
		// What was read is still listed below.
	}
	for _, de := range ents {
		name := de.Name()
		rel := relpath.Join(dir, name)
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			kind := Unreadable
			if errors.Is(err, unix.ENOENT) {
				kind = Vanished
			}
			r.Problems = append(r.Problems, Problem{Path: rel, Kind: kind, Err: err})
			continue
		}
		it := FromStat(rel, &st)
		if it.Type == effects.TypeNone {
			r.Problems = append(r.Problems, Problem{Path: rel, Kind: Special, Err: fmt.Errorf("%s", describeSpecial(st.Mode))})
			continue
		}
		if w.skip != nil && w.skip(rel, it.Type) {
			continue
		}
		r.Items = append(r.Items, it)
		if it.Type == effects.TypeDir {
			w.enqueue(rel, r)
		}
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
