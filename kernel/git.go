package kernel

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kulehq/kule/kernel/internal/apply"
	"github.com/kulehq/kule/kernel/internal/atomicfile"
	"github.com/kulehq/kule/kernel/internal/gitstate"
	"github.com/kulehq/kule/kernel/internal/relpath"
	"github.com/kulehq/kule/kernel/internal/task"
)

// This file is where the engine meets kernel/internal/gitstate: every `.git` is left
// out of the file-by-file comparison (scan.IsGitPath) and judged by meaning
// here instead.

// ErrGitWaits: the task's repository changes need a person's approval (a
// history rewrite, or staged content that differs from its file).
var ErrGitWaits = errors.New("git changes wait for a person")

// GitApproval is what a person approved of a task's repository changes.
type GitApproval struct {
	Rewrites      bool // refs that are not fast-forwards
	StagedDiffers bool // staged entries whose content differs from the file
	Hooks         bool // changed hooks (they run on git commands)
	Config        bool // changed config (it can make git run code)
}

func gitBasePath(p task.Paths) string { return filepath.Join(p.Base, "git.json") }

func gitUndoPath(p task.Paths, checkpoint int) string {
	return filepath.Join(p.Checkpoints, fmt.Sprintf("git-%d.json", checkpoint))
}

// saveGitBase snapshots the copy's repositories into the task's base.
func saveGitBase(t *task.Task) error {
	b, err := gitstate.TakeBase(t.Paths.Copy)
	if err != nil {
		return err
	}
	return b.Save(gitBasePath(t.Paths))
}

// gitWaits lists what in effs needs an approval that a does not give, for a
// commit made without the policy (CommitOptions.Policy false: tests only);
// every client's commit is judged by the policy instead (gitjudge.go).
func gitWaits(effs []*gitstate.Effects, a GitApproval) []string {
	var out []string
	for _, e := range effs {
		where := ""
		if e.Repo != "." {
			where = e.Repo + ": "
		}
		if rw := e.Rewrites(); len(rw) > 0 && !a.Rewrites {
			out = append(out, where+"history rewrite of "+strings.Join(rw, ", "))
		}
		if len(e.StagedDiffers) > 0 && !a.StagedDiffers {
			out = append(out, where+"staged content differs from the file: "+strings.Join(e.StagedDiffers, ", "))
		}
	}
	return out
}

// gitOps plans the repositories' effects as journal ops: the new objects
// are added to the folder's repositories now (objects are only ever added),
// and the writes of index, refs, config and hooks become Lock ops that the
// commit's journal carries out with the files, so a crash leaves the folder
// and its repositories as before or as committed, as a whole. It returns the
// undo of those writes, which the caller keeps beside the checkpoint.
func gitOps(t *task.Task, b *gitstate.Base, effs []*gitstate.Effects, a GitApproval, reflog string) ([]apply.Op, *gitstate.UndoSet, error) {
	writes, undo, err := b.PlanApply(t.Folder, t.Paths.Copy, effs, gitstate.ApplyOptions{Hooks: a.Hooks, Config: a.Config, Reflog: reflog})
	if err != nil {
		return nil, nil, err
	}
	ops, err := lockOps(t.Folder, writes)
	return ops, undo, err
}

func lockOps(folder string, writes []gitstate.Write) ([]apply.Op, error) {
	var ops []apply.Op
	for _, w := range writes {
		rel, err := w.Rel(folder)
		if err != nil {
			return nil, err
		}
		ops = append(ops, apply.Op{Kind: apply.Lock, Path: relpath.Path(rel), Data: w.Data, Mode: uint32(w.Mode.Perm()), Remove: w.Remove, Expect: w.Expect})
	}
	return ops, nil
}

// saveGitUndo keeps a commit's repository undo beside its checkpoint,
// before the journal that applies it.
func saveGitUndo(t *task.Task, checkpoint int, undo *gitstate.UndoSet) error {
	raw, err := json.Marshal(undo)
	if err != nil {
		return err
	}
	return atomicfile.Write(gitUndoPath(t.Paths, checkpoint), raw, 0o600)
}

