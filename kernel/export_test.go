package kernel

import "testing"

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
