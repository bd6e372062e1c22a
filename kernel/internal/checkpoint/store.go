// Package checkpoint is Lonca: it keeps what a commit replaced, so that undo
// can put it back.
//
// File contents are git blobs in a bare repository, checkpoints/store.git,
// written through go-git's object storer (streamed, never read whole into
// memory); modes, times, link targets and the sha256 of each content sit
// beside them in one JSON record a commit, checkpoints/<id>.json.
//
// Durability: go-git does not fsync. Save first fsyncs every object file a
// record names and their directories (once each), and only then writes the
// record (temp file, fsync, link or rename, directory fsync). A record on disk
// therefore never names a blob that a crash could lose. A crash can still
// leave an object file that was renamed into place but never reached the
// disk whole; no record names it, and the next time the same content is
// stored the damaged object is found and replaced. Reading a blob checks its
// git hash, so damage is an error, never silently wrong content.
package checkpoint

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/format/objfile"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/kulehq/kule/kernel/internal/atomicfile"
	"github.com/kulehq/kule/kernel/internal/lazyre"
)

// Errors a caller can test for with errors.Is.
var (
	// ErrNone: there is no checkpoint left to undo.
	ErrNone = errors.New("no checkpoint to undo")
	// ErrNotFound: no record with that id.
	ErrNotFound = errors.New("checkpoint not found")
	// ErrDamaged: a record file or a stored object cannot be read as what it
	// should be.
	ErrDamaged = errors.New("checkpoint is damaged")
	// ErrBlobMissing: a blob id is not in store.git.
	ErrBlobMissing = errors.New("checkpoint blob is missing")
	// ErrNotRegular: PutFile was given something other than a regular file.
	ErrNotRegular = errors.New("not a regular file")
	// ErrChanged: a file changed while it was being stored.
	ErrChanged = errors.New("file changed while it was stored")
	// ErrInvalid: a record given to Save does not pass its checks.
	ErrInvalid = errors.New("invalid checkpoint record")
)

// StoreDir is the bare repository inside a checkpoints directory.
const StoreDir = "store.git"

// largeObject is the size above which reading a blob streams it from disk
// instead of decompressing it into memory.
const largeObject = 1 << 20

var recordName = lazyre.New(`^[1-9][0-9]{0,17}\.json$`)

// Store is one task's checkpoint store. It is safe for use by several
// goroutines; several processes must be serialised by the task lock.
type Store struct {
	dir     string // tasks/<id>/checkpoints
	git     string // dir/store.git
	storage *filesystem.Storage
	mu      sync.Mutex // serialises record writes

	// onSync, when set (by tests), is called before each fsync Save does
	// and can fail it.
	onSync func(path string) error
}

// fsync fsyncs path (a file or directory), calling the test hook first.
func (s *Store) fsync(path string) error {
	if s.onSync != nil {
		if err := s.onSync(path); err != nil {
			return err
		}
	}
	return syncPath(path)
}

// Open opens the checkpoint store in dir (tasks/<id>/checkpoints), creating
// dir and store.git on first use. store.git is made in a temporary directory,
// fsynced and renamed into place, so a crash never leaves half a repository.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("checkpoint: create %s: %w", dir, err)
	}
	gitDir := filepath.Join(dir, StoreDir)
	if _, err := os.Lstat(gitDir); errors.Is(err, fs.ErrNotExist) {
		if err := initStore(dir, gitDir); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	st := filesystem.NewStorageWithOptions(osfs.New(gitDir), cache.NewObjectLRUDefault(),
		filesystem.Options{LargeObjectThreshold: largeObject})
	if err := checkRepository(st); err != nil {
		st.Close()
		return nil, fmt.Errorf("checkpoint: %s: %w: not a git repository (%v); it was left as it is: restore it from a backup or move it aside to start an empty store (older checkpoints cannot then be undone)",
			gitDir, ErrDamaged, err)
	}
	return &Store{dir: dir, git: gitDir, storage: st}, nil
}

// errNoHead: a directory holds no HEAD, so it is no git repository.
var errNoHead = errors.New("repository does not exist")

