package clone

import (
	"bufio"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/kulehq/kule/kernel/internal/beneath"
	"github.com/kulehq/kule/kernel/internal/effects"
	"github.com/kulehq/kule/kernel/internal/manifest"
	"github.com/kulehq/kule/kernel/internal/relpath"
	"github.com/kulehq/kule/kernel/internal/walk"
)

// Backend names.
const (
	Reflink = "reflink" // copy and base are both clones of the folder
	Copy    = "copy"    // a plain copy; base keeps the manifest and small files
	// Overlay's copy and base are made as Copy's are; each command then
	// runs over an overlayfs whose lower layer is the copy and whose upper
	// layer takes its writes, folded back into the copy when it ends
	// (kernel/internal/overlay).
	Overlay = "overlay"
)

// Options tune Tree.
type Options struct {
	// Backend is Reflink, Copy, Overlay, or "" to use reflinks where the
	// file system has them and a plain copy elsewhere (or Overlay, see
	// OverlayFrom).
	Backend string
	// OverlayFrom, with Backend "", gives a folder of at least this many
	// entries that has no reflinks the overlay backend rather than a plain
	// copy (0: never). The caller knows whether overlays can be had.
	OverlayFrom int
	// Workers copying files at once; 0 means min(GOMAXPROCS*2, 8).
	Workers int
	// Progress, when set, counts the work as it is done, for a caller that
	// shows it (a progress bar) from another goroutine.
	Progress *Progress
}

// Progress is a Tree's work: its totals, known once the folder is walked,
// and what is done so far. Its fields are read while Tree runs.
type Progress struct {
	TotalFiles, TotalBytes atomic.Int64
	Files, Bytes           atomic.Int64
}

// heavyDirs are directories whose files a plain-copy base does not keep: they
// are rebuilt by tools, rarely merged, and large.
var heavyDirs = map[string]bool{
	".git": true, "node_modules": true, "target": true, "vendor": true, "dist": true, "build": true,
	".venv": true, "venv": true, "__pycache__": true, ".gradle": true, ".cache": true, ".next": true,
}

// KeptInBase reports whether a plain-copy base keeps a file's content: files up
// to 1 MiB outside heavy directories.
func KeptInBase(rel string, size int64) bool {
	if size > smallFile {
		return false
	}
	for _, el := range strings.Split(rel, "/") {
		if heavyDirs[el] {
			return false
		}
	}
	return true
}

// jobBytes ends a copy job of one directory's files: past it, the rest go
// to another worker.
const jobBytes = 16 << 20

// job is items[from:to] of a walk: entries of one directory.
type job struct{ from, to int }

// splitJobs cuts a walk's items into copy jobs. Items are in path order,
// so a directory's files are mostly in one run (a subdirectory's entries
// sort among them and split it in two, which only costs a job more). A job
// holds at most 512 entries, and ends once it holds jobBytes, so that the
// large files of one directory (a folder of videos) are copied side by
// side, not one after another by one worker.
func splitJobs(items []walk.Item) []job {
	var out []job
	for from := 0; from < len(items); {
		dir := relpath.Dir(items[from].Path)
		to, bytes := from+1, items[from].Size
		for to < len(items) && to-from < 512 && bytes < jobBytes && relpath.Dir(items[to].Path) == dir {
			bytes += items[to].Size
			to++
		}
		out = append(out, job{from, to})
		from = to
	}
	return out
}

// Result is a cloned tree.
type Result struct {
	Manifest *manifest.Manifest
	Problems []walk.Problem // entries passed over (special files, unreadable ones)
}

