package gitstate

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"maps"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// ApplyOptions say what the person approved beyond objects, refs and index.
type ApplyOptions struct {
	Config bool // apply config changes (they can make git run code)
	Hooks  bool // apply hook changes (they run on git commands)
	// Reflog, when set, is the message of the reflog entry each moved
	// branch (and HEAD, when it names the branch or moves itself) gets, as
	// git writes one; only where the repository keeps a log for it.
	Reflog string
}

// Undo is what Revert needs to take a commit's repository changes back:
// each ref's value before and after, the folder's index entries before and
// after at the paths the commit touched, and the config and hook files it
// replaced. Objects are not in it: they stay for `git gc`.
type Undo struct {
	Refs  []RefUndo  `json:"refs,omitempty"`
	Index *IndexUndo `json:"index,omitempty"`
	Files []FileUndo `json:"files,omitempty"`
}

// RefUndo is one ref's value before and after ("" = absent).
type RefUndo struct {
	Name   string `json:"name"`
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
}

// IndexUndo holds the folder's entries at the touched paths.
type IndexUndo struct {
	Before indexList `json:"before"`
	After  indexList `json:"after"`
	Paths  []string  `json:"-"`
}

// FileUndo is a config or hook file as it was ("hooks/<name>" or "config").
type FileUndo struct {
	Name    string      `json:"name"`
	Existed bool        `json:"existed"`
	Content []byte      `json:"content,omitempty"`
	Mode    fs.FileMode `json:"mode,omitempty"`
	After   string      `json:"after,omitempty"` // fileHash of what Apply wrote
}

// Apply writes the task's repository effects into the folder:
//
//  1. new loose objects and packs are copied from the copy, each checked
//     against its id (loose) or indexed afresh (packs); nothing is removed;
//  2. git's lock files are taken for the index, every ref to change and
//     packed-refs when a packed ref is deleted — a running git command makes
//     Apply fail with ErrBusy and nothing is changed;
//  3. under the locks the folder is checked again (as Check does);
//  4. the index is written by entries: the folder's entries, with the
//     task's at the paths it touched (stat data zero there, so git re-reads
//     those files once); then each ref, HEAD last;
//  5. config and hook changes only when opts say a person approved them.
//
// A ref or index path that already holds the task's value is left as is,
// so running Apply again after a crash finishes the job.
func Apply(base *Snapshot, folderGitDir, copyGitDir string, eff *Effects, opts ApplyOptions) (*Undo, error) {
	return apply(base, folderGitDir, copyGitDir, eff, opts, gitLocks{})
}

