package gitstate

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// Revert takes back what Apply wrote to the folder's repository: every ref
// returns to its value before, the index paths the commit touched return to
// their entries before, and replaced config and hook files return. Objects
// stay (git gc removes what nothing reaches). It refuses with a
// *ConflictError (errors.Is ErrMoved) when the folder no longer holds what
// the commit wrote there; stat-only index changes (`git status`) never count.
func Revert(folderGitDir string, undo *Undo) error {
	return revert(folderGitDir, undo, gitLocks{})
}

func revert(folderGitDir string, undo *Undo, w writer) error {
	l, err := openLayout(folderGitDir)
	if err != nil {
		return err
	}
	var locks []fileLock
	defer func() {
		for _, lf := range locks {
			lf.release()
		}
	}()
	var idxLock fileLock
	if undo.Index != nil && (len(undo.Index.Before) > 0 || len(undo.Index.After) > 0) {
		if idxLock, err = w.lock(l.index()); err != nil {
			return err
		}
		locks = append(locks, idxLock)
	}
	refs := slices.Clone(undo.Refs)
	slices.SortFunc(refs, func(a, b RefUndo) int {
		if (a.Name == "HEAD") != (b.Name == "HEAD") {
			if a.Name == "HEAD" {
				return 1
			}
			return -1
		}
		return strings.Compare(a.Name, b.Name)
	})
	refLocks := map[string]fileLock{}
	for _, r := range refs {
		if r.Name != "HEAD" && !ValidRefName(r.Name) {
			return fmt.Errorf("%w: ref name %q", ErrMalformed, r.Name)
		}
		if r.Before != "" {
			if _, err := ParseLooseRef([]byte(r.Before)); err != nil {
				return fmt.Errorf("%w: ref %s value: %v", ErrMalformed, r.Name, err)
			}
		}
		lf, err := w.lock(refFile(l, r.Name))
		if err != nil {
			return err
		}
		locks = append(locks, lf)
		refLocks[r.Name] = lf
	}
	cur, err := readRefs(l)
	if err != nil {
		return err
	}
	var items []string
	for _, r := range refs {
		if c := cur[r.Name]; c != r.After && c != r.Before {
			items = append(items, fmt.Sprintf("%s: moved to %s since the commit (it wrote %s)", shortRef(r.Name), short(c), short(r.After)))
		}
	}
	var plan *indexPlan
	folderIdx, err := readIndexFile(l.index())
	if err != nil {
		return err
	}
	if idxLock != nil {
		plan = &indexPlan{before: map[string][]indexEntry{}, after: map[string][]indexEntry{}}
		// Reverting is applying After → Before.
		after := byPath(undo.Index.After)
		before := byPath(undo.Index.Before)
		paths := map[string]bool{}
		for p := range after {
			paths[p] = true
		}
		for p := range before {
			paths[p] = true
		}
		curAt := map[string][]indexEntry{}
		for _, e := range entriesOf(folderIdx) {
			if paths[e.Path] {
				curAt[e.Path] = append(curAt[e.Path], e)
			}
		}
		for p := range paths {
			plan.paths = append(plan.paths, p)
			plan.before[p] = curAt[p]
			plan.after[p] = before[p]
			if !sameEntries(curAt[p], after[p]) && !sameEntries(curAt[p], before[p]) {
				items = append(items, fmt.Sprintf("index %s: staged again since the commit", p))
			}
		}
		slices.Sort(plan.paths)
	}
	for _, f := range undo.Files {
		p, err := undoFilePath(l, f.Name)
		if err != nil {
			return err
		}
		h, err := fileHash(p)
		if err != nil {
			return err
		}
		if h != f.After {
			items = append(items, fmt.Sprintf("%s: changed since the commit", f.Name))
		}
	}
	if len(items) > 0 {
		return &ConflictError{Op: "revert", Items: items}
	}
	if plan != nil {
		b, changed, err := mergedIndex(folderIdx, plan)
		if err != nil {
			return err
		}
		if changed {
			if err := idxLock.write(b, 0); err != nil {
				return err
			}
			if err := idxLock.commit(); err != nil {
				return err
			}
		}
	}
	for _, r := range refs {
		lf := refLocks[r.Name]
		if cur[r.Name] == r.Before {
			continue
		}
		if r.Before == "" {
			if err := lf.remove(); err != nil {
				return err
			}
			continue
		}
		if err := lf.write([]byte(r.Before+"\n"), 0); err != nil {
			return err
		}
		if err := lf.commit(); err != nil {
			return err
		}
	}
	for _, f := range undo.Files {
		p, _ := undoFilePath(l, f.Name)
		lf, err := w.lock(p)
		if err != nil {
			return err
		}
		if !f.Existed {
			if err := lf.remove(); err != nil {
				return fmt.Errorf("gitstate: revert %s: %w", f.Name, err)
			}
			continue
		}
		err = lf.write(f.Content, f.Mode.Perm()|0o400)
		if err == nil {
			err = lf.commit()
		}
		lf.release()
		if err != nil {
			return err
		}
	}
	return nil
}

func undoFilePath(l layout, name string) (string, error) {
	if h, ok := strings.CutPrefix(name, "hooks/"); ok && validHookName(h) {
		return filepath.Join(l.hooksDir(), h), nil
	}
	if p, ok := configFiles(l)[name]; ok {
		return p, nil
	}
	return "", fmt.Errorf("%w: undo file %q", ErrMalformed, name)
}
