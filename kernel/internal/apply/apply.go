// Package apply writes a planned set of changes into the person's folder so
// that a crash at any moment leaves the folder either as it was or as planned,
// never half of either. It follows ARCHITECTURE.md §4:
//
//  1. write the journal (phase "staging", fsync);
//  2. stage every new file, link and directory tree under a temporary name in
//     its own directory (never through a link: every directory is opened
//     beneath the folder root), then make them durable together;
//  3. mark the journal "staged" (fsync): from here the change rolls forward;
//  4. rename everything into place, moving what it replaces to trash names;
//     Files inside a repository (refs, index, config, hooks) follow git's
//     own lock protocol instead: their content is staged as <file>.lock,
//     taken exclusively, so a git command in the folder waits for the
//     change rather than racing it, and is then renamed over the file;
//  5. remove the trash, fsync each touched directory once;
//  6. let the caller finish (history entry, base update) — idempotently;
//  7. remove the journal.
//
// Recover, run by the next kule call, finds a journal and rolls a "staging"
// one back (removes the temporary files) and a "staged" one forward.
package apply

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/kulehq/kule/kernel/internal/atomicfile"
	"github.com/kulehq/kule/kernel/internal/crashpoint"
	"github.com/kulehq/kule/kernel/internal/effects"
	"github.com/kulehq/kule/kernel/internal/relpath"
)

// Errors a caller can test for.
var (
	ErrJournalDamaged = errors.New("journal is damaged")
	ErrConflict       = errors.New("the folder does not hold what the journal expects")
	// ErrSourceChanged: content to stage no longer is what was planned (the
	// task's copy changed while the change was being applied).
	ErrSourceChanged = errors.New("the content changed after it was judged")
	// ErrBusy: a git command holds a lock file the change needs.
	ErrBusy = errors.New("a git command holds the repository's lock")
	// ErrNotWhole: a directory the change would delete or replace holds
	// something Kule cannot read or remove (no permission): it deletes
	// only what it has read whole.
	ErrNotWhole = errors.New("kule cannot read or remove all of it")
	// ErrUnseen: what a change moved aside holds what Kule did not see when
	// it checked it; it is kept, not deleted.
	ErrUnseen = errors.New("it holds what Kule did not see")
)

// OpKind is one kind of change to the folder.
type OpKind string

// Op kinds, applied in this order: Replace ops that do not replace a
// directory, Move, then Remove and directory-replacing Replace, then Chmod.
const (
	Replace OpKind = "replace" // a staged file, link or directory tree renamed onto Path
	Move    OpKind = "move"    // From renamed to Path
	Remove  OpKind = "remove"  // Path (a whole subtree for a directory) taken away
	Chmod   OpKind = "chmod"   // Path's permission bits set to Mode
	// Lock replaces (or with Remove, deletes) a file of a git repository
	// under git's lock protocol: Data is staged as Path+".lock", created
	// atomically and exclusively; Path must still hold Expect (the sha256 of
	// its content when planned, "" for none); the lock is then renamed over
	// Path. Lock ops come last, in the order given.
	Lock OpKind = "lock"
)

// TreeEntry is one entry of a staged directory tree.
type TreeEntry struct {
	Rel    string // relative to the tree's root
	Type   effects.EntryType
	Mode   uint32
	MTime  int64
	Target string // a link's target
	Src    string // where its content comes from (the caller's Opener reads it)
	UID    int    // -1 leaves ownership to the process
	GID    int
	Want   [32]byte // when set, the sha256 the staged content must have
}