// checkRepository tells whether st is a git repository the store can use:
// it has a HEAD, a config that parses, and no extension that would change
// how objects are named or kept (noop alone, and noop-v1 in format 1).
func checkRepository(st *filesystem.Storage) error {
	if _, err := st.Reference(plumbing.HEAD); errors.Is(err, plumbing.ErrReferenceNotFound) {
		return errNoHead
	} else if err != nil {
		return err
	}
	cfg, err := st.Config()
	if err != nil {
		return err
	}
	// go-git reads core.repositoryformatversion as "1" or not set.
	if cfg.Raw != nil && cfg.Raw.HasSection("extensions") {
		v1 := cfg.Core.RepositoryFormatVersion == "1"
		for _, o := range cfg.Raw.Section("extensions").Options {
			if k := strings.ToLower(o.Key); k != "noop" && (k != "noop-v1" || !v1) {
				return fmt.Errorf("extension %q is not supported", o.Key)
			}
		}
	}
	return nil
}

// initRepository makes an empty bare repository in the empty directory dir,
// as `git init --bare` does: the object and ref directories, HEAD naming
// refs/heads/master, and a config with core.bare set.
func initRepository(dir string) error {
	st := filesystem.NewStorage(osfs.New(dir), cache.NewObjectLRUDefault())
	defer st.Close()
	if err := st.Init(); err != nil {
		return err
	}
	if err := st.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, plumbing.Master)); err != nil {
		return err
	}
	cfg, err := st.Config()
	if err != nil {
		return err
	}
	cfg.Core.IsBare = true
	return st.SetConfig(cfg)
}

func initStore(dir, gitDir string) error {
	tmp, err := os.MkdirTemp(dir, "."+StoreDir+".tmp-*")
	if err != nil {
		return fmt.Errorf("checkpoint: create store: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := initRepository(tmp); err != nil {
		return fmt.Errorf("checkpoint: init %s: %w", gitDir, err)
	}
	// Make sure every object directory exists, so a blob write never has to
	// create (and later fsync) a new one under objects/ only.
	if err := os.MkdirAll(filepath.Join(tmp, "objects", "pack"), 0o755); err != nil {
		return fmt.Errorf("checkpoint: init %s: %w", gitDir, err)
	}
	if err := syncTree(tmp); err != nil {
		return fmt.Errorf("checkpoint: init %s: fsync: %w", gitDir, err)
	}
	if err := os.Rename(tmp, gitDir); err != nil {
		if errors.Is(err, fs.ErrExist) || errors.Is(err, syscall.ENOTEMPTY) {
			return nil // another process made it first
		}
		return fmt.Errorf("checkpoint: init %s: %w", gitDir, err)
	}
	return atomicfile.SyncDir(dir)
}

// syncTree fsyncs every file and directory under root, children first.
func syncTree(root string) error {
	var paths []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		paths = append(paths, p)
		return nil
	})
	if err != nil {
		return err
	}
	slices.Reverse(paths)
	for _, p := range paths {
		if err := syncPath(p); err != nil {
			return err
		}
	}
	return nil
}

func syncPath(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// Close releases the store's open files.
func (s *Store) Close() error { return s.storage.Close() }

// Dir is the checkpoints directory.
func (s *Store) Dir() string { return s.dir }

// PutFile stores the regular file at path as a blob, streaming it, and
// returns the blob id and the hex sha256 of the content. A link is never
// followed (ErrNotRegular); a file that changes while it is read is
// ErrChanged. The blob is durable only once a record naming it is saved.
func (s *Store) PutFile(path string) (blob, sha256hex string, err error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return "", "", fmt.Errorf("checkpoint: store %s: %w: it is a symbolic link", path, ErrNotRegular)
		}
		return "", "", fmt.Errorf("checkpoint: store %s: %w", path, err)
	}
	defer f.Close()
	before, err := f.Stat()
	if err != nil {
		return "", "", fmt.Errorf("checkpoint: store %s: %w", path, err)
	}
	if !before.Mode().IsRegular() {
		return "", "", fmt.Errorf("checkpoint: store %s: %w (%s)", path, ErrNotRegular, before.Mode().Type())
	}
	changed := func(what string) error {
		return fmt.Errorf("checkpoint: store %s: %w (%s); nothing was committed: retry once nothing else writes to it", path, ErrChanged, what)
	}
	sum := sha256.New()
	id, n, err := s.put(io.TeeReader(f, sum), before.Size())
	if err != nil {
		return "", "", fmt.Errorf("checkpoint: store %s: %w", path, err)
	}
	if n < before.Size() {
		return "", "", changed("it shrank")
	}
	if k, _ := f.Read(make([]byte, 1)); k > 0 {
		return "", "", changed("it grew")
	}
	after, err := f.Stat()
	if err != nil {
		return "", "", fmt.Errorf("checkpoint: store %s: %w", path, err)
	}
	if after.Size() != before.Size() || !after.ModTime().Equal(before.ModTime()) {
		return "", "", changed("its size or time changed")
	}
	return id, hex.EncodeToString(sum.Sum(nil)), nil
}

