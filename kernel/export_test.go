package kernel

import (
	"context"
	"testing"
)

// SkipGitJudging takes the policy's judging of git effects away for the
// rest of t (never in a parallel test): the attacks it stops then reach the
// folder, which the attack tests show.
func SkipGitJudging(t *testing.T) {
	gitSkip = true
	t.Cleanup(func() { gitSkip = false })
}

// SkipDeletedCount makes every commit's mass-delete count its own alone for
// the rest of t (never in a parallel test).
func SkipDeletedCount(t *testing.T) {
	deletedSkip = true
	t.Cleanup(func() { deletedSkip = false })
}

// FromFolds reports whether the status was read from the record of the
// overlay backend's folds rather than a walk of the whole copy.
func (s *Status) FromFolds() bool { return s.partial }

// WalkStatus is the status from a walk of the whole copy, leaving any
// record of folds as it is.
func (k *Kernel) WalkStatus(t *Task) (*Status, error) { return k.status(context.Background(), t) }