// Op is one change. Fields tagged `json:"-"` are inputs to staging only: a
// recovery never needs them.
type Op struct {
	Kind  OpKind            `json:"kind"`
	Path  relpath.Path      `json:"path"`
	From  relpath.Path      `json:"from,omitempty"`
	Type  effects.EntryType `json:"type,omitempty"`
	Mode  uint32            `json:"mode,omitempty"`
	Tmp   string            `json:"tmp,omitempty"`   // staged name in Path's directory
	Trash string            `json:"trash,omitempty"` // where what Path held goes
	// Seen is a digest of the directory tree Path held when the change was
	// checked (names, types, file sizes and times): its trash is removed
	// only while it still holds exactly that.
	Seen string `json:"seen,omitempty"`

	// Lock ops: delete instead of replace; what Path must hold; the sha256
	// of the lock file's content, which tells a lock Kule took (and may
	// remove on a roll-back) from one a git command holds.
	Remove bool   `json:"remove,omitempty"`
	Expect string `json:"expect,omitempty"`
	Mine   string `json:"mine,omitempty"`
	Data   []byte `json:"-"`

	// Staging inputs: a file's content comes from Src, a link points at
	// Target, a directory is built from Tree.
	Src    string      `json:"-"`
	Target string      `json:"-"`
	MTime  int64       `json:"-"`
	UID    int         `json:"-"`
	GID    int         `json:"-"`
	Tree   []TreeEntry `json:"-"`

	// Hash is the sha256 of the content staged for a file (filled by Run).
	Hash [32]byte `json:"-"`
	// Want, when set, is the sha256 the staged content must have: staging
	// fails with ErrSourceChanged otherwise, and nothing is applied.
	Want [32]byte `json:"-"`
}

// Phases of a journal.
const (
	PhaseStaging = "staging"
	PhaseStaged  = "staged"
)

// Journal is a change in flight.
type Journal struct {
	ID    string          `json:"id"`
	Kind  string          `json:"kind"` // "commit", "undo", …: names the crash points
	Phase string          `json:"phase"`
	Ops   []Op            `json:"ops"`
	Data  json.RawMessage `json:"data,omitempty"` // the caller's, for Finish
}

// Opener reads the content a staged file or tree entry names in Src.
type Opener func(src string) (io.ReadCloser, error)

// Finish completes a change once the folder holds it (append the history
// entry, update the base). It must be idempotent: a recovery may call it
// again after a crash inside it.
type Finish func(j *Journal) error

// NewID returns a fresh journal id.
func NewID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Run carries out j on the folder root, recording it in journalPath. On an
// error before the change was staged, nothing in the folder has changed and
// the temporary files are gone; the error says so.
func Run(root, journalPath string, j *Journal, open Opener, finish Finish) error {
	if j.ID == "" {
		j.ID = NewID()
	}
	for i := range j.Ops {
		op := &j.Ops[i]
		if err := relpath.Check(string(op.Path)); err != nil {
			return fmt.Errorf("%s: %w", j.Kind, err)
		}
		if op.Kind == Replace || op.Kind == Lock {
			op.Tmp = fmt.Sprintf(".kule-%s-%d.tmp", j.ID, i)
		}
		if op.Kind == Lock {
			if op.Remove {
				op.Data = []byte("kule " + j.ID + "\n") // never renamed: only marks the lock as Kule's
			}
			sum := sha256.Sum256(op.Data)
			op.Mine = hex.EncodeToString(sum[:])
		}
		if op.Kind == Replace || op.Kind == Remove {
			op.Trash = fmt.Sprintf(".kule-%s-%d.trash", j.ID, i)
		}
	}
	order(j.Ops)
	rootfd, err := openRoot(root)
	if err != nil {
		return err
	}
	defer unix.Close(rootfd)
	if err := checkWhole(rootfd, j); err != nil {
		return fmt.Errorf("%s: %w", j.Kind, err)
	}

	j.Phase = PhaseStaging
	if err := writeJournal(journalPath, j); err != nil {
		return fmt.Errorf("%s: write journal: %w (nothing in the folder changed)", j.Kind, err)
	}
	crashpoint.Hit(j.Kind + ".journal-written")
	// The directories staged into stay open until the change is staged:
	// a refusal removes its temporary names through them, wherever a
	// process racing the commit moved those directories meanwhile.
	held := heldDirs{}
	defer held.close()
	refuse := func(err error) error {
		rerr := rollBack(rootfd, j, held)
		if rerr == nil {
			rerr = removeJournal(journalPath)
		}
		if rerr != nil {
			return fmt.Errorf("%s: %w; cleaning up also failed: %v (the journal %s stays, the next kule call finishes the clean-up)", j.Kind, err, rerr, journalPath)
		}
		return fmt.Errorf("%s: %w (nothing in the folder changed)", j.Kind, err)
	}
	if err := stageAll(rootfd, j, open, held); err != nil {
		return refuse(err)
	}
	crashpoint.Hit(j.Kind + ".staged-files")
	j.Phase = PhaseStaged
	err = crashpoint.Fault("journal.staged")
	if err == nil {
		err = writeJournal(journalPath, j)
	}
	if err != nil {
		j.Phase = PhaseStaging
		return refuse(fmt.Errorf("mark journal staged: %w", err))
	}
	held.close()
	crashpoint.Hit(j.Kind + ".staged")
	return rollForward(rootfd, journalPath, j, finish)
}