func apply(base *Snapshot, folderGitDir, copyGitDir string, eff *Effects, opts ApplyOptions, w writer) (*Undo, error) {
	fl, err := openLayout(folderGitDir)
	if err != nil {
		return nil, err
	}
	cl, err := openLayout(copyGitDir)
	if err != nil {
		return nil, err
	}
	for _, r := range eff.Refs {
		if r.Name != "HEAD" && !ValidRefName(r.Name) {
			return nil, fmt.Errorf("%w: ref name %q", ErrMalformed, r.Name)
		}
		if r.New != "" {
			if _, err := ParseLooseRef([]byte(r.New)); err != nil {
				return nil, fmt.Errorf("%w: ref %s value: %v", ErrMalformed, r.Name, err)
			}
		}
	}
	for _, c := range eff.Index {
		if !ValidIndexPath(c.Path) {
			return nil, fmt.Errorf("%w: index path %q is not one git accepts (nothing was applied)", ErrMalformed, c.Path)
		}
		if c.Kind != "delete" {
			switch c.NewMode {
			case "100644", "100755", "120000", "160000":
			default:
				return nil, fmt.Errorf("%w: index entry %q has mode %q (nothing was applied)", ErrMalformed, c.Path, c.NewMode)
			}
		}
	}
	// 1. Objects. Packs before loose objects, loose objects before refs.
	for _, p := range eff.Objects.Packs {
		if !validPackName(p) {
			return nil, fmt.Errorf("%w: pack name %q", ErrMalformed, p)
		}
		if err := copyPack(cl.objects(), fl.objects(), p); err != nil {
			return nil, err
		}
	}
	for _, id := range eff.Objects.Loose {
		if len(id) != 40 || !isHex(id) {
			return nil, fmt.Errorf("%w: object id %q", ErrMalformed, id)
		}
		if err := copyLoose(cl.objects(), fl.objects(), id); err != nil {
			return nil, err
		}
	}
	if len(eff.Objects.Packs)+len(eff.Objects.Loose) > 0 {
		if err := syncDir(fl.objects()); err != nil {
			return nil, err
		}
	}
	// 2. Locks.
	var locks []fileLock
	defer func() {
		for _, lf := range locks {
			lf.release()
		}
	}()
	lock := func(p string) (fileLock, error) {
		lf, err := w.lock(p)
		if err != nil {
			return nil, err
		}
		locks = append(locks, lf)
		return lf, nil
	}
	var idxLock fileLock
	if len(eff.Index) > 0 {
		if idxLock, err = lock(fl.index()); err != nil {
			return nil, err
		}
	}
	refs := slices.Clone(eff.Refs)
	slices.SortFunc(refs, func(a, b RefChange) int { // HEAD last
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
		lf, err := lock(refFile(fl, r.Name))
		if err != nil {
			return nil, err
		}
		refLocks[r.Name] = lf
	}
	// 3. Check again under the locks.
	cur, err := readRefs(fl)
	if err != nil {
		return nil, err
	}
	folderIdx, err := readIndexFile(fl.index())
	if err != nil {
		return nil, err
	}
	plan, err := planIndex(base, entriesOf(folderIdx), eff)
	if err != nil {
		return nil, err
	}
	hooks, err := hashHooks(fl)
	if err != nil {
		return nil, err
	}
	config, err := hashConfig(fl)
	if err != nil {
		return nil, err
	}
	items := refConflicts(cur, eff)
	items = append(items, headConflict(base, cur, eff)...)
	items = append(items, plan.conflicts...)
	if opts.Config {
		items = append(items, fileConflicts("config", config, eff.Config)...)
	}
	if opts.Hooks {
		items = append(items, fileConflicts("hook", hooks, eff.Hooks)...)
	}
	if len(items) > 0 {
		return nil, &ConflictError{Op: "apply", Items: items}
	}
	undo := &Undo{}
	// packed-refs: a deleted ref must leave it too.
	var packedLock fileLock
	var packedNew []byte
	drop := map[string]bool{}
	for _, r := range refs {
		if r.New == "" && cur[r.Name] != "" {
			drop[r.Name] = true
		}
	}
	if len(drop) > 0 {
		pp := filepath.Join(fl.CommonDir, "packed-refs")
		if b, err := os.ReadFile(pp); err == nil {
			if nb, dropped := withoutPacked(b, drop); dropped {
				if packedLock, err = lock(pp); err != nil {
					return nil, err
				}
				packedNew = nb
			}
		}
	}
	// 4. Index, then refs.
	if idxLock != nil && len(plan.paths) > 0 {
		b, changed, err := mergedIndex(folderIdx, plan)
		if err != nil {
			return nil, err
		}
		if changed {
			if err := idxLock.write(b, 0); err != nil {
				return nil, err
			}
			if err := idxLock.commit(); err != nil {
				return nil, err
			}
		}
		undo.Index = indexUndoOf(plan)
	}
	for _, r := range refs {
		lf := refLocks[r.Name]
		if cur[r.Name] == r.New {
			continue
		}
		undo.Refs = append(undo.Refs, RefUndo{Name: r.Name, Before: cur[r.Name], After: r.New})
		if r.New == "" {
			if err := lf.remove(); err != nil {
				return undo, err
			}
			continue
		}
		if err := lf.write([]byte(r.New+"\n"), 0); err != nil {
			return undo, err
		}
		if err := lf.commit(); err != nil {
			return undo, err
		}
	}
	if opts.Reflog != "" && len(undo.Refs) > 0 {
		if err := writeReflogs(fl, cur, undo.Refs, opts.Reflog, time.Now(), lock); err != nil {
			return undo, err
		}
	}
	if packedLock != nil {
		if err := packedLock.write(packedNew, 0); err != nil {
			return undo, err
		}
		if err := packedLock.commit(); err != nil {
			return undo, err
		}
	}
	// 5. Config and hooks, only when approved.
	if opts.Config {
		for _, c := range eff.Config {
			files := configFiles(fl)
			src := configFiles(cl)[c.Name]
			dst, ok := files[c.Name]
			if !ok {
				return undo, fmt.Errorf("%w: config file %q", ErrMalformed, c.Name)
			}
			fu, err := replaceFile(src, dst, c, w)
			if err != nil {
				return undo, err
			}
			fu.Name = c.Name
			undo.Files = append(undo.Files, fu)
		}
	}
	if opts.Hooks {
		for _, c := range eff.Hooks {
			if !validHookName(c.Name) {
				return undo, fmt.Errorf("%w: hook name %q", ErrMalformed, c.Name)
			}
			fu, err := replaceFile(filepath.Join(cl.hooksDir(), c.Name), filepath.Join(fl.hooksDir(), c.Name), c, w)
			if err != nil {
				return undo, err
			}
			fu.Name = "hooks/" + c.Name
			undo.Files = append(undo.Files, fu)
		}
	}
	return undo, nil
}

func indexUndoOf(plan *indexPlan) *IndexUndo {
	u := &IndexUndo{Paths: plan.paths}
	for _, p := range plan.paths {
		u.Before = append(u.Before, plan.before[p]...)
		u.After = append(u.After, plan.after[p]...)
	}
	return u
}

// mergedIndex returns the folder's index with the planned entries in place.
// Entries the task did not touch keep their stat data; the task's carry
// none, so git compares those files by content once. Extensions (cache
// tree, untracked cache) are dropped: git rebuilds them.
func mergedIndex(idx *index.Index, plan *indexPlan) ([]byte, bool, error) {
	changed := false
	for _, p := range plan.paths {
		if !sameEntries(plan.before[p], plan.after[p]) {
			changed = true
		}
	}
	if !changed {
		return nil, false, nil
	}
	touched := map[string]bool{}
	for _, p := range plan.paths {
		touched[p] = true
	}
	out := &index.Index{Version: idx.Version}
	if out.Version < 2 {
		out.Version = 2
	}
	for _, e := range idx.Entries {
		if !touched[e.Name] {
			out.Entries = append(out.Entries, e)
		}
	}
	for _, p := range plan.paths {
		for _, e := range plan.after[p] {
			out.Entries = append(out.Entries, toGoGit(e))
		}
	}
	for _, e := range out.Entries {
		if (e.IntentToAdd || e.SkipWorktree) && out.Version == 2 {
			out.Version = 3
		}
	}
	slices.SortStableFunc(out.Entries, func(a, b *index.Entry) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return int(a.Stage) - int(b.Stage)
	})
	var buf bytes.Buffer
	if err := index.NewEncoder(&buf).Encode(out); err != nil {
		return nil, false, fmt.Errorf("gitstate: encode index: %w", err)
	}
	// go-git's encoder sorts by name alone; read the result back and make
	// sure every path's stages are in order before git ever sees it.
	check := &index.Index{}
	if err := index.NewDecoder(bytes.NewReader(buf.Bytes())).Decode(check); err != nil {
		return nil, false, fmt.Errorf("gitstate: encoded index does not read back: %w", err)
	}
	for i := 1; i < len(check.Entries); i++ {
		a, b := check.Entries[i-1], check.Entries[i]
		if a.Name > b.Name || a.Name == b.Name && a.Stage >= b.Stage {
			return nil, false, fmt.Errorf("%w: could not write unmerged entries of %q in stage order", ErrUnsupported, b.Name)
		}
	}
	if len(check.Entries) != len(out.Entries) {
		return nil, false, fmt.Errorf("gitstate: encoded index holds %d entries, want %d", len(check.Entries), len(out.Entries))
	}
	return buf.Bytes(), true, nil
}

