package kernel

import (
	"slices"

	"github.com/kulehq/kule/kernel/internal/effects"
	"github.com/kulehq/kule/kernel/internal/policy"
)

// Approval is who approved which of a commit's asked-about paths. A commit
// given one records it in its own history entry, written inside the
// commit's journal: the record and the change go in together or not at all,
// and it names only paths the commit applied.
type Approval struct {
	By    string   `json:"by"`    // who gave it: "app", "cli", a transport's operator
	Paths []string `json:"paths"` // the paths approved one by one, or every asked-about path applied
	// All approves everything that asks, as `kule commit --approve` does:
	// the record then names the asked-about paths the commit applied.
	All bool `json:"all,omitempty"`
}

// within keeps the approval's paths the commit applies, in order; nil when
// none is left (or a is nil). For an approval of All, they are the applied
// paths that asked in j.
func (a *Approval) within(j *Judgement, applied []effects.Effect) *Approval {
	if a == nil {
		return nil
	}
	var kept []string
	for _, e := range applied {
		named := slices.Contains(a.Paths, e.Path) || (a.All && asks(j, e))
		if named && !slices.Contains(kept, e.Path) {
			kept = append(kept, e.Path)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	return &Approval{By: a.By, Paths: kept}
}

// keepsOut reports whether e asks in j and a, given, does not name it:
// the person approved other paths, not this one, so it stays in the copy
// even when the commit lets through what asks.
func (a *Approval) keepsOut(j *Judgement, e effects.Effect) bool {
	if a == nil || a.All || slices.Contains(a.Paths, e.Path) {
		return false
	}
	return asks(j, e)
}

// asks reports whether the ruling j holds a verdict that e waits for a
// person.
func asks(j *Judgement, e effects.Effect) bool {
	if j == nil {
		return false
	}
	for _, v := range j.Ruling.Verdicts {
		if x, ok := j.effectOf(v); ok && v.Outcome == policy.Ask && effectKey(x) == effectKey(e) {
			return true
		}
	}
	return false
}