// Recover finishes or reverses a change that a crash interrupted. It returns
// the journal it found (nil when there was none) and whether the change was
// rolled forward.
func Recover(root, journalPath string, finish Finish) (*Journal, bool, error) {
	j, err := readJournal(journalPath)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	for _, op := range j.Ops {
		if err := relpath.Check(string(op.Path)); err != nil {
			return j, false, fmt.Errorf("%w: %s: %v (nothing was done; keep a copy of it and of the folder before removing it)", ErrJournalDamaged, journalPath, err)
		}
		if op.From != "" {
			if err := relpath.Check(string(op.From)); err != nil {
				return j, false, fmt.Errorf("%w: %s: %v", ErrJournalDamaged, journalPath, err)
			}
		}
		for _, name := range []string{op.Tmp, op.Trash} {
			if strings.ContainsRune(name, '/') || name == ".." || name == "." {
				return j, false, fmt.Errorf("%w: %s: bad temporary name %q", ErrJournalDamaged, journalPath, name)
			}
		}
	}
	rootfd, err := openRoot(root)
	if err != nil {
		return j, false, err
	}
	defer unix.Close(rootfd)
	if j.Phase != PhaseStaged {
		if err := rollBack(rootfd, j, nil); err != nil {
			return j, false, fmt.Errorf("recover %s: %w", j.Kind, err)
		}
		return j, false, removeJournal(journalPath)
	}
	return j, true, rollForward(rootfd, journalPath, j, finish)
}

// refuseNotWhole refuses a change that would take away a directory Kule
// cannot read or remove whole. Tests turn it off to show what it guards.
var refuseNotWhole = true

// checkWhole makes sure that everything the change takes away from the
// folder (what a Remove deletes, and what a Replace moves aside to put a
// new directory or file in its place) can be read and removed whole, before
// anything is written: a directory Kule cannot list holds what it never
// read and keeps in no checkpoint, and one it cannot change leaves its
// trash in the folder, wedging every later command. It records what each
// such directory held (Op.Seen), so that only that is ever deleted.
func checkWhole(rootfd int, j *Journal) error {
	access := refuseNotWhole && os.Geteuid() != 0 // root reads and removes everything
	skip := otherPaths(j)
	for i := range j.Ops {
		op := &j.Ops[i]
		if op.Kind != Remove && op.Kind != Replace {
			continue
		}
		path := string(op.Path)
		dfd, err := openDir(rootfd, relpath.Dir(path))
		if err != nil {
			continue // staging names the problem with the directory
		}
		var st unix.Stat_t
		err = unix.Fstatat(dfd, relpath.Base(path), &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			h := sha256.New()
			err = wholeDir(dfd, relpath.Base(path), path, "", access, h, skip)
			op.Seen = hex.EncodeToString(h.Sum(nil))
		} else {
			err = nil // a file or a link goes with its directory's rights
		}
		unix.Close(dfd)
		if err != nil && access {
			return fmt.Errorf("%w: %v — nothing in the folder changed: Kule deletes only what it has read whole. Give yourself access to all of it (chmod -R u+rwX %s in the folder) and commit again, or hold it back (Hold back in the app's Review) and commit the rest",
				ErrNotWhole, err, effects.Quote(path))
		}
		if err != nil {
			op.Seen = "" // unlistable as root: nothing to compare; root removes it whole
		}
	}
	return nil
}

// otherPaths are the paths the change itself writes or moves away: what a
// directory it deletes holds there changes before its trash is cleared
// (a file moved out of it), so it is no part of what was seen.
func otherPaths(j *Journal) map[string]bool {
	m := map[string]bool{}
	for _, op := range j.Ops {
		if op.Kind == Move {
			m[string(op.From)] = true
			m[string(op.Path)] = true
		}
		if op.Kind == Replace || op.Kind == Remove || op.Kind == Lock || op.Kind == Chmod {
			m[string(op.Path)] = true
		}
	}
	return m
}