// Tree copies folder to copyDir (which must not exist) and makes the base in
// baseDir (which must exist and be empty). It returns the manifest; the caller
// saves it.
func Tree(folder, copyDir, baseDir string, opt Options) (*Result, error) {
	if err := CheckBackend(opt.Backend); err != nil {
		return nil, fmt.Errorf("clone: %w", err)
	}
	w, err := walk.Walk(folder, walk.Options{})
	if err != nil {
		return nil, err
	}
	if p := opt.Progress; p != nil {
		var files, bytes int64
		for _, it := range w.Items {
			if it.Type != effects.TypeDir {
				files++
				bytes += it.Size
			}
		}
		p.TotalFiles.Store(files)
		p.TotalBytes.Store(bytes)
	}
	backend := opt.Backend
	if backend == "" {
		backend = detect(folder, copyDir, w.Items)
		if backend == Copy && opt.OverlayFrom > 0 && len(w.Items) >= opt.OverlayFrom {
			backend = Overlay
		}
	}
	made := backend // what the copy and base are made as
	if backend == Overlay {
		made = Copy
	}
	var st os.FileInfo
	if st, err = os.Stat(folder); err != nil {
		return nil, err
	}
	if err := os.Mkdir(copyDir, st.Mode().Perm()|0o700); err != nil {
		return nil, fmt.Errorf("clone: %w", err)
	}
	c := &cloner{folder: folder, copyDir: copyDir, backend: made, progress: opt.Progress}
	if made == Reflink {
		c.baseTree = filepath.Join(baseDir, "tree")
		if err := os.Mkdir(c.baseTree, 0o700); err != nil {
			return nil, fmt.Errorf("clone: %w", err)
		}
	} else {
		pf, err := os.OpenFile(filepath.Join(baseDir, PackName), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return nil, fmt.Errorf("clone: %w", err)
		}
		c.pack = &packWriter{f: pf, w: bufio.NewWriterSize(pf, 1<<20), seen: map[[32]byte][2]int64{}}
	}
	res, err := c.run(w, opt.Workers)
	if c.pack != nil {
		if cerr := c.pack.close(); err == nil && cerr != nil {
			err = fmt.Errorf("clone: base content: %w", cerr)
		}
	}
	if err != nil {
		return nil, err
	}
	res.Manifest.Backend = backend
	return res, nil
}

// detect tries one reflink from the folder into the copy's file system.
func detect(folder, copyDir string, items []walk.Item) string {
	for _, it := range items {
		if it.Type != effects.TypeFile {
			continue
		}
		probe := filepath.Join(filepath.Dir(copyDir), ".reflink-probe")
		defer os.Remove(probe)
		_, err := CopyFile(filepath.Join(folder, it.Path), probe, it, true, false)
		if err == nil {
			return Reflink
		}
		return Copy
	}
	return Copy
}

type cloner struct {
	folder, copyDir string
	backend         string
	baseTree        string // reflink: base/tree
	pack            *packWriter
	progress        *Progress
}

func (c *cloner) run(w *walk.Result, workers int) (*Result, error) {
	if workers <= 0 {
		workers = min(runtime.GOMAXPROCS(0)*2, 8)
	}
	m := &manifest.Manifest{Entries: make([]manifest.Entry, len(w.Items))}
	problems := append([]walk.Problem(nil), w.Problems...)
	// Directories first, in path order, so parents exist before children.
	for i, it := range w.Items {
		m.Entries[i] = manifest.Entry{Item: it, Folder: manifest.StatOf(it), Len: -1}
		if it.Type != effects.TypeDir {
			continue
		}
		if err := MakeDir(filepath.Join(c.copyDir, it.Path), it); err != nil {
			return nil, fmt.Errorf("clone: %w", err)
		}
		if c.baseTree != "" {
			if err := MakeDir(filepath.Join(c.baseTree, it.Path), it); err != nil {
				return nil, fmt.Errorf("clone: %w", err)
			}
		}
	}
	// A job is the files of one directory: workers that made files in the
	// same directory at once waited on its lock (ext4 takes the directory's
	// for every create), and the copy took 2.7 times the system time cp
	// took for the same tree.
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
		jobs     = make(chan job, 256)
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				for i := j.from; i < j.to; i++ {
					e := &m.Entries[i]
					if e.Type == effects.TypeDir {
						continue
					}
					size := e.Size
					p, err := c.one(e)
					if c.progress != nil {
						c.progress.Files.Add(1)
						c.progress.Bytes.Add(size)
					}
					if err != nil || p != nil {
						mu.Lock()
						if err != nil && firstErr == nil {
							firstErr = err
						}
						if p != nil {
							problems = append(problems, *p)
						}
						mu.Unlock()
					}
				}
			}
		}()
	}
	for _, j := range splitJobs(w.Items) {
		jobs <- j
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	// Entries that vanished mid-copy are dropped from the manifest.
	out := m.Entries[:0]
	for _, e := range m.Entries {
		if e.Type != effects.TypeNone {
			out = append(out, e)
		}
	}
	m.Entries = out
	// Directory modes and times last, deepest first.
	for i := len(m.Entries) - 1; i >= 0; i-- {
		e := &m.Entries[i]
		if e.Type != effects.TypeDir {
			continue
		}
		if err := FinishDir(filepath.Join(c.copyDir, e.Path), e.Item); err != nil {
			return nil, fmt.Errorf("clone: %w", err)
		}
		if c.baseTree != "" {
			if err := FinishDir(filepath.Join(c.baseTree, e.Path), e.Item); err != nil {
				return nil, fmt.Errorf("clone: %w", err)
			}
		}
		if it, err := walk.Lstat(c.copyDir, e.Path); err == nil {
			e.Item = it
		}
	}
	return &Result{Manifest: m, Problems: problems}, nil
}

