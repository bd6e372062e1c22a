// Package gitstate judges a git repository by what it means, not by its bytes.
//
// Inside a task's copy, git rewrites `.git` all the time: `git status` refreshes
// the index, every ref update appends to logs, maintenance adds and removes lock
// files. Comparing `.git` file by file would make every task conflict with the
// person's own `git status`. The file engine therefore leaves every `.git` out of
// its comparison and asks this package instead:
//
//  1. Find lists the repositories in a folder (the root's, linked worktrees and
//     submodules whose `.git` is a file, and repositories nested deeper).
//  2. Snapshot records a repository's meaning (refs by value, index entries
//     without stat data, hashes of hooks and config, the object files present);
//     the engine stores it in the task's base at `kule new` and after each
//     commit or undo.
//  3. Compare reads the copy's repository against that snapshot and returns the
//     Effects: new object files, each ref change classified (fast-forward, new,
//     deleted, history rewrite), index changes by entry, staged content that
//     differs from its file, hook and config changes. Lock files, logs/,
//     FETCH_HEAD, ORIG_HEAD and the like are noise.
//  4. Check decides at commit time whether the folder's repository is still
//     compatible: a person's commit on a branch the task moved is a conflict;
//     `git gc`, `git pack-refs`, `git status` and switching branches and back
//     are not.
//  5. Apply writes the effects into the folder's repository (objects added
//     after verifying their hashes, the index merged by entries, refs by value
//     under git's own lock files) and returns an Undo; Revert restores refs and
//     index from it, and refuses if the folder moved since.
//
// CommandEnv gives commands in a task git's environment configuration so that
// a fresh copy (new inodes, new change times) does not make the first
// `git status` re-read every file.
//
// Only SHA-1 repositories with files-backend refs are read; a SHA-256 or
// reftable repository is refused with ErrUnsupported rather than misread.
package gitstate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Errors a caller can test for with errors.Is.
var (
	// ErrNotRepository: the path holds no git directory.
	ErrNotRepository = errors.New("gitstate: not a git repository")
	// ErrUnsupported: a repository format this package does not read
	// (SHA-256 objects, reftable refs, split or sparse index).
	ErrUnsupported = errors.New("gitstate: unsupported repository format")
	// ErrMalformed: a git file could not be parsed.
	ErrMalformed = errors.New("gitstate: malformed git file")
	// ErrSnapshot: a stored snapshot could not be decoded.
	ErrSnapshot = errors.New("gitstate: bad snapshot")
	// ErrTooNew: a stored base is in a format a newer Kule writes.
	ErrTooNew = errors.New("gitstate: the git base was written by a newer Kule")
	// ErrConflict: the folder's repository changed in a way that clashes with
	// the task's effects (Check and Apply return a *ConflictError).
	ErrConflict = errors.New("gitstate: conflict")
	// ErrBusy: a git command holds a lock in the folder's repository.
	ErrBusy = errors.New("gitstate: repository busy")
	// ErrMoved: Revert found the folder no longer holds what the commit wrote.
	ErrMoved = errors.New("gitstate: moved since commit")
	// ErrBadObject: an object file in the copy does not hold what its name says.
	ErrBadObject = errors.New("gitstate: bad object")
)

// ConflictError names what clashes: refs, index paths, config or hooks.
type ConflictError struct {
	Op    string   // "check", "apply" or "revert"
	Items []string // human-readable reasons, one per clash
}

func (e *ConflictError) Error() string {
	if e.Op == "revert" {
		return fmt.Sprintf("gitstate: revert: the folder's repository moved since the commit: %s; nothing was changed — undo those changes in the folder first, or keep the commit",
			strings.Join(e.Items, "; "))
	}
	return fmt.Sprintf("gitstate: %s: the folder's repository changed underneath: %s; no ref, index entry, hook or config of the folder was changed (objects may have been added; git gc removes unreachable ones) — sync the task with the folder or resolve it in the folder, then commit again",
		e.Op, strings.Join(e.Items, "; "))
}

// Unwrap lets errors.Is(err, ErrConflict) hold (ErrMoved for a revert).
func (e *ConflictError) Unwrap() error {
	if e.Op == "revert" {
		return ErrMoved
	}
	return ErrConflict
}

// layout is where a repository's parts live. For a plain repository GitDir and
// CommonDir are the same; for a linked worktree HEAD and index live in GitDir
// and refs, objects, hooks and config in CommonDir.
type layout struct {
	GitDir    string
	CommonDir string
}

func (l layout) head() string     { return filepath.Join(l.GitDir, "HEAD") }
func (l layout) index() string    { return filepath.Join(l.GitDir, "index") }
func (l layout) objects() string  { return filepath.Join(l.CommonDir, "objects") }
func (l layout) hooksDir() string { return filepath.Join(l.CommonDir, "hooks") }

// openLayout resolves gitDir (a `.git` directory, or a worktree's git
// directory holding a commondir file) and refuses formats it cannot read.
func openLayout(gitDir string) (layout, error) {
	st, err := os.Stat(gitDir)
	if err != nil || !st.IsDir() {
		return layout{}, fmt.Errorf("%w: %s", ErrNotRepository, gitDir)
	}
	if _, err := os.Stat(filepath.Join(gitDir, "HEAD")); err != nil {
		return layout{}, fmt.Errorf("%w: %s has no HEAD", ErrNotRepository, gitDir)
	}
	l := layout{GitDir: gitDir, CommonDir: gitDir}
	if b, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		c := strings.TrimRight(string(b), "\r\n")
		if c == "" {
			return layout{}, fmt.Errorf("%w: %s/commondir is empty", ErrMalformed, gitDir)
		}
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		l.CommonDir = filepath.Clean(c)
	}
	if err := checkFormat(l.CommonDir); err != nil {
		return layout{}, err
	}
	return l, nil
}

// checkFormat refuses repositories whose extensions change the meaning of
// the files this package reads.
func checkFormat(commonDir string) error {
	if _, err := os.Stat(filepath.Join(commonDir, "reftable")); err == nil {
		return fmt.Errorf("%w: %s uses reftable refs", ErrUnsupported, commonDir)
	}
	b, err := os.ReadFile(filepath.Join(commonDir, "config"))
	if err != nil {
		return nil // git itself works without a config file
	}
	for _, kv := range configExtensions(b) {
		switch kv[0] {
		case "objectformat":
			if !strings.EqualFold(kv[1], "sha1") {
				return fmt.Errorf("%w: %s uses %s objects", ErrUnsupported, commonDir, kv[1])
			}
		case "refstorage":
			if !strings.EqualFold(kv[1], "files") {
				return fmt.Errorf("%w: %s uses %s refs", ErrUnsupported, commonDir, kv[1])
			}
		}
	}
	return nil
}

// configExtensions returns the key/value pairs of a config file's
// [extensions] section, keys lower-cased. It reads only the plain
// `key = value` form git writes there.
func configExtensions(b []byte) [][2]string {
	var out [][2]string
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				in = false
				continue
			}
			in = strings.EqualFold(strings.TrimSpace(line[1:end]), "extensions")
			continue
		}
		if !in || line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		if i := strings.IndexAny(v, "#;"); i >= 0 {
			v = strings.TrimSpace(v[:i])
		}
		out = append(out, [2]string{strings.ToLower(strings.TrimSpace(k)), strings.Trim(v, `"`)})
	}
	return out
}