// wholeDir walks the directory name in dfd (rel from the folder, at from
// the directory checked) and writes what it holds to h, leaving out what
// skip names (and what is below it). With access it also checks that
// every directory can be listed, entered and changed and every file read.
func wholeDir(dfd int, name, rel, at string, access bool, h io.Writer, skip map[string]bool) error {
	if access {
		if err := unix.Faccessat(dfd, name, unix.R_OK|unix.W_OK|unix.X_OK, unix.AT_EACCESS|unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fmt.Errorf("%s: %w", effects.Quote(rel), err)
		}
	}
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%s: %w", effects.Quote(rel), err)
	}
	defer unix.Close(fd)
	names, err := readNames(fd)
	if err != nil {
		return fmt.Errorf("%s: %w", effects.Quote(rel), err)
	}
	sort.Strings(names)
	for _, n := range names {
		if skip[relpath.Join(rel, n)] {
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fmt.Errorf("%s: %w", effects.Quote(relpath.Join(rel, n)), err)
		}
		sub := relpath.Join(at, n)
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			fmt.Fprintf(h, "d %q\n", sub)
			if err := wholeDir(fd, n, relpath.Join(rel, n), sub, access, h, skip); err != nil {
				return err
			}
		case unix.S_IFREG:
			fmt.Fprintf(h, "f %q %d %d.%d\n", sub, st.Size, st.Mtim.Sec, st.Mtim.Nsec)
			if access {
				if err := unix.Faccessat(fd, n, unix.R_OK, unix.AT_EACCESS|unix.AT_SYMLINK_NOFOLLOW); err != nil {
					return fmt.Errorf("%s: %w", effects.Quote(relpath.Join(rel, n)), err)
				}
			}
		default:
			fmt.Fprintf(h, "o %q %o %d\n", sub, st.Mode, st.Size)
		}
	}
	return nil
}

// keepUnseen keeps a trash that holds what the change did not see.
// Tests turn it off to show what it guards.
var keepUnseen = true

// seenStill reports whether the trash name in dfd still holds what op saw
// (true when op saw nothing to compare, or the trash is gone).
func seenStill(dfd int, op *Op, skip map[string]bool) (bool, error) {
	if op.Seen == "" || !keepUnseen {
		return true, nil
	}
	if ok, _, err := exists(dfd, op.Trash); err != nil || !ok {
		return err == nil, err
	}
	h := sha256.New()
	if err := wholeDir(dfd, op.Trash, string(op.Path), "", false, h, skip); err != nil {
		return false, nil
	}
	return hex.EncodeToString(h.Sum(nil)) == op.Seen, nil
}

// order sorts ops into the order they are applied in, stable within a kind.
func order(ops []Op) {
	rank := func(op Op) int {
		switch op.Kind {
		case Replace:
			return 0
		case Move:
			return 1
		case Remove:
			return 2
		case Chmod:
			return 3
		}
		return 4
	}
	sort.SliceStable(ops, func(a, b int) bool { return rank(ops[a]) < rank(ops[b]) })
}

// holdStagingDirs keeps the directories staged into open for a refusal's
// clean-up. Tests turn it off to show what it guards.
var holdStagingDirs = true

// heldDirs are the directories staging wrote into, open, by their path
// when staged.
type heldDirs map[string]int

// dup returns a descriptor of dir as staging found it, or -1.
func (h heldDirs) dup(dir string) int {
	fd, ok := h[dir]
	if !ok || !holdStagingDirs {
		return -1
	}
	nfd, err := unix.Dup(fd)
	if err != nil {
		return -1
	}
	unix.CloseOnExec(nfd)
	return nfd
}

func (h heldDirs) close() {
	for d, fd := range h {
		unix.Close(fd)
		delete(h, d)
	}
}

func stageAll(rootfd int, j *Journal, open Opener, held heldDirs) error {
	var staged []stagedName
	for i := range j.Ops {
		op := &j.Ops[i]
		if op.Kind != Replace {
			continue
		}
		dir, name := relpath.Dir(string(op.Path)), op.Tmp
		dfd, err := openDir(rootfd, dir)
		if err != nil {
			return fmt.Errorf("stage %s: %w", effects.Quote(string(op.Path)), err)
		}
		if _, ok := held[dir]; !ok {
			if hfd, err := unix.Dup(dfd); err == nil {
				unix.CloseOnExec(hfd)
				held[dir] = hfd
			}
		}
		err = stageOne(dfd, name, op, open, &staged, dir)
		unix.Close(dfd)
		if err != nil {
			return fmt.Errorf("stage %s: %w", effects.Quote(string(op.Path)), err)
		}
		crashpoint.Hit(j.Kind + ".staging")
	}
	if err := crashpoint.Fault("stage.sync"); err != nil {
		return fmt.Errorf("make the staged files durable: %w", err)
	}
	if err := syncStaged(rootfd, staged); err != nil {
		return err
	}
	return lockAll(rootfd, j, held)
}

