package gitstate

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// Apply and Revert change a repository's files through a writer: git's own
// lock files (gitLocks), or a plan that records each write for a caller's
// journal to carry out (PlanApply, PlanRevert), so that a crash between the
// folder's files and its repository never leaves one without the other.

// writer takes git's lock on a file of a repository.
type writer interface {
	lock(path string) (fileLock, error)
}

// fileLock is one file held under git's lock protocol.
type fileLock interface {
	write(b []byte, perm os.FileMode) error // the new content, not yet in place
	commit() error                          // the new content replaces the file
	remove() error                          // the file is deleted
	release()                               // let go without changing the file
}

// gitLocks writes at once, under git's lock files.
type gitLocks struct{}

func (gitLocks) lock(path string) (fileLock, error) { return lockPath(path) }

// Write is one change to a repository's file that a plan leaves to its
// caller, who carries it out under git's lock protocol: take <Path>.lock
// exclusively, check Path still holds Expect, then rename the lock over Path
// (or remove Path, with Remove).
type Write struct {
	Path   string      // absolute path of the file (a ref, index, packed-refs, config, a hook)
	Data   []byte      // the new content (not with Remove)
	Mode   fs.FileMode // the new file's permissions; 0 is git's 0644
	Remove bool        // delete Path
	Expect string      // sha256 (hex) of what Path held when planned; "" when absent
}

// ExpectOf is the Expect of the file at path: its content's sha256, "" when
// there is none.
func ExpectOf(path string) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("gitstate: read %s: %w", path, err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// planner records writes instead of doing them.
type planner struct{ writes []Write }

type plannedLock struct {
	p     *planner
	w     Write
	wrote bool
}

func (p *planner) lock(path string) (fileLock, error) {
	e, err := ExpectOf(path)
	if err != nil {
		return nil, err
	}
	return &plannedLock{p: p, w: Write{Path: path, Expect: e}}, nil
}

func (l *plannedLock) write(b []byte, perm os.FileMode) error {
	l.w.Data, l.w.Mode, l.wrote = slices.Clone(b), perm, true
	return nil
}

func (l *plannedLock) commit() error {
	if !l.wrote {
		return fmt.Errorf("gitstate: plan: %s committed without content", l.w.Path)
	}
	l.p.writes = append(l.p.writes, l.w)
	l.wrote = false
	return nil
}

func (l *plannedLock) remove() error {
	w := l.w
	w.Data, w.Remove = nil, true
	l.p.writes = append(l.p.writes, w)
	return nil
}

func (l *plannedLock) release() {}

// PlanApply is Apply as a plan: it checks everything Apply checks and adds
// the new objects to the folder's repositories (objects are only ever
// added: git gc removes unreachable ones), then returns, instead of writing
// them, the writes of index, refs, config and hooks in the order git needs
// (HEAD last), and the UndoSet they make. The folder's repositories are
// otherwise unchanged until the caller carries the writes out.
func (b *Base) PlanApply(folderRoot, copyRoot string, effs []*Effects, opts ApplyOptions) ([]Write, *UndoSet, error) {
	set := &UndoSet{}
	p := &planner{}
	for _, eff := range effs {
		if eff.Gone || eff.Made || eff.Outside {
			continue
		}
		s := b.snapshot(eff.Repo)
		if s == nil {
			return nil, nil, fmt.Errorf("%w: no base for repository %s", ErrSnapshot, eff.Repo)
		}
		fr, err := gitDirIn(folderRoot, eff.Repo)
		if err != nil {
			return nil, nil, fmt.Errorf("gitstate: apply %s: %w", eff.Repo, err)
		}
		cr, err := gitDirIn(copyRoot, eff.Repo)
		if err != nil {
			return nil, nil, fmt.Errorf("gitstate: apply %s: %w", eff.Repo, err)
		}
		u, err := apply(s, fr.GitDir, cr.GitDir, eff, opts, p)
		if err != nil {
			return nil, nil, fmt.Errorf("gitstate: apply %s: %w", eff.Repo, err)
		}
		set.Repos = append(set.Repos, RepoUndo{Path: eff.Repo, Undo: u})
	}
	return p.writes, set, nil
}

// PlanRevert is RevertSet as a plan: it checks every repository of set and
// returns the writes that take the commit back, changing nothing.
func PlanRevert(folderRoot string, set *UndoSet) ([]Write, error) {
	p := &planner{}
	repos := slices.Clone(set.Repos)
	slices.Reverse(repos)
	for _, ru := range repos {
		if !validRepoPath(ru.Path) || ru.Undo == nil {
			return nil, fmt.Errorf("%w: undo of repository %q", ErrMalformed, ru.Path)
		}
		r, err := gitDirIn(folderRoot, ru.Path)
		if err != nil {
			return nil, fmt.Errorf("gitstate: revert %s: %w", ru.Path, err)
		}
		if err := revert(r.GitDir, ru.Undo, p); err != nil {
			return nil, fmt.Errorf("gitstate: revert %s: %w", ru.Path, err)
		}
	}
	return p.writes, nil
}

// Rel is w's path relative to root, slash-separated; an error when it lies
// outside root.
func (w Write) Rel(root string) (string, error) {
	rel, err := filepath.Rel(root, w.Path)
	if err != nil || rel == ".." || len(rel) > 3 && rel[:3] == "../" || filepath.IsAbs(rel) {
		return "", fmt.Errorf("%w: %s lies outside %s", ErrUnsupported, w.Path, root)
	}
	return filepath.ToSlash(rel), nil
}