func toGoGit(e indexEntry) *index.Entry {
	ge := &index.Entry{
		Name:         e.Path,
		Mode:         filemode.FileMode(e.Mode),
		Stage:        index.Stage(e.Stage),
		IntentToAdd:  e.Flags&flagIntentToAdd != 0,
		SkipWorktree: e.Flags&flagSkipWorktree != 0,
	}
	ge.Hash = plumbing.Hash(e.ID)
	return ge
}

// replaceFile puts the copy's src over the folder's dst (or removes dst for
// a delete), after checking src still holds what the effects reviewed.
func replaceFile(src, dst string, c FileChange, w writer) (FileUndo, error) {
	var fu FileUndo
	if st, err := os.Lstat(dst); err == nil && st.Mode().IsRegular() {
		b, err := os.ReadFile(dst)
		if err != nil {
			return fu, fmt.Errorf("gitstate: read %s: %w", dst, err)
		}
		fu.Existed, fu.Content, fu.Mode = true, b, st.Mode().Perm()
	} else if err == nil {
		return fu, fmt.Errorf("%w: %s is not a regular file", ErrUnsupported, dst)
	}
	if c.Kind == "delete" {
		lf, err := w.lock(dst)
		if err != nil {
			return fu, err
		}
		return fu, lf.remove()
	}
	st, err := os.Lstat(src)
	if err != nil || !st.Mode().IsRegular() {
		return fu, fmt.Errorf("%w: %s is no longer the reviewed regular file", ErrMoved, src)
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return fu, fmt.Errorf("gitstate: read %s: %w", src, err)
	}
	sum := sha256.Sum256(b)
	h := hex.EncodeToString(sum[:])
	if st.Mode()&0o111 != 0 {
		h += "+x"
	}
	if h != c.New {
		return fu, fmt.Errorf("%w: %s changed since it was reviewed", ErrMoved, src)
	}
	lf, err := w.lock(dst)
	if err != nil {
		return fu, err
	}
	defer lf.release()
	if err := lf.write(b, st.Mode().Perm()); err != nil {
		return fu, err
	}
	if err := lf.commit(); err != nil {
		return fu, err
	}
	fu.After = h
	return fu, nil
}