// lockAll takes git's lock of every Lock op with its new content in it,
// then checks that each file still holds what was planned.
func lockAll(rootfd int, j *Journal, held heldDirs) error {
	dirs := map[string]bool{}
	for i := range j.Ops {
		op := &j.Ops[i]
		if op.Kind != Lock {
			continue
		}
		dir := relpath.Dir(string(op.Path))
		if err := mkdirBeneath(rootfd, dir); err != nil {
			return fmt.Errorf("lock %s: %w", effects.Quote(string(op.Path)), err)
		}
		dfd, err := openDir(rootfd, dir)
		if err != nil {
			return fmt.Errorf("lock %s: %w", effects.Quote(string(op.Path)), err)
		}
		if _, ok := held[dir]; !ok {
			if hfd, err := unix.Dup(dfd); err == nil {
				unix.CloseOnExec(hfd)
				held[dir] = hfd
			}
		}
		err = lockOne(dfd, op)
		unix.Close(dfd)
		if err != nil {
			return fmt.Errorf("lock %s: %w", effects.Quote(string(op.Path)), err)
		}
		dirs[dir] = true
	}
	if len(dirs) == 0 {
		return nil
	}
	if err := syncDirs(rootfd, dirs); err != nil {
		return err
	}
	crashpoint.Hit(j.Kind + ".git-locked")
	// Every lock is held: no git command changes these files now.
	for _, op := range j.Ops {
		if op.Kind != Lock {
			continue
		}
		dfd, err := openDir(rootfd, relpath.Dir(string(op.Path)))
		if err != nil {
			return err
		}
		got, err := hashAt(dfd, relpath.Base(string(op.Path)))
		unix.Close(dfd)
		if err != nil {
			return err
		}
		if got != op.Expect {
			return fmt.Errorf("%w: %s changed in the folder while the change was prepared (a git command ran)", ErrConflict, effects.Quote(string(op.Path)))
		}
	}
	return nil
}

// lockOne writes op's content to its temporary name, makes it durable, and
// links it as the lock file: a link fails if the lock exists, as git's own
// O_EXCL does, and a lock that exists always holds its whole content.
func lockOne(dfd int, op *Op) error {
	name := relpath.Base(string(op.Path))
	mode := op.Mode & 0o7777
	if mode == 0 {
		mode = 0o644
	}
	fd, err := unix.Openat(dfd, op.Tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), op.Tmp)
	_, err = f.Write(op.Data)
	if err == nil {
		err = unix.Fchmod(fd, mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Linkat(dfd, op.Tmp, dfd, name+".lock", 0)
		if errors.Is(err, unix.EEXIST) {
			err = fmt.Errorf("%w: %s.lock exists (a git command is running, or one crashed: remove the lock if no git runs, then commit again)", ErrBusy, name)
		}
	}
	_ = unix.Unlinkat(dfd, op.Tmp, 0)
	return err
}