// PutBytes stores b as a blob and returns its id.
func (s *Store) PutBytes(b []byte) (blob string, err error) {
	id, _, err := s.put(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return "", fmt.Errorf("checkpoint: store %d bytes: %w", len(b), err)
	}
	return id, nil
}

type hasher interface{ Hash() plumbing.Hash }

// put streams size bytes of r into a loose blob through go-git's object
// writer. When fewer bytes arrive the half object is removed and n < size.
func (s *Store) put(r io.Reader, size int64) (id string, n int64, err error) {
	w, writeHeader, err := s.storage.LazyWriter()
	if err != nil {
		return "", 0, err
	}
	hw, ok := w.(hasher)
	if !ok {
		w.Close()
		return "", 0, fmt.Errorf("go-git object writer %T has no Hash method", w)
	}
	if err := writeHeader(plumbing.BlobObject, size); err != nil {
		w.Close()
		return "", 0, err
	}
	n, err = io.Copy(w, io.LimitReader(r, size))
	h := hw.Hash()
	obj := s.objectPath(h.String())
	if err != nil || n < size {
		// The object's header promises more than it holds: drop it. (No
		// whole object can have its id, so this never removes a good one.)
		cerr := w.Close()
		if rerr := os.Remove(obj); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) && cerr == nil {
			cerr = fmt.Errorf("remove a partial object %s: %w", obj, rerr)
		}
		if err == nil {
			err = cerr
		}
		return "", n, err
	}
	// go-git keeps an existing object file and drops the new one. An existing
	// file may be one a crash left half written (objects are not fsynced
	// until a record names them): check it and let the new one replace it.
	if _, err := os.Lstat(obj); err == nil {
		if verr := verifyObject(obj, h, size); verr != nil {
			if err := os.Remove(obj); err != nil {
				w.Close()
				return "", n, fmt.Errorf("replace damaged object %s: %w", obj, err)
			}
		}
	}
	if err := w.Close(); err != nil {
		return "", n, err
	}
	return h.String(), n, nil
}

// verifyObject reads a loose object file and checks its type, size and hash.
func verifyObject(path string, want plumbing.Hash, size int64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := objfile.NewReader(f)
	if err != nil {
		return err
	}
	defer r.Close()
	t, sz, err := r.Header()
	if err != nil {
		return err
	}
	if t != plumbing.BlobObject || sz != size {
		return fmt.Errorf("object is a %s of %d bytes, want a blob of %d", t, sz, size)
	}
	if _, err := io.Copy(io.Discard, r); err != nil {
		return err
	}
	if r.Hash() != want {
		return fmt.Errorf("object hash is %s", r.Hash())
	}
	return nil
}

func (s *Store) objectPath(hex string) string {
	return filepath.Join(s.git, "objects", hex[:2], hex[2:])
}

func parseBlob(blob string) (plumbing.Hash, error) {
	if !isHex(blob, 20) {
		return plumbing.ZeroHash, fmt.Errorf("%w: %q is not a git object id", ErrBlobMissing, blob)
	}
	return plumbing.NewHash(blob), nil
}

