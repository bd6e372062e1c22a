package kernel

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/kulehq/kule/kernel/homelayer"
	"github.com/kulehq/kule/kernel/policy"
	"github.com/kulehq/kule/kernel/task"
)

// homeKept is where an apply keeps the person's file it replaced.
func homeKept(t *task.Task) string { return filepath.Join(t.Paths.Dir, "home-kept") }

// ApplyHome puts the task's version of rel (relative to the person's home)
// into their home, when the policy lets it: a change it denies is never
// applied, nor any under a policy that cannot be read. A change that asks
// is the person's to apply; this is their act.
func (k *Kernel) ApplyHome(t *task.Task, rel string) error {
	v, err := k.JudgeHome(t, []string{rel})
	if err != nil {
		return fmt.Errorf("home: %w; nothing was applied and your home is as it was", err)
	}
	if v[0].Outcome == policy.Deny {
		return fmt.Errorf("home: the policy denies ~/%s (%s: %s); nothing was applied and your home is as it was", rel, strings.Join(v[0].Rules, ", "), v[0].Reason)
	}
	return homelayer.Apply(t.Paths.Home, homeKept(t), rel)
}

// UndoHome takes the task's last home apply back and says which path.
func (k *Kernel) UndoHome(t *task.Task) (string, error) {
	return homelayer.Undo(t.Paths.Home, homeKept(t))
}
