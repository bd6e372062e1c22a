package policy

import (
	"sort"
	"strings"

	cedar "github.com/cedar-policy/cedar-go"
	"github.com/cedar-policy/cedar-go/types"
)

// Judge gives one verdict per request, in order. The context of every
// request carries the batch's deletions and truncations (a whole directory
// counts the files below it; moves are not deletions) added to the task's
// earlier ones (TaskInfo.Deleted), so judge a commit's requests together.
//
// The verdict of a request:
//
//  1. every forbid that matches it, or that fails to evaluate on it (a rule
//     that cannot be read stops what it would judge), determines it;
//  2. a determining forbid that says deny: Deny;
//  3. the ask forbids, less those of layer 1 that a remembered approval for
//     this folder, rule and path or host lets through: if any are left, Ask;
//  4. otherwise, if a permit matches (or a remembered approval let the
//     request through): Pass;
//  5. otherwise Ask, with the rule NoRule.
func (e *Engine) Judge(task TaskInfo, reqs []Request) Ruling {
	b := newBuilder(task, deletions(reqs)+task.Deleted)
	out := Ruling{Verdicts: make([]Verdict, len(reqs))}
	for i, r := range reqs {
		out.Verdicts[i] = e.judgeOne(b, r)
	}
	return out
}

func (e *Engine) judgeOne(b *builder, r Request) Verdict {
	v := Verdict{Request: r}
	if !r.Action.Valid() {
		v.Outcome, v.Rules = Deny, []string{"unknown-action"}
		v.Reason = "Kule does not know this action"
		return v
	}
	req, ents, tags := b.request(r)
	sets := e.byAction[r.Action]()

	var forbid []cedar.PolicyID
	if len(sets.forbids) > 0 {
		_, diag := cedar.Authorize(sets.forbids, ents, req)
		for _, reason := range diag.Reasons {
			forbid = append(forbid, reason.PolicyID)
		}
		for _, er := range diag.Errors {
			forbid = append(forbid, er.PolicyID)
		}
	}

	var deny, ask []*Rule
	for _, id := range forbid {
		m := e.meta[id]
		if m.Verdict == Deny {
			deny = append(deny, m)
		} else {
			ask = append(ask, m)
		}
	}
	if len(deny) > 0 {
		v.Outcome = Deny
		v.Rules, v.Reason = ids(deny), reasons(deny)
		return v
	}

	var lifted []string // rules that remembered approvals let through
	if len(ask) > 0 && len(sets.remembered) > 0 && tags&bKuleSettings == 0 {
		var rem map[string]bool
		if d, diag := cedar.Authorize(sets.remembered, ents, req); d == cedar.Allow {
			rem = map[string]bool{}
			for _, reason := range diag.Reasons {
				rem[e.meta[reason.PolicyID].For] = true
			}
		}
		left := ask[:0:0]
		for _, m := range ask {
			if m.Remember && m.Layer != LayerFolder && rem[m.ID] {
				lifted = append(lifted, m.ID)
				continue
			}
			left = append(left, m)
		}
		ask = left
	}
	if len(ask) > 0 {
		v.Outcome = Ask
		v.Rules, v.Reason = ids(ask), reasons(ask)
		v.Rememberable = true
		for _, m := range ask {
			if !m.Remember {
				v.Rememberable = false
			}
		}
		if tags&bKuleSettings != 0 {
			v.Rememberable = false
		}
		return v
	}
	if len(lifted) > 0 {
		sort.Strings(lifted)
		v.Outcome, v.Rules = Pass, compact(lifted)
		v.Reason = RememberedReason
		return v
	}

	if d, diag := cedar.Authorize(sets.permits, ents, req); d == cedar.Allow {
		pids := make([]cedar.PolicyID, len(diag.Reasons))
		for i, reason := range diag.Reasons {
			pids[i] = reason.PolicyID
		}
		v.Outcome = Pass
		v.Rules = e.ruleIDs(pids, func(m *Rule) string { return m.ID })
		return v
	}
	if len(sets.remembered) > 0 && tags&bKuleSettings == 0 {
		if d, diag := cedar.Authorize(sets.remembered, ents, req); d == cedar.Allow {
			for _, reason := range diag.Reasons {
				if e.meta[reason.PolicyID].For == NoRule {
					v.Outcome, v.Rules = Pass, []string{NoRule}
					v.Reason = RememberedReason
					return v
				}
			}
		}
	}
	v.Outcome, v.Rules = Ask, []string{NoRule}
	v.Reason = "no rule of the policy lets it pass"
	v.Rememberable = tags&bKuleSettings == 0
	return v
}

func ids(rs []*Rule) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	sort.Strings(out)
	return compact(out)
}

func reasons(rs []*Rule) string {
	sorted := append([]*Rule(nil), rs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].ID < sorted[j].ID })
	var out []string
	seen := map[string]bool{}
	for _, r := range sorted {
		if r.Reason != "" && !seen[r.Reason] {
			seen[r.Reason] = true
			out = append(out, r.Reason)
		}
	}
	return strings.Join(out, "; ")
}

var _ types.EntityGetter = pairGetter{}