// gitJournal is what finishing a commit or an undo needs of the
// repositories.
type gitJournal struct {
	Hooks  bool `json:"hooks,omitempty"`
	Config bool `json:"config,omitempty"`
	// Selected: the policy chose what went in, Select by repository; the
	// base moves for that alone (gitstate.Base.AfterSelected).
	Selected bool                          `json:"selected,omitempty"`
	Select   map[string]gitstate.Selection `json:"select,omitempty"`
}

// finishGitCommit moves the git base once the folder's repositories hold
// the commit. It is idempotent.
func finishGitCommit(t *task.Task, g *gitJournal) error {
	b, err := gitstate.LoadBase(gitBasePath(t.Paths))
	if err != nil {
		return err
	}
	var nb *gitstate.Base
	if g.Selected {
		nb, err = b.AfterSelected(t.Paths.Copy, g.Select)
	} else {
		nb, err = b.After(t.Paths.Copy, gitstate.ApplyOptions{Hooks: g.Hooks, Config: g.Config})
	}
	if err != nil {
		return err
	}
	return nb.Save(gitBasePath(t.Paths))
}

// undoGitOps plans the revert of a checkpoint's repository changes in the
// folder as journal ops; nil when the checkpoint changed no repository.
func undoGitOps(t *task.Task, checkpoint int) ([]apply.Op, error) {
	set, err := loadGitUndo(t, checkpoint)
	if err != nil || set == nil {
		return nil, err
	}
	writes, err := gitstate.PlanRevert(t.Folder, set)
	if err != nil {
		return nil, err
	}
	return lockOps(t.Folder, writes)
}

func loadGitUndo(t *task.Task, checkpoint int) (*gitstate.UndoSet, error) {
	raw, err := os.ReadFile(gitUndoPath(t.Paths, checkpoint))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var set gitstate.UndoSet
	if err := json.Unmarshal(raw, &set); err != nil {
		return nil, fmt.Errorf("git undo of checkpoint %d: %w", checkpoint, err)
	}
	return &set, nil
}

// finishGitUndo follows an undone checkpoint's repository changes in the
// copy (so they do not reappear as pending) and moves the git base. It is
// idempotent: the undo record goes last.
func finishGitUndo(t *task.Task, checkpoint int) error {
	set, err := loadGitUndo(t, checkpoint)
	if err != nil || set == nil {
		return err
	}
	// The copy held what the commit wrote; if the task moved on since, it
	// keeps its own state and the folder's differences show as conflicts
	// at the next commit rather than being lost.
	_ = gitstate.RevertSet(t.Paths.Copy, set)
	// The base moves for what the undo took back alone: a part the commit
	// held back (a denied hook, a config that waits) stays pending.
	b, err := gitstate.LoadBase(gitBasePath(t.Paths))
	if err != nil {
		return err
	}
	nb, err := b.AfterSelected(t.Paths.Copy, set.Selection())
	if err != nil {
		return err
	}
	if err := nb.Save(gitBasePath(t.Paths)); err != nil {
		return err
	}
	if err := os.Remove(gitUndoPath(t.Paths, checkpoint)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// applicableGit leaves out repositories a commit never applies (one the
// task removed or made anew: reported, not applied).
func applicableGit(effs []*gitstate.Effects) []*gitstate.Effects {
	var out []*gitstate.Effects
	for _, e := range effs {
		if !e.Gone && !e.Made && !e.Outside {
			out = append(out, e)
		}
	}
	return out
}

func gitLines(effs []*gitstate.Effects) []string {
	var out []string
	for _, e := range effs {
		out = append(out, e.Lines()...)
	}
	return out
}

// GitLines are the lines a person reads about the repositories' changes;
// once JudgeStatus judged the status, each judged line carries its verdict
// and rules.
func (s *Status) GitLines() []string {
	if s.judged != nil {
		return gitLinesJudged(s.Git, s.judged)
	}
	return gitLines(s.Git)
}