// one copies one file or link into the copy (and the base), filling in its
// manifest entry. A file that vanished or changed while being copied is a
// problem, not a failure: it is dropped and said.
func (c *cloner) one(e *manifest.Entry) (*walk.Problem, error) {
	src := filepath.Join(c.folder, e.Path)
	dst := filepath.Join(c.copyDir, e.Path)
	switch e.Type {
	case effects.TypeLink:
		target, it, err := CopyLink(src, dst, e.Path)
		if err != nil {
			return c.vanished(e, err)
		}
		e.Item, e.Target = it, target
		if c.baseTree != "" {
			if _, _, err := CopyLink(src, filepath.Join(c.baseTree, e.Path), e.Path); err != nil {
				return nil, fmt.Errorf("clone: base: %w", err)
			}
		}
		return nil, nil
	case effects.TypeFile:
		keep := c.pack != nil && KeptInBase(e.Path, e.Size)
		r, err := CopyFile(src, dst, e.Item, c.backend == Reflink, keep)
		if err != nil {
			return c.vanished(e, err)
		}
		e.Item, e.Hash = r.Stat, r.Hash
		if c.baseTree != "" {
			if _, err := CopyFile(src, filepath.Join(c.baseTree, e.Path), walk.Item{Path: e.Path}, true, false); err != nil {
				return nil, fmt.Errorf("clone: base: %w", err)
			}
		}
		if keep {
			off, n, err := c.pack.add(r.Hash, r.Content)
			if err != nil {
				return nil, fmt.Errorf("clone: base content: %w", err)
			}
			e.Off, e.Len = off, n
		}
		return nil, nil
	}
	return nil, nil
}

func (c *cloner) vanished(e *manifest.Entry, err error) (*walk.Problem, error) {
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, ErrChanged) {
		p := &walk.Problem{Path: e.Path, Kind: walk.Vanished, Err: err}
		e.Type = effects.TypeNone
		return p, nil
	}
	if errors.Is(err, os.ErrPermission) {
		e.Type = effects.TypeNone
		return &walk.Problem{Path: e.Path, Kind: walk.Unreadable, Err: err}, nil
	}
	return nil, fmt.Errorf("clone: %s: %w", effects.Quote(e.Path), err)
}

// PackName is the file in a plain-copy base that holds small files' content.
const PackName = "content.pack"

type packWriter struct {
	mu   sync.Mutex
	f    *os.File
	w    *bufio.Writer
	off  int64
	seen map[[32]byte][2]int64
}

func (p *packWriter) add(h [32]byte, b []byte) (int64, int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if at, ok := p.seen[h]; ok {
		return at[0], at[1], nil
	}
	if _, err := p.w.Write(b); err != nil {
		return 0, 0, err
	}
	off := p.off
	p.off += int64(len(b))
	p.seen[h] = [2]int64{off, int64(len(b))}
	return off, int64(len(b)), nil
}

