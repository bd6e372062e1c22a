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
	if err := checkEffects(eff); err != nil {
		return nil, err
	}
	if err := copyObjects(cl, fl, eff); err != nil { // step 1
		return nil, err
	}
	a := &applyRun{base: base, fl: fl, cl: cl, eff: eff, opts: opts, w: w, undo: &Undo{}}
	defer a.release()
	if err := a.lockIndexAndRefs(); err != nil { // step 2
		return nil, err
	}
	if err := a.recheck(); err != nil { // step 3
		return nil, err
	}
	if err := a.lockPackedRefs(); err != nil {
		return nil, err
	}
	if err := a.writeIndex(); err != nil { // step 4
		return nil, err
	}
	if err := a.writeRefs(); err != nil {
		return a.undo, err
	}
	if err := a.writeConfigAndHooks(); err != nil { // step 5
		return a.undo, err
	}
	return a.undo, nil
}

// applyRun is one Apply from its locks on: what it holds, what it read
// under the locks, and the undo it builds as it writes.
type applyRun struct {
	base   *Snapshot
	fl, cl layout // the folder's repository and the copy's
	eff    *Effects
	opts   ApplyOptions
	w      writer

	locks    []fileLock          // every lock taken, released at the end
	idxLock  fileLock            // the index's, when the index changes
	refs     []RefChange         // eff.Refs, HEAD last
	refLocks map[string]fileLock // by ref name

	cur       map[string]string // the folder's refs, read under the locks
	folderIdx *index.Index      // the folder's index, read under the locks
	plan      *indexPlan

	packedLock fileLock // packed-refs', when a deleted ref is packed
	packedNew  []byte

	undo *Undo
}

// checkEffects refuses effects no git would write: bad ref names or
// values, index paths git rejects, modes an index cannot hold.
func checkEffects(eff *Effects) error {
	for _, r := range eff.Refs {
		if r.Name != "HEAD" && !ValidRefName(r.Name) {
			return fmt.Errorf("%w: ref name %q", ErrMalformed, r.Name)
		}
		if r.New != "" {
			if _, err := ParseLooseRef([]byte(r.New)); err != nil {
				return fmt.Errorf("%w: ref %s value: %v", ErrMalformed, r.Name, err)
			}
		}
	}
	for _, c := range eff.Index {
		if !ValidIndexPath(c.Path) {
			return fmt.Errorf("%w: index path %q is not one git accepts (nothing was applied)", ErrMalformed, c.Path)
		}
		if c.Kind != "delete" {
			switch c.NewMode {
			case "100644", "100755", "120000", "160000":
			default:
				return fmt.Errorf("%w: index entry %q has mode %q (nothing was applied)", ErrMalformed, c.Path, c.NewMode)
			}
		}
	}
	return nil
}

// copyObjects copies the new packs, then the new loose objects, from the
// copy into the folder, and syncs the folder's objects directory: all
// before any ref can name them.
func copyObjects(cl, fl layout, eff *Effects) error {
	for _, p := range eff.Objects.Packs {
		if !validPackName(p) {
			return fmt.Errorf("%w: pack name %q", ErrMalformed, p)
		}
		if err := copyPack(cl.objects(), fl.objects(), p); err != nil {
			return err
		}
	}
	for _, id := range eff.Objects.Loose {
		if len(id) != 40 || !isHex(id) {
			return fmt.Errorf("%w: object id %q", ErrMalformed, id)
		}
		if err := copyLoose(cl.objects(), fl.objects(), id); err != nil {
			return err
		}
	}
	if len(eff.Objects.Packs)+len(eff.Objects.Loose) > 0 {
		return syncDir(fl.objects())
	}
	return nil
}

// lock takes git's lock file for p and keeps it for release.
func (a *applyRun) lock(p string) (fileLock, error) {
	lf, err := a.w.lock(p)
	if err != nil {
		return nil, err
	}
	a.locks = append(a.locks, lf)
	return lf, nil
}

// release lets go of every lock still held (a committed one is gone).
func (a *applyRun) release() {
	for _, lf := range a.locks {
		lf.release()
	}
}

// lockIndexAndRefs takes the index's lock when the index changes, then
// each changed ref's, in name order with HEAD last.
func (a *applyRun) lockIndexAndRefs() error {
	if len(a.eff.Index) > 0 {
		lf, err := a.lock(a.fl.index())
		if err != nil {
			return err
		}
		a.idxLock = lf
	}
	a.refs = slices.Clone(a.eff.Refs)
	slices.SortFunc(a.refs, func(x, y RefChange) int { // HEAD last
		if (x.Name == "HEAD") != (y.Name == "HEAD") {
			if x.Name == "HEAD" {
				return 1
			}
			return -1
		}
		return strings.Compare(x.Name, y.Name)
	})
	a.refLocks = map[string]fileLock{}
	for _, r := range a.refs {
		lf, err := a.lock(refFile(a.fl, r.Name))
		if err != nil {
			return err
		}
		a.refLocks[r.Name] = lf
	}
	return nil
}