// hashAt is the sha256 (hex) of name's content in dfd, "" when absent.
func hashAt(dfd int, name string) (string, error) {
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// mkdirBeneath makes the directories of rel that are missing (a new ref's
// namespace), never through a link.
func mkdirBeneath(rootfd int, rel string) error {
	if rel == "" {
		return nil
	}
	if fd, err := openDir(rootfd, rel); err == nil {
		unix.Close(fd)
		return nil
	}
	if err := mkdirBeneath(rootfd, relpath.Dir(rel)); err != nil {
		return err
	}
	pfd, err := openDir(rootfd, relpath.Dir(rel))
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	if err := unix.Mkdirat(pfd, relpath.Base(rel), 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
		return err
	}
	return unix.Fsync(pfd)
}

type stagedName struct {
	dir  string // relative to the root
	name string
	file bool
}

func stageOne(dfd int, name string, op *Op, open Opener, staged *[]stagedName, dir string) error {
	switch op.Type {
	case effects.TypeFile:
		h, err := stageFile(dfd, name, op.Src, op.Mode, op.MTime, op.UID, op.GID, op.Want, open)
		if err != nil {
			return err
		}
		op.Hash = h
		*staged = append(*staged, stagedName{dir, name, true})
	case effects.TypeLink:
		if err := stageLink(dfd, name, op.Target, op.MTime, op.UID, op.GID); err != nil {
			return err
		}
	case effects.TypeDir:
		if err := stageTree(dfd, name, op, open, staged, relpath.Join(dir, name)); err != nil {
			return err
		}
	default:
		return fmt.Errorf("nothing to stage for type %v", op.Type)
	}
	*staged = append(*staged, stagedName{dir: dir})
	return nil
}

func stageFile(dfd int, name, src string, mode uint32, mtime int64, uid, gid int, want [32]byte, open Opener) ([32]byte, error) {
	var sum [32]byte
	if err := crashpoint.Fault("stage.write"); err != nil {
		return sum, err
	}
	r, err := open(src)
	if err != nil {
		return sum, err
	}
	defer r.Close()
	fd, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return sum, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	h := sha256.New()
	if _, err := io.CopyBuffer(io.MultiWriter(f, h), r, make([]byte, 256<<10)); err != nil {
		return sum, err
	}
	copy(sum[:], h.Sum(nil))
	if want != ([32]byte{}) && sum != want {
		return sum, fmt.Errorf("%w (%s)", ErrSourceChanged, src)
	}
	if uid >= 0 && os.Geteuid() == 0 {
		_ = unix.Fchown(fd, uid, gid)
	}
	if err := unix.Fchmod(fd, mode&0o7777); err != nil {
		return sum, err
	}
	if mtime != 0 {
		t := unix.NsecToTimespec(mtime)
		if err := unix.UtimesNanoAt(dfd, name, []unix.Timespec{t, t}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return sum, err
		}
	}
	return sum, f.Close()
}

func stageLink(dfd int, name, target string, mtime int64, uid, gid int) error {
	if err := unix.Symlinkat(target, dfd, name); err != nil {
		return err
	}
	if uid >= 0 && os.Geteuid() == 0 {
		_ = unix.Fchownat(dfd, name, uid, gid, unix.AT_SYMLINK_NOFOLLOW)
	}
	if mtime != 0 {
		t := unix.NsecToTimespec(mtime)
		_ = unix.UtimesNanoAt(dfd, name, []unix.Timespec{t, t}, unix.AT_SYMLINK_NOFOLLOW)
	}
	return nil
}

// stageTree builds a whole directory under the temporary name: entries in
// path order (parents first), directory modes and times last.
func stageTree(dfd int, name string, op *Op, open Opener, staged *[]stagedName, relRoot string) error {
	if err := unix.Mkdirat(dfd, name, 0o700); err != nil {
		return err
	}
	tfd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(tfd)
	tree := append([]TreeEntry(nil), op.Tree...)
	sort.Slice(tree, func(a, b int) bool { return effects.ComparePaths(tree[a].Rel, tree[b].Rel) < 0 })
	for _, te := range tree {
		if err := relpath.Check(te.Rel); err != nil {
			return err
		}
		pfd, err := openDir(tfd, relpath.Dir(te.Rel))
		if err != nil {
			return err
		}
		base := relpath.Base(te.Rel)
		switch te.Type {
		case effects.TypeDir:
			err = unix.Mkdirat(pfd, base, 0o700)
			if err == nil && te.UID >= 0 && os.Geteuid() == 0 {
				_ = unix.Fchownat(pfd, base, te.UID, te.GID, unix.AT_SYMLINK_NOFOLLOW)
			}
			*staged = append(*staged, stagedName{dir: relpath.Join(relRoot, te.Rel)})
		case effects.TypeFile:
			_, err = stageFile(pfd, base, te.Src, te.Mode, te.MTime, te.UID, te.GID, te.Want, open)
			*staged = append(*staged, stagedName{relpath.Join(relRoot, relpath.Dir(te.Rel)), base, true})
		case effects.TypeLink:
			err = stageLink(pfd, base, te.Target, te.MTime, te.UID, te.GID)
		}
		unix.Close(pfd)
		if err != nil {
			return fmt.Errorf("%s: %w", effects.Quote(te.Rel), err)
		}
	}
	for i := len(tree) - 1; i >= 0; i-- {
		te := tree[i]
		if te.Type != effects.TypeDir {
			continue
		}
		if err := setDirMeta(tfd, te.Rel, te.Mode, te.MTime); err != nil {
			return err
		}
	}
	return unix.Fchmod(tfd, op.Mode&0o7777)
}

func setDirMeta(tfd int, rel string, mode uint32, mtime int64) error {
	if err := unix.Fchmodat(tfd, rel, mode&0o7777, 0); err != nil {
		return err
	}
	if mtime != 0 {
		t := unix.NsecToTimespec(mtime)
		return unix.UtimesNanoAt(tfd, rel, []unix.Timespec{t, t}, unix.AT_SYMLINK_NOFOLLOW)
	}
	return nil
}

// syncStaged makes every staged file and the directories holding them
// durable. Many files are flushed with one syncfs rather than one fsync each.
func syncStaged(rootfd int, staged []stagedName) error {
	files := 0
	for _, s := range staged {
		if s.file {
			files++
		}
	}
	if files > 64 {
		return unix.Syncfs(rootfd)
	}
	dirs := map[string]bool{}
	for _, s := range staged {
		if s.file {
			dfd, err := openDir(rootfd, s.dir)
			if err != nil {
				return err
			}
			fd, err := unix.Openat(dfd, s.name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			unix.Close(dfd)
			if err != nil {
				return err
			}
			err = unix.Fsync(fd)
			unix.Close(fd)
			if err != nil {
				return err
			}
		}
		dirs[s.dir] = true
	}
	return syncDirs(rootfd, dirs)
}

func syncDirs(rootfd int, dirs map[string]bool) error {
	for d := range dirs {
		fd, err := openDir(rootfd, d)
		if err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue
			}
			return err
		}
		err = unix.Fsync(fd)
		unix.Close(fd)
		if err != nil {
			return err
		}
	}
	return nil
}

