package kernel

import (
	"bytes"
	"context"
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
	"time"

	"golang.org/x/sys/unix"

	"github.com/kulehq/kule/kernel/internal/apply"
	"github.com/kulehq/kule/kernel/internal/beneath"
	"github.com/kulehq/kule/kernel/internal/checkpoint"
	"github.com/kulehq/kule/kernel/internal/clone"
	"github.com/kulehq/kule/kernel/internal/crashpoint"
	"github.com/kulehq/kule/kernel/internal/effects"
	"github.com/kulehq/kule/kernel/internal/gitstate"
	"github.com/kulehq/kule/kernel/internal/manifest"
	"github.com/kulehq/kule/kernel/internal/relpath"
	"github.com/kulehq/kule/kernel/internal/task"
	"github.com/kulehq/kule/kernel/internal/walk"
)

// CommitOptions choose what a commit applies. Everything that decides what
// goes in runs under the commit's locks, on the very status the commit then
// applies: nothing that changes the copy meanwhile goes in unjudged.
type CommitOptions struct {
	// IncludeIgnored also applies paths the folder's .gitignore excludes.
	IncludeIgnored bool
	// Policy judges the effects with the policy in force for the folder
	// (Judge): only what passes goes in, and what asks when Approve. The
	// ruling is in the report; what it keeps out stays in the copy.
	Policy  bool
	Approve bool
	// Select, when set, also decides effect by effect what goes in (the
	// daemon's per-path choices); what it leaves out stays in the copy.
	Select func(effects.Effect) bool
	// SelectGit decides, with Approve, which of the repositories' parts
	// that wait for approval go in. When Select is set and SelectGit is
	// not, none does: an approval of files is never one of git.
	SelectGit func(GitItem) bool
	// Merge merges a file both the task and the folder changed since the
	// base, three ways; conflicts non-empty means the file cannot merge, and
	// the commit refuses as changed underneath, naming them. Nil merges
	// through the differs (entity by entity where one reads the file, else
	// by lines); NoMerge refuses every such file instead.
	Merge   func(path string, base, ours, theirs []byte) (merged []byte, conflicts, notes []string)
	NoMerge bool
	// Git is what a commit without the policy (Policy false, which only
	// tests make) applies of the repositories' changes; with the policy,
	// the ruling alone decides (git.go).
	Git GitApproval
	// Approval, when set, is who approved which paths: of what asks, only
	// those go in (with Approve), and the commit's history entry records
	// the ones it applied (approvals.go).
	Approval *Approval
}

// CommitReport says what a commit did.
type CommitReport struct {
	Applied    []effects.Effect
	Left       []effects.Effect // stayed in the copy: ignored or not selected
	Checkpoint int              // the checkpoint that undo uses; 0 when nothing was applied
	Merged     []string         // files merged three ways with the folder's changes, and how
	// Judgement is the policy's ruling the commit applied (Policy only).
	Judgement *Judgement

	// Git is the repositories' changes the commit applied (git.go).
	Git []*gitstate.Effects
	// GitRefused names what of the copy's .git points elsewhere: those
	// repositories' git changes were not applied (gitnew.go).
	GitRefused []string
}

// UnderneathError names the paths the person (or another task) changed in
// the folder since this task's base was taken.
type UnderneathError struct {
	Paths     []string
	Conflicts []string // for files both sides changed: what could not merge
}

func (e *UnderneathError) Error() string {
	q := make([]string, len(e.Paths))
	for i, p := range e.Paths {
		q[i] = effects.Quote(p)
	}
	what := strings.Join(q, ", ")
	if len(e.Conflicts) > 0 {
		what += " (" + strings.Join(e.Conflicts, "; ") + ")"
	}
	return fmt.Sprintf("commit: %v: %s — nothing was applied; the folder and the copy are as they were (look at those paths, then `kule rollback` to take the folder's version, or keep editing the copy)", ErrChangedUnderneath, what)
}

func (e *UnderneathError) Unwrap() error { return ErrChangedUnderneath }

