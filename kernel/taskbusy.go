package kernel

import "github.com/kulehq/kule/kernel/internal/task"

// TaskBusy reports whether another kule process holds t's lock now: a
// command runs in its copy, or a commit, rollback or undo is under way
// (what kule list shows as the task's state). It takes the lock for an
// instant when it is free; a lock file it cannot open counts as free.
func TaskBusy(t *task.Task) bool {
	l, err := task.TryLockFile(t.Paths.Lock)
	if err != nil {
		return false
	}
	if l == nil {
		return true
	}
	_ = l.Unlock()
	return false
}
