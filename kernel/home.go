package kernel

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kulehq/kule/kernel/internal/homelayer"
	"github.com/kulehq/kule/kernel/internal/policy"
	"github.com/kulehq/kule/kernel/internal/task"
)

// HomeLayer is the task's home layer: the directory its commands see as
// their home, and its record in the task's directory beside it, which the
// sandbox never exposes — a command that writes a .kule-home.json of its own
// into the layer changes nothing Kule trusts.
// A layer made by an older version, whose record lay inside it, is adopted
// on the way: its record moves beside it, naming the person's own home.
func HomeLayer(t *task.Task) homelayer.Layer {
	l := homeLayerOf(t.Paths)
	if home, err := os.UserHomeDir(); err == nil && home != "/" {
		_ = homelayer.Adopt(l, home) // on failure the layer stays unused: no record, no layer
	}
	return l
}

func homeLayerOf(p task.Paths) homelayer.Layer {
	l := homelayer.Layer{Dir: p.Home, Record: filepath.Join(p.Dir, "home.json")}
	if homeRecordInLayer {
		l.Record = filepath.Join(p.Home, ".kule-home.json")
	}
	return l
}

// homeRecordInLayer, set only by tests, keeps the layer's record inside the
// layer, where the task's commands can rewrite it: the attack the record's
// place guards against.
var homeRecordInLayer bool

// DiscardHome throws the task's home changes away: the layer is made anew
// from the home its record names.
func (k *Kernel) DiscardHome(t *task.Task) error { return homelayer.Discard(HomeLayer(t)) }

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
	if err := homelayer.Apply(HomeLayer(t), homeKept(t), rel); err != nil {
		return err
	}
	k.memHomeApplied(t, rel, v[0])
	return nil
}

// UndoHome takes the task's last home apply back and says which path.
func (k *Kernel) UndoHome(t *task.Task) (string, error) {
	rel, err := homelayer.Undo(HomeLayer(t), homeKept(t))
	if err == nil {
		k.memHomeUndone(t, rel)
	}
	return rel, err
}