// journalData is what a journal carries for finishing a commit or an undo.
type journalData struct {
	Kind       string         `json:"kind"` // "commit" | "undo"
	Checkpoint int            `json:"checkpoint"`
	Paths      []relpath.Path `json:"paths"` // top paths the change touched, for the base update
	Counts     effects.Counts `json:"counts"`
	Summary    []string       `json:"summary,omitempty"`
	// Git is set when the change wrote into the folder's repositories.
	Git      *gitJournal `json:"git,omitempty"`
	Approval *Approval   `json:"approval,omitempty"`
}

// Commit applies the task's changes to the folder (ARCHITECTURE.md §4).
// ctx ends the work that comes before the journal (the walk of the copy,
// the differs' merges); once the journal is written the commit goes to its
// end, so a cancelled commit leaves the folder as it was or as committed.
// Its outcome is remembered (memory.go); memory never changes the result.
func (k *Kernel) Commit(ctx context.Context, t *task.Task, opt CommitOptions) (*CommitReport, error) {
	rep, err := k.commit(ctx, t, opt)
	k.memCommit(t, rep, opt, err)
	return rep, err
}

func (k *Kernel) commit(ctx context.Context, t *task.Task, opt CommitOptions) (*CommitReport, error) {
	l, err := k.lock(t)
	if err != nil {
		return nil, err
	}
	defer l.Unlock()
	// A commit walks the whole copy, and re-syncs the base (a record of
	// folds is only for the base it was begun on): the next status walks.
	if err := forgetFolds(t); err != nil {
		return nil, err
	}
	fl, err := task.LockFile(k.store.FolderLockPath(t.Folder))
	if err != nil {
		return nil, err
	}
	defer fl.Unlock()

	// From here to the journal, one status is judged and applied.
	st, err := k.status(ctx, t)
	if err != nil {
		return nil, err
	}
	rep := &CommitReport{}
	chosen, err := k.choose(t, st, opt, rep, nil)
	if err != nil {
		return nil, err
	}
	if err := refuseNewRepos(t, st, chosen); err != nil {
		return nil, err
	}
	rep.GitRefused = gitRefused(st)
	git, gitSel := k.chooseGit(st, opt, rep)
	if len(chosen) == 0 && len(git) == 0 {
		return rep, nil
	}
	if len(git) > 0 { // .git is judged by meaning: see git.go
		if gitSel == nil {
			if w := gitWaits(git, opt.Git); len(w) > 0 {
				return nil, fmt.Errorf("commit: %w: %s — nothing was applied; a person approves them, or the task undoes them in its copy", ErrGitWaits, strings.Join(w, "; "))
			}
		}
		if err := st.gitBase.Check(t.Folder, git); err != nil {
			return nil, fmt.Errorf("commit: %w", err)
		}
	}
	if bad := k.underneath(t, st.manifest, chosen); len(bad) > 0 {
		merge := opt.Merge
		if merge == nil && !opt.NoMerge {
			ds, _, done := k.differs()
			defer done()
			merge = mergeByDiffers(ctx, ds)
		}
		merged, conflicts, ok := k.mergeUnderneath(t, st, chosen, bad, merge)
		if !ok {
			return nil, &UnderneathError{Paths: bad, Conflicts: conflicts}
		}
		// The merged files are now changes against the folder's version:
		// judge and check again from the start, from one new status.
		again, err := k.status(ctx, t)
		if err != nil {
			return nil, err
		}
		st = again
		if chosen, err = k.choose(t, st, opt, rep, merged); err != nil {
			return nil, err
		}
		git, gitSel = k.chooseGit(st, opt, rep)
		if bad := k.underneath(t, st.manifest, chosen); len(bad) > 0 {
			return nil, &UnderneathError{Paths: bad}
		}
		for p, how := range merged {
			rep.Merged = append(rep.Merged, effects.Quote(p)+": "+how)
		}
		sort.Strings(rep.Merged)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("commit: %w (nothing was applied)", err)
	}
	crashpoint.Hit("commit.judged")
	cp, err := checkpoint.Open(t.Paths.Checkpoints)
	if err != nil {
		return nil, err
	}
	defer cp.Close()
	p := &planner{t: t, cp: cp, ignored: !opt.IncludeIgnored, st: st, judged: rep.Judgement, env: k.envVault(t)}
	ops, items, err := p.plan(chosen)
	if err != nil {
		return nil, fmt.Errorf("commit: %w (nothing was applied)", err)
	}
	// What was judged is what goes in: each file is staged only if it
	// still holds the content planned here, from the judged status.
	p.pin(ops)
	// The repositories' writes join the files' in one journal (git.go).
	var gitUndo *gitstate.UndoSet
	var gitJ *gitJournal
	if len(git) > 0 {
		a, gj := opt.Git, &gitJournal{Hooks: opt.Git.Hooks, Config: opt.Git.Config}
		if gitSel != nil {
			// Only what the ruling let through is in git: all of it goes in.
			a.Hooks, a.Config = true, true
			gj = &gitJournal{Selected: true, Select: gitSel}
		}
		gops, undo, err := gitOps(t, st.gitBase, git, a, "kule: commit "+t.ID)
		if err != nil {
			return nil, fmt.Errorf("commit: %w (no file and no ref, index entry, hook or config of the folder was changed)", err)
		}
		ops, gitUndo, gitJ = append(ops, gops...), undo, gj
	}
	crashpoint.Hit("commit.planned")
	jid := apply.NewID()
	rec := &checkpoint.Record{Time: time.Now().UTC(), Commit: jid, Items: items}
	if err := cp.Save(rec); err != nil {
		return nil, fmt.Errorf("commit: keep a checkpoint: %w (nothing was applied)", err)
	}
	if gitUndo != nil && len(gitUndo.Repos) > 0 {
		if err := saveGitUndo(t, rec.ID, gitUndo); err != nil {
			_ = cp.MarkUndone(rec.ID)
			return nil, fmt.Errorf("commit: keep the repositories' undo: %w (nothing was applied)", err)
		}
	}
	crashpoint.Hit("commit.checkpoint-saved")
	data := journalData{Kind: "commit", Checkpoint: rec.ID, Paths: topPaths(chosen), Counts: effects.Count(chosen), Summary: append(summaryLines(chosen), gitLines(git)...), Git: gitJ, Approval: opt.Approval.within(rep.Judgement, chosen)}
	raw, _ := json.Marshal(data)
	j := &apply.Journal{ID: jid, Kind: "commit", Ops: ops, Data: raw}
	if err := apply.Run(t.Folder, t.Paths.Journal, j, counted(ctx, t.Paths.Copy, ops, k.opener(t, cp, p.env)), func(j *apply.Journal) error { return k.finish(t, j) }); err != nil {
		if _, statErr := os.Stat(t.Paths.Journal); errors.Is(statErr, os.ErrNotExist) {
			_ = cp.MarkUndone(rec.ID) // never applied: nothing for undo to take back
		}
		return nil, err
	}
	rep.Applied, rep.Checkpoint, rep.Git = chosen, rec.ID, git
	if err := countDeleted(t, rep.Judgement, chosen); err != nil {
		return rep, fmt.Errorf("commit: the change went in (checkpoint %d; kule undo takes it back), but keeping the count of deleted files failed: %w — the next commit counts its deletions alone", rec.ID, err)
	}
	if _, err := k.maskEnv(t); err != nil {
		return rep, fmt.Errorf("commit: the change went in (checkpoint %d; kule undo takes it back), but %w — the next command masks them first or does not run", rec.ID, err)
	}
	return rep, nil
}