// zeroID is how a reflog names no commit.
const zeroID = "0000000000000000000000000000000000000000"

// reflogIdent is who a reflog entry Kule writes says made it.
const reflogIdent = "Kule <kule@localhost>"

// writeReflogs appends, as git does, one entry per moved ref to its log
// (logs/<ref>) and to HEAD's log when HEAD names that ref or moves itself:
// "<old> <new> <ident> <time> <zone>\t<message>". A log is written only
// where git keeps one: the file exists, or its directory does for a branch
// or HEAD. A deleted ref's log is left for the undo that brings it back.
func writeReflogs(l layout, cur map[string]string, changed []RefUndo, msg string, now time.Time, lock func(string) (fileLock, error)) error {
	after := maps.Clone(cur)
	for _, r := range changed {
		if r.After == "" {
			delete(after, r.Name)
		} else {
			after[r.Name] = r.After
		}
	}
	msg = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == '\t' {
			return ' '
		}
		return r
	}, msg)
	entries := map[string][]byte{}
	var order []string
	add := func(name, old, new string) {
		p := filepath.Join(l.CommonDir, "logs", filepath.FromSlash(name))
		if name == "HEAD" {
			p = filepath.Join(l.GitDir, "logs", "HEAD")
		}
		if _, err := os.Lstat(p); err != nil {
			st, derr := os.Stat(filepath.Dir(p))
			if derr != nil || !st.IsDir() || name != "HEAD" && !strings.HasPrefix(name, "refs/heads/") {
				return
			}
		}
		if _, ok := entries[p]; !ok {
			order = append(order, p)
		}
		entries[p] = append(entries[p], fmt.Sprintf("%s %s %s %d +0000\t%s\n", orZero(old), orZero(new), reflogIdent, now.Unix(), msg)...)
	}
	for _, r := range changed {
		if r.After == "" {
			continue
		}
		oldID, newID := resolve(cur, r.Name), resolve(after, r.Name)
		if oldID == newID {
			continue
		}
		add(r.Name, oldID, newID)
		if r.Name != "HEAD" && after["HEAD"] == symPrefix+r.Name && !slices.ContainsFunc(changed, func(c RefUndo) bool { return c.Name == "HEAD" }) {
			add("HEAD", oldID, newID)
		}
	}
	for _, p := range order {
		old, err := os.ReadFile(p)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("gitstate: read %s: %w", p, err)
		}
		lf, err := lock(p)
		if err != nil {
			return err
		}
		if err := lf.write(append(old, entries[p]...), 0); err != nil {
			return err
		}
		if err := lf.commit(); err != nil {
			return err
		}
	}
	return nil
}

func orZero(id string) string {
	if id == "" {
		return zeroID
	}
	return id
}
