package kernel

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kulehq/kule/kernel/gitstate"
	"github.com/kulehq/kule/kernel/task"
)

// This file is where the engine meets kernel/gitstate: every `.git` is left
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

// gitStatus compares the copy's repositories with the base's snapshots.
func gitStatus(t *task.Task) (*gitstate.Base, []*gitstate.Effects, error) {
	b, err := gitstate.LoadBase(gitBasePath(t.Paths))
	if err != nil {
		return nil, nil, err
	}
	effs, err := b.Compare(t.Paths.Copy)
	if err != nil {
		return nil, nil, err
	}
	return b, effs, nil
}

// gitWaits lists what in effs needs an approval that a does not give.
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

// commitGit applies the repositories' effects after the files were
// committed, keeps the undo beside the checkpoint and moves the git base.
func commitGit(t *task.Task, b *gitstate.Base, effs []*gitstate.Effects, a GitApproval, checkpoint int) error {
	opts := gitstate.ApplyOptions{Hooks: a.Hooks, Config: a.Config}
	undo, err := b.Apply(t.Folder, t.Paths.Copy, effs, opts)
	if undo != nil && len(undo.Repos) > 0 {
		raw, merr := json.Marshal(undo)
		if merr == nil {
			merr = os.WriteFile(gitUndoPath(t.Paths, checkpoint), raw, 0o600)
		}
		if merr != nil && err == nil {
			err = merr
		}
	}
	if err != nil {
		return err
	}
	nb, err := b.After(t.Paths.Copy, opts)
	if err != nil {
		return err
	}
	return nb.Save(gitBasePath(t.Paths))
}

// undoGit reverts the repositories' changes of a checkpoint in the folder,
// then in the copy (so the undone change does not reappear as pending), and
// moves the git base. It returns false when the checkpoint changed no
// repository.
func undoGit(t *task.Task, checkpoint int) (bool, error) {
	raw, err := os.ReadFile(gitUndoPath(t.Paths, checkpoint))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var set gitstate.UndoSet
	if err := json.Unmarshal(raw, &set); err != nil {
		return false, fmt.Errorf("git undo of checkpoint %d: %w", checkpoint, err)
	}
	if err := gitstate.RevertSet(t.Folder, &set); err != nil {
		return false, err
	}
	// The copy held what the commit wrote; if the task moved on since, it
	// keeps its own state and the folder's differences show as conflicts
	// at the next commit rather than being lost.
	_ = gitstate.RevertSet(t.Paths.Copy, &set)
	if err := os.Remove(gitUndoPath(t.Paths, checkpoint)); err != nil {
		return true, err
	}
	return true, saveGitBase(t)
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

// GitLines are the lines a person reads about the repositories' changes.
func (s *Status) GitLines() []string { return gitLines(s.Git) }

// GitWaits lists what of the repositories' changes waits for a person
// (history rewrites, staged content that differs from its file), given what
// was approved.
func (s *Status) GitWaits(a GitApproval) []string { return gitWaits(applicableGit(s.Git), a) }