// rollBack removes whatever staging left: the folder is as it was. held,
// when given, are the directories staging wrote into, as it found them: a
// directory moved since (or replaced by a link) is cleaned where it went.
func rollBack(rootfd int, j *Journal, held heldDirs) error {
	var firstErr error
	for _, op := range j.Ops {
		if op.Kind != Replace && op.Kind != Lock || op.Tmp == "" {
			continue
		}
		dfd, err := held.dup(relpath.Dir(string(op.Path))), error(nil)
		if dfd < 0 {
			dfd, err = openDir(rootfd, relpath.Dir(string(op.Path)))
		}
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, ErrLinkInPath) {
			continue // nothing can have been staged there
		}
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if err := removeAllAt(dfd, op.Tmp); err != nil && firstErr == nil {
			firstErr = err
		}
		if op.Kind == Lock {
			// Only a lock that holds this change's content is Kule's.
			lock := relpath.Base(string(op.Path)) + ".lock"
			if h, err := hashAt(dfd, lock); err == nil && h != "" && h == op.Mine {
				if err := unix.Unlinkat(dfd, lock, 0); err != nil && !errors.Is(err, unix.ENOENT) && firstErr == nil {
					firstErr = err
				}
			}
		}
		unix.Close(dfd)
	}
	return firstErr
}