func (p *packWriter) close() error {
	err := p.w.Flush()
	if serr := p.f.Sync(); err == nil {
		err = serr
	}
	if cerr := p.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// AppendPack adds content to an existing base pack (after a commit) and
// returns where it went, synced.
func AppendPack(baseDir string, b []byte) (off, n int64, err error) {
	a, err := OpenPack(baseDir)
	if err != nil {
		return 0, 0, err
	}
	off, n, err = a.Append(b)
	if cerr := a.Close(); err == nil {
		err = cerr
	}
	return off, n, err
}

// PackAppender adds many contents to a base pack and syncs them once, at
// Close: a commit of 500 files paid 500 fsyncs of the pack, one per
// AppendPack. What it appended is durable only once Close returned nil, so
// the manifest naming it is saved after.
type PackAppender struct {
	f   *os.File
	off int64
}

// OpenPack opens baseDir's pack (made if missing) beneath baseDir.
func OpenPack(baseDir string) (*PackAppender, error) {
	root, err := beneath.Open(baseDir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.OpenFile(PackName, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &PackAppender{f: f, off: st.Size()}, nil
}

// Append writes b at the pack's end and returns where it went.
func (a *PackAppender) Append(b []byte) (off, n int64, err error) {
	k, err := a.f.Write(b)
	a.off += int64(k)
	if err != nil {
		return 0, 0, err
	}
	return a.off - int64(k), int64(k), nil
}

// Close syncs what was appended and closes the pack.
func (a *PackAppender) Close() error {
	err := a.f.Sync()
	if cerr := a.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Base reads what a task's base keeps.
type Base struct {
	Dir     string // tasks/<id>/base
	Backend string
	// Folder is the task's real folder. A plain-copy base keeps no content
	// of large files, and need not: while the folder's own file still has
	// the metadata the manifest recorded at the sync (the same inode, size,
	// change and modification times), it holds the base content, so it is
	// read there, and hashed only when a comparison needs it.
	Folder string
}

// ErrNotKept is returned for content the base does not keep (a plain-copy
// base keeps files up to 1 MiB outside heavy directories) and the folder no
// longer holds as it was at the sync.
var ErrNotKept = errors.New("the base does not keep this file's content")

// Open returns the base content of e.
func (b Base) Open(e *manifest.Entry) (io.ReadCloser, error) {
	if b.Backend == Reflink {
		return os.Open(filepath.Join(b.Dir, "tree", e.Path))
	}
	if e.Len < 0 {
		return b.openFolder(e)
	}
	f, err := os.Open(filepath.Join(b.Dir, PackName))
	if err != nil {
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{io.NewSectionReader(f, e.Off, e.Len), f}, nil
}

// openFolder opens the folder's own file at e's path, beneath the folder and
// never through a link, when it still holds e's base content: its metadata
// is the manifest's, or its hash is e's. Anything else is ErrNotKept.
func (b Base) openFolder(e *manifest.Entry) (io.ReadCloser, error) {
	if b.Folder == "" || e.Type != effects.TypeFile {
		return nil, ErrNotKept
	}
	root, err := beneath.Open(b.Folder)
	if err != nil {
		return nil, fmt.Errorf("%w (the folder: %v)", ErrNotKept, err)
	}
	defer root.Close()
	f, err := root.OpenFile(e.Path, os.O_RDONLY|unix.O_NONBLOCK, 0) // a fifo planted there must not hang the read
	if err != nil {
		return nil, fmt.Errorf("%w (%v)", ErrNotKept, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size != e.Folder.Size {
		f.Close()
		return nil, ErrNotKept
	}
	if st.Ino == e.Folder.Ino && st.Mtim.Nano() == e.Folder.MTime && st.Ctim.Nano() == e.Folder.CTime {
		return f, nil
	}
	if !e.HasHash() {
		f.Close()
		return nil, ErrNotKept
	}
	// Touched since the sync: still the base content if its bytes are.
	h, err := HashReader(f)
	if err != nil || h != e.Hash {
		f.Close()
		return nil, ErrNotKept
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Same reports whether the file at path holds e's base content. Content
// the base cannot tell any more (a large file, not hashed, whose folder
// copy changed since the sync) is not the same: the file then shows as
// changed, and a commit finds the folder changed too and asks.
func (b Base) Same(e *manifest.Entry, path string) (bool, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return false, err
	}
	if !st.Mode().IsRegular() || st.Size() != e.Size {
		return false, nil
	}
	if e.HasHash() {
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return false, err
		}
		var sum [32]byte
		copy(sum[:], h.Sum(nil))
		return sum == e.Hash, nil
	}
	old, err := b.Open(e)
	if errors.Is(err, ErrNotKept) && b.Backend != Reflink {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer old.Close()
	return sameReaders(f, old)
}

func sameReaders(a, b io.Reader) (bool, error) {
	ba, bb := make([]byte, 64<<10), make([]byte, 64<<10)
	for {
		na, ea := io.ReadFull(a, ba)
		nb, eb := io.ReadFull(b, bb)
		if na != nb || string(ba[:na]) != string(bb[:nb]) {
			return false, nil
		}
		if ea == io.EOF || ea == io.ErrUnexpectedEOF {
			return eb == io.EOF || eb == io.ErrUnexpectedEOF, nil
		}
		if ea != nil {
			return false, ea
		}
		if eb != nil && eb != io.EOF && eb != io.ErrUnexpectedEOF {
			return false, eb
		}
	}
}

// HashFile returns the sha256 of the file at path, never following a link.
func HashFile(path string) ([32]byte, error) {
	var sum [32]byte
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return sum, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return sum, err
	}
	copy(sum[:], h.Sum(nil))
	return sum, nil
}

// HashReader returns the sha256 of everything r holds.
func HashReader(r io.Reader) ([32]byte, error) {
	var sum [32]byte
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return sum, err
	}
	copy(sum[:], h.Sum(nil))
	return sum, nil
}
