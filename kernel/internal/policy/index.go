package policy

import (
	"sync"

	cedar "github.com/cedar-policy/cedar-go"
	"github.com/cedar-policy/cedar-go/ast"
	"github.com/cedar-policy/cedar-go/types"
	xast "github.com/cedar-policy/cedar-go/x/exp/ast"
)

// actionSets are the policies that can apply to one action, each with its
// action scope already decided (and so removed): cedar-go evaluates
// `action in [ … ]` by walking sets for every request, which cost most of
// the time of a judgement before this index.
type actionSets struct {
	forbids, permits, remembered cedar.PolicyMap
}

// index prepares the per-action policy sets from the layers Load read. Each
// set is built at the first request for its action: a run judges one or two
// of Kule's actions, and building all of them took a third of every load.
func (e *Engine) index() {
	e.byAction = make(map[Action]func() *actionSets, len(Actions))
	for _, a := range Actions {
		uid := types.NewEntityUID(ActionType, types.String(a))
		e.byAction[a] = sync.OnceValue(func() *actionSets {
			return &actionSets{
				forbids:    scoped(e.forbids, uid),
				permits:    scoped(e.permits, uid),
				remembered: scoped(e.remembered, uid),
			}
		})
	}
}

// scoped returns the policies of m whose action scope holds uid, each with
// its action scope replaced by "any action".
func scoped(m cedar.PolicyMap, uid types.EntityUID) cedar.PolicyMap {
	out := cedar.PolicyMap{}
	for id, p := range m {
		x := *(*xast.Policy)(p.AST())
		holds, known := scopeHolds(x.Action, uid)
		switch {
		case !holds:
		case !known:
			// A scope this code does not know keeps the policy as
			// written: Cedar still checks it.
			out[id] = p
		default:
			x.Action = xast.ScopeTypeAll{}
			out[id] = cedar.NewPolicyFromAST((*ast.Policy)(&x))
		}
	}
	return out
}

// scopeHolds reports whether an action scope holds uid. Kule's actions
// belong to no action group, so `action in A` holds for A alone.
func scopeHolds(s xast.IsActionScopeNode, uid types.EntityUID) (holds, known bool) {
	switch s := s.(type) {
	case xast.ScopeTypeAll:
		return true, true
	case xast.ScopeTypeEq:
		return s.Entity == uid, true
	case xast.ScopeTypeIn:
		return s.Entity == uid, true
	case xast.ScopeTypeInSet:
		for _, x := range s.Entities {
			if x == uid {
				return true, true
			}
		}
		return false, true
	}
	return true, false
}