// Open returns the content of a blob. Reading checks the git hash of what was
// read; a mismatch is reported as ErrDamaged at the end of the stream, so a
// caller must not treat what it read as good until Read returned io.EOF.
func (s *Store) Open(blob string) (io.ReadCloser, error) {
	h, err := parseBlob(blob)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: open blob: %w", err)
	}
	obj, err := s.storage.EncodedObject(plumbing.BlobObject, h)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return nil, fmt.Errorf("checkpoint: open blob %s: %w from %s; the checkpoint cannot be restored", blob, ErrBlobMissing, s.git)
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: open blob %s: %w: %v; the checkpoint cannot be restored from it", blob, ErrDamaged, err)
	}
	rc, err := obj.Reader()
	if err != nil {
		return nil, fmt.Errorf("checkpoint: open blob %s: %w: %v", blob, ErrDamaged, err)
	}
	sum := sha1.New()
	fmt.Fprintf(sum, "blob %d\x00", obj.Size())
	return &checkedReader{rc: rc, sum: sum, want: blob, left: obj.Size()}, nil
}

// checkedReader hashes what it reads and fails at the end when the content
// does not match its blob id.
type checkedReader struct {
	rc   io.ReadCloser
	sum  hash.Hash
	want string
	left int64
}

func (c *checkedReader) Read(p []byte) (int, error) {
	n, err := c.rc.Read(p)
	c.sum.Write(p[:n])
	c.left -= int64(n)
	if err == io.EOF {
		if c.left != 0 || hex.EncodeToString(c.sum.Sum(nil)) != c.want {
			return n, fmt.Errorf("checkpoint: read blob %s: %w: its content does not match its id", c.want, ErrDamaged)
		}
	} else if err != nil {
		err = fmt.Errorf("checkpoint: read blob %s: %w: %v", c.want, ErrDamaged, err)
	}
	return n, err
}

func (c *checkedReader) Close() error { return c.rc.Close() }

// Save writes a record. A record with ID 0 gets the next free id. Every blob
// it names must be in the store; they are fsynced (object files, then their
// directories, once each) before the record is written through a temporary
// file, fsync, link (new id) or rename (existing id) and directory fsync.
func (s *Store) Save(r *Record) error {
	if r.Time.IsZero() {
		r.Time = time.Now().UTC()
	}
	id := r.ID
	if id == 0 {
		id = 1 // checked below with a placeholder id
	}
	probe := *r
	probe.ID = id
	if err := probe.check(); err != nil {
		return fmt.Errorf("checkpoint: save: %w: %v", ErrInvalid, err)
	}
	if err := s.syncBlobs(r); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.ID != 0 {
		return s.writeRecord(r, false)
	}
	ids, err := s.ids()
	if err != nil {
		return err
	}
	next := 1
	if len(ids) > 0 {
		next = ids[len(ids)-1] + 1
	}
	for {
		r.ID = next
		err := s.writeRecord(r, true)
		if !errors.Is(err, fs.ErrExist) {
			if err != nil {
				r.ID = 0
			}
			return err
		}
		next++ // another process took this id
	}
}

// syncBlobs makes every blob a record names durable: the loose object files
// first, then their directories once each. The fsyncs of one phase run in
// parallel, which lets the file system commit them together (on ext4 8
// parallel fsyncs of 1,000 small objects take a fraction of serial ones).
func (s *Store) syncBlobs(r *Record) error {
	var objs []string
	seen := map[string]bool{}
	for _, it := range r.Items {
		for _, st := range []State{it.Before, it.After} {
			if st.Blob == "" || seen[st.Blob] {
				continue
			}
			seen[st.Blob] = true
			h, err := parseBlob(st.Blob)
			if err != nil {
				return fmt.Errorf("checkpoint: save: %w", err)
			}
			if err := s.storage.HasEncodedObject(h); err != nil {
				return fmt.Errorf("checkpoint: save: item %q: blob %s: %w; store the content with PutFile first", it.Path, st.Blob, ErrBlobMissing)
			}
			obj := s.objectPath(st.Blob)
			if _, err := os.Lstat(obj); errors.Is(err, fs.ErrNotExist) {
				continue // packed, not loose: packs are written whole by git itself
			}
			objs = append(objs, obj)
		}
	}
	if len(objs) == 0 {
		return nil
	}
	dirs := map[string]bool{filepath.Join(s.git, "objects"): true}
	for _, o := range objs {
		dirs[filepath.Dir(o)] = true
	}
	if err := s.fsyncAll(objs); err != nil {
		return err
	}
	return s.fsyncAll(slices.Sorted(maps.Keys(dirs)))
}