// rollForward applies a staged journal; every step is idempotent, so a
// recovery can run it again from the start.
func rollForward(rootfd int, journalPath string, j *Journal, finish Finish) error {
	touched := map[string]bool{}
	half := len(j.Ops) / 2
	for i := range j.Ops {
		if i == half {
			crashpoint.Hit(j.Kind + ".applying")
		}
		if err := applyOp(rootfd, &j.Ops[i], touched); err != nil {
			return fmt.Errorf("%s: apply %s %s: %w (the journal %s keeps the change; run any kule command on this task to finish it)",
				j.Kind, j.Ops[i].Kind, effects.Quote(string(j.Ops[i].Path)), err, journalPath)
		}
	}
	crashpoint.Hit(j.Kind + ".renamed")
	skip := otherPaths(j)
	for _, op := range j.Ops {
		if op.Trash == "" {
			continue
		}
		dfd, err := openDir(rootfd, relpath.Dir(string(op.Path)))
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: clear trash: %w", j.Kind, err)
		}
		if same, err := seenStill(dfd, &op, skip); err != nil || !same {
			unix.Close(dfd)
			if err == nil {
				err = ErrUnseen
			}
			return fmt.Errorf("%s: clear trash: %s, which %s held, was kept, not deleted: %w since the change was checked. The rest of the change is in place; look at %s in the folder, move it back or delete it yourself, then run any kule command on this task to finish (the journal %s keeps the change)",
				j.Kind, op.Trash, effects.Quote(string(op.Path)), err, op.Trash, journalPath)
		}
		err = removeAllAt(dfd, op.Trash)
		unix.Close(dfd)
		if err != nil {
			return fmt.Errorf("%s: clear trash: %w", j.Kind, err)
		}
	}
	if err := syncDirs(rootfd, touched); err != nil {
		return fmt.Errorf("%s: sync folder: %w", j.Kind, err)
	}
	crashpoint.Hit(j.Kind + ".applied")
	if finish != nil {
		if err := finish(j); err != nil {
			return fmt.Errorf("%s: the folder holds the change, but finishing failed: %w (the journal %s stays; the next kule call on this task finishes it)", j.Kind, err, journalPath)
		}
	}
	crashpoint.Hit(j.Kind + ".finished")
	return removeJournal(journalPath)
}

func applyOp(rootfd int, op *Op, touched map[string]bool) error {
	path := string(op.Path)
	dir, name := relpath.Dir(path), relpath.Base(path)
	dfd, err := openDir(rootfd, dir)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	touched[dir] = true
	switch op.Kind {
	case Replace:
		tmpThere, tmpIsDir, err := exists(dfd, op.Tmp)
		if err != nil || !tmpThere {
			return err // already renamed into place
		}
		there, isDir, err := exists(dfd, name)
		if err != nil {
			return err
		}
		if there && (isDir || tmpIsDir) {
			// rename cannot replace a directory, or a file by a directory:
			// move the old one aside first.
			if err := unix.Renameat(dfd, name, dfd, op.Trash); err != nil {
				return err
			}
		}
		return unix.Renameat(dfd, op.Tmp, dfd, name)
	case Move:
		from := string(op.From)
		sfd, err := openDir(rootfd, relpath.Dir(from))
		if err != nil {
			return err
		}
		defer unix.Close(sfd)
		touched[relpath.Dir(from)] = true
		srcThere, _, err := exists(sfd, relpath.Base(from))
		if err != nil {
			return err
		}
		dstThere, _, err := exists(dfd, name)
		if err != nil {
			return err
		}
		switch {
		case !srcThere && dstThere:
			return nil // done before a crash
		case srcThere && dstThere:
			return fmt.Errorf("%w: both %s and %s exist", ErrConflict, effects.Quote(from), effects.Quote(path))
		case !srcThere:
			return fmt.Errorf("%w: %s is gone", ErrConflict, effects.Quote(from))
		}
		return unix.Renameat2(sfd, relpath.Base(from), dfd, name, unix.RENAME_NOREPLACE)
	case Remove:
		there, _, err := exists(dfd, name)
		if err != nil || !there {
			return err
		}
		return unix.Renameat(dfd, name, dfd, op.Trash)
	case Chmod:
		return unix.Fchmodat(dfd, name, op.Mode&0o7777, 0)
	case Lock:
		there, _, err := exists(dfd, name+".lock")
		if err != nil || !there {
			return err // done before a crash
		}
		if op.Remove {
			if err := unix.Unlinkat(dfd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
				return err
			}
			return unix.Unlinkat(dfd, name+".lock", 0)
		}
		return unix.Renameat(dfd, name+".lock", dfd, name)
	}
	return fmt.Errorf("unknown op %q", op.Kind)
}

func writeJournal(path string, j *Journal) error {
	b, err := json.Marshal(j)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, b, 0o600)
}

func readJournal(path string) (*Journal, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var j Journal
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, fmt.Errorf("%w: %s: %v (it was written atomically, so this is damage from outside Kule; keep a copy of it and of the folder before removing it)", ErrJournalDamaged, path, err)
	}
	return &j, nil
}

// ReadJournal returns the journal at path; os.ErrNotExist when there is none.
func ReadJournal(path string) (*Journal, error) { return readJournal(path) }

func removeJournal(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return atomicfile.SyncDir(filepath.Dir(path))
}
