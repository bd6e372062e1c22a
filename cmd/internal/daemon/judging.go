package daemon

import (
	"fmt"
	"strings"

	"github.com/kulehq/kule/kernel"
)

// The daemon judges nothing itself: what Review shows is the kernel's
// ruling (Kernel.Judge, the one judging path the CLI uses too), and a
// commit from the app is the kernel's Commit, which judges again under its
// locks and applies only what that ruling lets through. A policy that cannot
// be read refuses: nothing is shown as passing and nothing is applied.

// pathRuling is the worst verdict of the requests about one path, with the
// rules that gave it. The verdict is the policy's own Outcome; the app's JSON
// carries its word (Outcome.MarshalText: pass, ask or deny).
type pathRuling struct {
	Verdict kernel.Outcome
	Rule    string
	Reason  string
	// Remember is whether Approve and remember can keep the approval as a
	// rule: every request about the path that asks may be remembered (a
	// mass delete, a history rewrite or a link never is).
	Remember bool
}

// word is an outcome as the app's JSON spells it.
func word(o kernel.Outcome) string {
	b, _ := o.MarshalText() // never fails: every outcome has a word
	return string(b)
}

// judge rules on es with the policy in force for t.
func (d *Daemon) judge(t *kernel.Task, es []kernel.Effect) (*kernel.Judgement, map[string]pathRuling, error) {
	j, err := d.k.Judge(t, es, false)
	if err != nil {
		return nil, nil, err
	}
	return j, rulingsOf(j), nil
}

// rulingsOf gives each judged path its worst verdict (outcomes are ordered
// by severity). A path the policy made no request about is never let
// through by the kernel: it shows as denied, so the app never offers it as
// passing.
func rulingsOf(j *kernel.Judgement) map[string]pathRuling {
	out := map[string]pathRuling{}
	noRemember := map[string]bool{}
	for _, v := range j.Ruling.Verdicts {
		i := v.Request.Effect
		if i < 0 || i >= len(j.Pending) {
			continue
		}
		path := j.Pending[i].Path
		if v.Outcome == kernel.OutcomeAsk && !v.Rememberable {
			noRemember[path] = true
		}
		if old, ok := out[path]; ok && old.Verdict >= v.Outcome {
			continue
		}
		out[path] = pathRuling{Verdict: v.Outcome, Rule: strings.Join(v.Rules, ", "), Reason: v.Reason}
	}
	for path, r := range out {
		r.Remember = r.Verdict == kernel.OutcomeAsk && !noRemember[path]
		out[path] = r
	}
	for _, e := range j.Pending {
		if _, ok := out[e.Path]; !ok {
			out[e.Path] = pathRuling{Verdict: kernel.OutcomeDeny, Reason: "the policy made no ruling on it, so it is never committed"}
		}
	}
	return out
}

// commitsJudged makes a commit from the app fail closed: a policy that
// cannot be read refuses the commit, and the kernel's Commit judges under
// its locks (CommitOptions.Policy). Tests turn it off to show what it
// guards: then a commit with no policy in force let every change through.
var commitsJudged = true

// approvalLimits hands the kernel the paths a person approved, so that under
// its locks only those of what asks go in. Tests turn it off to show what it
// guards: then approving one path let in anything else that asked by then.
var approvalLimits = true

// rememberPaths keeps, as rules for t's folder, the approvals of the paths
// given that asked in the commit's own ruling and were applied. It returns
// the rules added.
func (d *Daemon) rememberPaths(t *kernel.Task, j *kernel.Judgement, applied []kernel.Effect, paths []string) ([]string, error) {
	added, notKept, err := d.k.RememberPaths(t, j, applied, paths)
	if err != nil {
		return nil, err
	}
	if len(notKept) > 0 {
		return added, fmt.Errorf("remember: %s cannot be written as a rule (approved this once only)", strings.Join(notKept, ", "))
	}
	return added, nil
}