// recheck reads the folder's refs, index, hooks and config under the
// locks and refuses, with every conflict named, when they moved since the
// task's base in a way the task's changes cannot go on top of.
func (a *applyRun) recheck() error {
	var err error
	if a.cur, err = readRefs(a.fl); err != nil {
		return err
	}
	if a.folderIdx, err = readIndexFile(a.fl.index()); err != nil {
		return err
	}
	if a.plan, err = planIndex(a.base, entriesOf(a.folderIdx), a.eff); err != nil {
		return err
	}
	hooks, err := hashHooks(a.fl)
	if err != nil {
		return err
	}
	config, err := hashConfig(a.fl)
	if err != nil {
		return err
	}
	items := refConflicts(a.cur, a.eff)
	items = append(items, headConflict(a.base, a.cur, a.eff)...)
	items = append(items, a.plan.conflicts...)
	if a.opts.Config {
		items = append(items, fileConflicts("config", config, a.eff.Config)...)
	}
	if a.opts.Hooks {
		items = append(items, fileConflicts("hook", hooks, a.eff.Hooks)...)
	}
	if len(items) > 0 {
		return &ConflictError{Op: "apply", Items: items}
	}
	return nil
}

// lockPackedRefs takes packed-refs' lock when a ref to delete is packed
// there, and prepares the file without it: a deleted ref must leave
// packed-refs too.
func (a *applyRun) lockPackedRefs() error {
	drop := map[string]bool{}
	for _, r := range a.refs {
		if r.New == "" && a.cur[r.Name] != "" {
			drop[r.Name] = true
		}
	}
	if len(drop) == 0 {
		return nil
	}
	pp := filepath.Join(a.fl.CommonDir, "packed-refs")
	b, err := os.ReadFile(pp)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // no packed-refs: the loose files are all there is
	}
	if err != nil {
		// Deleting only the loose file would let the packed value show
		// through: refuse before anything is written.
		return fmt.Errorf("gitstate: apply: read %s: %w (no ref or index was changed; the task's changes are kept in its copy: retry once packed-refs can be read)", pp, err)
	}
	nb, dropped := withoutPacked(b, drop)
	if !dropped {
		return nil
	}
	if a.packedLock, err = a.lock(pp); err != nil {
		return err
	}
	a.packedNew = nb
	return nil
}

// writeIndex writes the folder's index with the task's entries at the
// paths it touched, when that changes anything, and records the undo.
func (a *applyRun) writeIndex() error {
	if a.idxLock == nil || len(a.plan.paths) == 0 {
		return nil
	}
	b, changed, err := mergedIndex(a.folderIdx, a.plan)
	if err != nil {
		return err
	}
	if changed {
		if err := a.idxLock.write(b, 0); err != nil {
			return err
		}
		if err := a.idxLock.commit(); err != nil {
			return err
		}
	}
	a.undo.Index = indexUndoOf(a.plan)
	return nil
}

// writeRefs moves each ref that does not hold its new value yet (HEAD
// last), writes their reflog entries when asked, and then packed-refs
// without the deleted refs.
func (a *applyRun) writeRefs() error {
	for _, r := range a.refs {
		lf := a.refLocks[r.Name]
		if a.cur[r.Name] == r.New {
			continue
		}
		a.undo.Refs = append(a.undo.Refs, RefUndo{Name: r.Name, Before: a.cur[r.Name], After: r.New})
		if r.New == "" {
			if err := lf.remove(); err != nil {
				return err
			}
			continue
		}
		if err := lf.write([]byte(r.New+"\n"), 0); err != nil {
			return err
		}
		if err := lf.commit(); err != nil {
			return err
		}
	}
	if a.opts.Reflog != "" && len(a.undo.Refs) > 0 {
		if err := writeReflogs(a.fl, a.cur, a.undo.Refs, a.opts.Reflog, time.Now(), a.lock); err != nil {
			return err
		}
	}
	if a.packedLock != nil {
		if err := a.packedLock.write(a.packedNew, 0); err != nil {
			return err
		}
		if err := a.packedLock.commit(); err != nil {
			return err
		}
	}
	return nil
}

// writeConfigAndHooks replaces the config files and hooks the task
// changed, each only when opts say a person approved that kind.
func (a *applyRun) writeConfigAndHooks() error {
	if a.opts.Config {
		for _, c := range a.eff.Config {
			src := configFiles(a.cl)[c.Name]
			dst, ok := configFiles(a.fl)[c.Name]
			if !ok {
				return fmt.Errorf("%w: config file %q", ErrMalformed, c.Name)
			}
			fu, err := replaceFile(src, dst, c, a.w)
			if err != nil {
				return err
			}
			fu.Name = c.Name
			a.undo.Files = append(a.undo.Files, fu)
		}
	}
	if a.opts.Hooks {
		for _, c := range a.eff.Hooks {
			if !validHookName(c.Name) {
				return fmt.Errorf("%w: hook name %q", ErrMalformed, c.Name)
			}
			fu, err := replaceFile(filepath.Join(a.cl.hooksDir(), c.Name), filepath.Join(a.fl.hooksDir(), c.Name), c, a.w)
			if err != nil {
				return err
			}
			fu.Name = "hooks/" + c.Name
			a.undo.Files = append(a.undo.Files, fu)
		}
	}
	return nil
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
	} else if !errors.Is(err, fs.ErrNotExist) {
		// What it replaces must be kept for undo: refuse when it cannot be read.
		return fu, fmt.Errorf("gitstate: read %s: %w", dst, err)
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