// fsyncAll fsyncs paths with a few workers and returns the first error.
func (s *Store) fsyncAll(paths []string) error {
	const workers = 8
	errs := make([]error, len(paths))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, len(paths)) {
		wg.Go(func() {
			for i := range next {
				if err := s.fsync(paths[i]); err != nil {
					errs[i] = fmt.Errorf("checkpoint: save: fsync %s: %w; no record was written", paths[i], err)
				}
			}
		})
	}
	for i := range paths {
		next <- i
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

func (s *Store) recordPath(id int) string {
	return filepath.Join(s.dir, strconv.Itoa(id)+".json")
}

// writeRecord writes r atomically. With exclusive set it fails with
// fs.ErrExist instead of replacing a record of the same id.
func (s *Store) writeRecord(r *Record, exclusive bool) error {
	b, err := marshalRecord(r)
	if err != nil {
		return fmt.Errorf("checkpoint: save %d: %w", r.ID, err)
	}
	final := s.recordPath(r.ID)
	o := atomicfile.Options{Perm: 0o600, Exclusive: exclusive, BeforeSync: s.onSync}
	err = atomicfile.WriteWith(final, o, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
	switch {
	case exclusive && errors.Is(err, fs.ErrExist):
		return err
	case errors.Is(err, atomicfile.ErrDirSync):
		return fmt.Errorf("checkpoint: save %s: %w", final, err)
	case err != nil:
		return fmt.Errorf("checkpoint: save %s: %w; no record was written", final, err)
	}
	return nil
}

// ids lists the record ids on disk, ascending.
func (s *Store) ids() ([]int, error) {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: list %s: %w", s.dir, err)
	}
	var ids []int
	for _, e := range ents {
		if !recordName.MatchString(e.Name()) {
			continue
		}
		id, err := strconv.Atoi(strings.TrimSuffix(e.Name(), ".json"))
		if err == nil {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// Get reads record id. A missing record is ErrNotFound; one that cannot be
// decoded or fails its checks is ErrDamaged naming the file.
func (s *Store) Get(id int) (*Record, error) {
	p := s.recordPath(id)
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("checkpoint: %d: %w in %s", id, ErrNotFound, s.dir)
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxRecord+1))
	if err != nil {
		return nil, fmt.Errorf("checkpoint: read %s: %w", p, err)
	}
	r, err := DecodeRecord(b)
	if err == nil && r.ID != id {
		err = fmt.Errorf("it holds id %d", r.ID)
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %s: %w: %v; it was left as it is: restore it from a backup, or move it aside to give up that checkpoint", p, ErrDamaged, err)
	}
	return r, nil
}

// List returns every record, oldest first. A damaged record is an error
// naming its file, never skipped.
func (s *Store) List() ([]*Record, error) {
	ids, err := s.ids()
	if err != nil {
		return nil, err
	}
	out := make([]*Record, 0, len(ids))
	for _, id := range ids {
		r, err := s.Get(id)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// Latest returns the newest record that is not undone, or ErrNone.
func (s *Store) Latest() (*Record, error) {
	ids, err := s.ids()
	if err != nil {
		return nil, err
	}
	for i := len(ids) - 1; i >= 0; i-- {
		r, err := s.Get(ids[i])
		if err != nil {
			return nil, err
		}
		if !r.Undone {
			return r, nil
		}
	}
	return nil, fmt.Errorf("checkpoint: %w: no commit of this task is left to undo", ErrNone)
}

// MarkUndone marks record id undone, replacing its file atomically.
func (s *Store) MarkUndone(id int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.Get(id)
	if err != nil {
		return err
	}
	if r.Undone {
		return nil
	}
	r.Undone = true
	return s.writeRecord(r, false)
}