// chooseGit is what of st's repositories a commit applies: with the
// policy, only the parts its ruling lets through (and the selection the
// commit's journal keeps, so that the base moves for those alone); without
// it, all of them, as opt.Git approves.
func (k *Kernel) chooseGit(st *Status, opt CommitOptions, rep *CommitReport) ([]*gitstate.Effects, map[string]gitstate.Selection) {
	git := applicableGit(st.Git)
	if gitSkip || rep.Judgement == nil || !opt.Policy {
		return git, nil
	}
	j := rep.Judgement
	switch {
	case opt.SelectGit != nil:
		j.gitAsk = opt.SelectGit
	case opt.Select != nil:
		j.gitAsk = func(GitItem) bool { return false }
	}
	sel := j.gitSelection()
	return selectGit(git, sel), sel
}

// choose splits st's effects into what the commit applies and what stays in
// the copy (rep.Left): ignored paths unless asked, what the policy or Select
// keeps out. merged names files a merge just wrote into the copy: they were
// chosen before, so Select is not asked again.
func (k *Kernel) choose(t *task.Task, st *Status, opt CommitOptions, rep *CommitReport, merged map[string]string) ([]effects.Effect, error) {
	var j *Judgement
	if opt.Policy {
		var err error
		if j, err = k.JudgeStatus(t, st, opt.IncludeIgnored, opt.Approve); err != nil {
			return nil, fmt.Errorf("commit: %w (nothing was applied)", err)
		}
	}
	rep.Left, rep.Judgement = nil, j
	var chosen []effects.Effect
	for _, e := range st.Effects {
		in := !e.Ignored || opt.IncludeIgnored
		if in && j != nil && (!j.Allows(e) || opt.Approval.keepsOut(j, e)) {
			in = false
		}
		if in && opt.Select != nil && merged[e.Path] == "" && !opt.Select(e) {
			in = false
		}
		if !in {
			rep.Left = append(rep.Left, e)
			continue
		}
		chosen = append(chosen, e)
	}
	return chosen, nil
}

// opener reads staged content: "copy:<rel>" from the task's copy (a
// settings file with its real values in place of placeholders),
// "blob:<id>" from the checkpoint store.
func (k *Kernel) opener(t *task.Task, cp *checkpoint.Store, ev *envVault) apply.Opener {
	return func(src string) (io.ReadCloser, error) {
		switch {
		case strings.HasPrefix(src, "copy:"):
			rel := src[len("copy:"):]
			if ev != nil && isSettingsFile(rel) {
				// The folder gets the real values, never placeholders.
				b, err := ev.readCopy(rel)
				if err != nil {
					return nil, err
				}
				return io.NopCloser(bytes.NewReader(b)), nil
			}
			return os.OpenFile(filepath.Join(t.Paths.Copy, rel), os.O_RDONLY|unix.O_NOFOLLOW, 0)
		case strings.HasPrefix(src, "blob:"):
			return cp.Open(src[len("blob:"):])
		}
		return nil, fmt.Errorf("unknown content source %q", src)
	}
}

// underneath lists the paths where the folder no longer holds what the base
// recorded, for the effects about to be applied.
func (k *Kernel) underneath(t *task.Task, m *manifest.Manifest, es []effects.Effect) []string {
	base := baseOf(t)
	bad := map[string]bool{}
	check := func(rel string) {
		if !sameAsBase(t.Folder, rel, m, base) {
			bad[rel] = true
		}
	}
	subtree := func(rel string) {
		check(rel)
		for _, e := range m.Below(rel) {
			check(e.Path)
		}
		// Entries the person added below a directory the task replaces.
		if w, err := walk.Walk(filepath.Join(t.Folder, rel), walk.Options{}); err == nil {
			for _, it := range w.Items {
				p := relpath.Join(rel, it.Path)
				if _, ok := m.Get(p); !ok {
					bad[p] = true
				}
			}
		}
	}
	// Directories this commit itself creates are not in the folder yet.
	made := map[string]bool{}
	for _, e := range es {
		if e.NewType == effects.TypeDir && (e.Kind == effects.Add || e.Kind == effects.Type || e.Kind == effects.Move) {
			made[e.Path] = true
		}
	}
	createdHere := func(d string) bool {
		for ; d != ""; d = relpath.Dir(d) {
			if made[d] {
				return true
			}
		}
		return false
	}
	parentOK := func(rel string) {
		if d := relpath.Dir(rel); d != "" && !createdHere(d) {
			it, err := walk.Lstat(t.Folder, d)
			if err != nil || it.Type != effects.TypeDir {
				bad[d] = true
			}
		}
	}
	for _, e := range es {
		parentOK(e.Path)
		switch {
		case e.Kind == effects.Move:
			parentOK(e.From)
			if e.Dir {
				subtree(e.From)
			} else {
				check(e.From)
			}
			check(e.Path)
		case e.Dir || e.OldType == effects.TypeDir && e.Kind != effects.Mode:
			subtree(e.Path)
		default:
			check(e.Path)
		}
	}
	out := make([]string, 0, len(bad))
	for p := range bad {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// sameAsBase reports whether the folder's entry at rel is what the base
// recorded (absent when the base has none). The folder's stat cache spares
// reading files nobody touched.
func sameAsBase(folder, rel string, m *manifest.Manifest, base clone.Base) bool {
	it, err := walk.Lstat(folder, rel)
	if err != nil {
		return false
	}
	e, ok := m.Get(rel)
	if !ok {
		return it.Type == effects.TypeNone
	}
	if it.Type != e.Type {
		return false
	}
	switch it.Type {
	case effects.TypeFile:
		if manifest.StatOf(it) == e.Folder {
			return true
		}
		same, err := base.Same(e, filepath.Join(folder, rel))
		return err == nil && same
	case effects.TypeLink:
		target, err := os.Readlink(filepath.Join(folder, rel))
		return err == nil && target == e.Target
	}
	return true
}

// planner turns effects into the ops that apply them and the checkpoint items
// that let undo take them back.
type planner struct {
	t       *task.Task
	cp      *checkpoint.Store
	st      *Status
	ignored bool // leave ignored entries below an added directory out
	ops     []apply.Op
	items   []checkpoint.Item
	at      map[string]int      // path → index in items: effects overlap (a move out of a deleted directory)
	want    map[string][32]byte // the copy's content hash of each file, as planned
	judged  *Judgement          // when set, what appeared below a new directory since is left out
	env     *envVault           // settings files are applied unmasked
}

// pin makes each staged file carry the content hash planned for it, so that
// staging refuses a copy that changed since (apply.ErrSourceChanged).
func (p *planner) pin(ops []apply.Op) {
	for i := range ops {
		op := &ops[i]
		if op.Kind != apply.Replace {
			continue
		}
		if op.Type == effects.TypeFile {
			op.Want = p.want[string(op.Path)]
		}
		for k := range op.Tree {
			if te := &op.Tree[k]; te.Type == effects.TypeFile {
				te.Want = p.want[relpath.Join(string(op.Path), te.Rel)]
			}
		}
	}
}

func (p *planner) plan(es []effects.Effect) ([]apply.Op, []checkpoint.Item, error) {
	moveDest := map[string]bool{}
	for _, e := range es {
		if e.Kind == effects.Move {
			moveDest[e.Path] = true
		}
	}
	for _, e := range es {
		if err := p.one(e, moveDest); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", effects.Quote(e.Path), err)
		}
	}
	return p.ops, p.items, nil
}

func (p *planner) one(e effects.Effect, moveDest map[string]bool) error {
	path := relpath.Path(e.Path)
	switch e.Kind {
	case effects.Delete:
		p.ops = append(p.ops, apply.Op{Kind: apply.Remove, Path: path})
		return p.record(e.Path, true, false)
	case effects.Move:
		p.ops = append(p.ops, apply.Op{Kind: apply.Move, Path: path, From: relpath.Path(e.From)})
		if err := p.record(e.From, true, false); err != nil {
			return err
		}
		return p.record(e.Path, false, true)
	case effects.Mode:
		p.ops = append(p.ops, apply.Op{Kind: apply.Chmod, Path: path, Mode: uint32(e.NewMode.Perm()) | modeExtra(e.NewMode)})
		return p.recordOne(e.Path, true, true)
	}
	// Add, Modify, Link, Type: stage the copy's entry and rename it in.
	op, err := p.stageFromCopy(e.Path, moveDest)
	if err != nil {
		return err
	}
	if op.Type != e.NewType {
		return fmt.Errorf("%w: it is a %s now, it was judged a %s (nothing was applied; commit again to judge it anew)", ErrCopyChanged, op.Type, e.NewType)
	}
	p.ops = append(p.ops, op)
	return p.record(e.Path, true, true)
}

func modeExtra(m os.FileMode) uint32 {
	var x uint32
	if m&os.ModeSetuid != 0 {
		x |= 0o4000
	}
	if m&os.ModeSetgid != 0 {
		x |= 0o2000
	}
	if m&os.ModeSticky != 0 {
		x |= 0o1000
	}
	return x
}

func (p *planner) stageFromCopy(rel string, moveDest map[string]bool) (apply.Op, error) {
	it, err := walk.Lstat(p.t.Paths.Copy, rel)
	if err != nil {
		return apply.Op{}, err
	}
	op := apply.Op{Kind: apply.Replace, Path: relpath.Path(rel), Type: it.Type, Mode: it.Mode, MTime: it.MTime, UID: int(it.UID), GID: int(it.GID)}
	switch it.Type {
	case effects.TypeFile:
		op.Src = "copy:" + rel
	case effects.TypeLink:
		op.Target, err = os.Readlink(filepath.Join(p.t.Paths.Copy, rel))
	case effects.TypeDir:
		var w *walk.Result
		w, err = walk.Walk(filepath.Join(p.t.Paths.Copy, rel), walk.Options{Skip: func(r string, _ effects.EntryType) bool {
			full := relpath.Join(rel, r)
			if moveDest[full] || filepath.Base(r) == ".git" {
				return true
			}
			if p.judged.unseen(rel, full) {
				return true // appeared after judging: stays in the copy for the next commit
			}
			return p.ignored && p.st.isIgnored(full)
		}})
		if err == nil {
			for _, c := range w.Items {
				te := apply.TreeEntry{Rel: c.Path, Type: c.Type, Mode: c.Mode, MTime: c.MTime, UID: int(c.UID), GID: int(c.GID)}
				full := relpath.Join(rel, c.Path)
				switch c.Type {
				case effects.TypeFile:
					te.Src = "copy:" + full
				case effects.TypeLink:
					te.Target, err = os.Readlink(filepath.Join(p.t.Paths.Copy, full))
				}
				op.Tree = append(op.Tree, te)
			}
		}
	default:
		return op, fmt.Errorf("nothing to apply: it is gone from the copy")
	}
	return op, err
}

// record adds checkpoint items for rel and, for a directory, everything below
// it: what the folder holds now (before) and what the copy holds (after).
func (p *planner) record(rel string, before, after bool) error {
	seen := map[string]bool{}
	var rels []string
	add := func(r string) {
		if !seen[r] {
			seen[r] = true
			rels = append(rels, r)
		}
	}
	add(rel)
	for _, root := range []struct {
		dir string
		on  bool
	}{{p.t.Folder, before}, {p.t.Paths.Copy, after}} {
		if !root.on {
			continue
		}
		inCopy := root.dir == p.t.Paths.Copy
		if it, err := walk.Lstat(root.dir, rel); err == nil && it.Type == effects.TypeDir {
			w, err := walk.Walk(filepath.Join(root.dir, rel), walk.Options{Skip: func(r string, _ effects.EntryType) bool {
				return filepath.Base(r) == ".git" || inCopy && p.judged.unseen(rel, relpath.Join(rel, r))
			}})
			if err != nil {
				return err
			}
			for _, c := range w.Items {
				add(relpath.Join(rel, c.Path))
			}
		}
	}
	for _, r := range rels {
		if err := p.recordOne(r, before, after); err != nil {
			return err
		}
	}
	return nil
}

func (p *planner) recordOne(rel string, before, after bool) error {
	item := checkpoint.Item{Path: rel, Before: checkpoint.State{Type: "none"}, After: checkpoint.State{Type: "none"}}
	var err error
	if before {
		if item.Before, err = p.state(p.t.Folder, rel, true); err != nil {
			return err
		}
	}
	if after {
		if item.After, err = p.state(p.t.Paths.Copy, rel, false); err != nil {
			return err
		}
	}
	if item.Before.Type == "none" && item.After.Type == "none" {
		return nil
	}
	if p.at == nil {
		p.at = map[string]int{}
	}
	if i, ok := p.at[rel]; ok {
		if before {
			p.items[i].Before = item.Before
		}
		if after {
			p.items[i].After = item.After
		}
		return nil
	}
	p.at[rel] = len(p.items)
	p.items = append(p.items, item)
	return nil
}

// state describes the entry at root/rel; keep stores a file's content in the
// checkpoint store (for what the folder holds before a change).
func (p *planner) state(root, rel string, keep bool) (checkpoint.State, error) {
	it, err := walk.Lstat(root, rel)
	if err != nil {
		return checkpoint.State{}, err
	}
	s := checkpoint.State{Type: it.Type.String(), Mode: it.Mode, MTime: time.Unix(0, it.MTime).UTC()}
	abs := filepath.Join(root, rel)
	switch it.Type {
	case effects.TypeNone:
		return checkpoint.State{Type: "none"}, nil
	case effects.TypeFile:
		if keep {
			s.Blob, s.Hash, err = p.cp.PutFile(abs)
		} else {
			var h [32]byte
			if root == p.t.Paths.Copy && isSettingsFile(rel) {
				var b []byte
				if b, err = p.env.readCopy(rel); err == nil {
					h = sha256.Sum256(b) // what the folder will hold
				}
			} else {
				h, err = clone.HashFile(abs)
			}
			s.Hash = hex.EncodeToString(h[:])
			if err == nil {
				if p.want == nil {
					p.want = map[string][32]byte{}
				}
				p.want[rel] = h
			}
		}
	case effects.TypeLink:
		s.Target, err = os.Readlink(abs)
	}
	return s, err
}

func (s *Status) isIgnored(rel string) bool {
	return s.ignore.Ignored(rel, false)
}

// topPaths are the paths whose base entries a change replaces.
func topPaths(es []effects.Effect) []relpath.Path {
	var out []relpath.Path
	for _, e := range es {
		out = append(out, relpath.Path(e.Path))
		if e.From != "" {
			out = append(out, relpath.Path(e.From))
		}
	}
	return out
}

func summaryLines(es []effects.Effect) []string {
	const most = 200
	var out []string
	for i, e := range es {
		if i == most {
			out = append(out, fmt.Sprintf("… and %d more", len(es)-most))
			break
		}
		out = append(out, e.String())
	}
	return out
}

// mergeUnderneath merges, three ways, every file that both the task and the
// folder changed since the base, when that is all that is in the way. A
// merged file is written into the copy and the folder's version becomes its
// base, so the commit then applies the merge as an ordinary change. It
// reports whether everything in the way merged.
func (k *Kernel) mergeUnderneath(t *task.Task, st *Status, chosen []effects.Effect, bad []string, merge func(string, []byte, []byte, []byte) ([]byte, []string, []string)) (map[string]string, []string, bool) {
	if merge == nil {
		return nil, nil, false
	}
	modified := map[string]bool{}
	for _, e := range chosen {
		if e.Kind == effects.Modify && e.NewType == effects.TypeFile {
			modified[e.Path] = true
		}
	}
	base := baseOf(t)
	type result struct {
		merged []byte
		how    string
	}
	results := map[string]result{}
	var conflicts []string
	for _, p := range bad {
		e, ok := st.manifest.Get(p)
		fi, err := walk.Lstat(t.Folder, p)
		if !modified[p] || !ok || err != nil || fi.Type != effects.TypeFile {
			return nil, nil, false // not a file both sides edited: refuse
		}
		r, err := base.Open(e)
		if err != nil {
			conflicts = append(conflicts, effects.Quote(p)+": the base does not keep it, so it cannot merge")
			continue
		}
		old, err := io.ReadAll(r)
		r.Close()
		ours, err2 := k.envVault(t).readCopy(p)
		theirs, err3 := os.ReadFile(filepath.Join(t.Folder, p))
		if err != nil || err2 != nil || err3 != nil {
			return nil, nil, false
		}
		merged, cs, notes := merge(p, old, ours, theirs)
		if len(cs) > 0 || merged == nil {
			for _, c := range cs {
				conflicts = append(conflicts, effects.Quote(p)+" "+c)
			}
			continue
		}
		how := "merged with the folder's changes"
		if len(notes) > 0 {
			how += " (" + strings.Join(notes, "; ") + ")"
		}
		results[p] = result{merged, how}
	}
	if len(conflicts) > 0 {
		return nil, conflicts, false
	}
	out := map[string]string{}
	var paths []string
	for p := range results {
		paths = append(paths, p)
	}
	// Take the folder's version as the base first, then write the merge:
	// its new metadata is what makes the next scan see the change.
	if err := k.resyncBase(t, paths); err != nil {
		return nil, []string{err.Error()}, false
	}
	// The merge goes into the copy beneath its root: a directory on the way
	// that the task turned into a link is an error, never written through.
	copyRoot, err := beneath.Open(t.Paths.Copy)
	if err != nil {
		return nil, []string{err.Error()}, false
	}
	defer copyRoot.Close()
	for p, r := range results {
		st, err := copyRoot.Lstat(p)
		if err != nil {
			return nil, []string{err.Error()}, false
		}
		if err := copyRoot.WriteFile(p, r.merged, os.FileMode(st.Mode&0o777)); err != nil {
			return nil, []string{err.Error()}, false
		}
		out[p] = r.how
	}
	return out, nil, true
}
