package kernel

import (
	"slices"
	"strings"

	"github.com/kulehq/kule/kernel/internal/gitstate"
	"github.com/kulehq/kule/kernel/internal/policy"
)

// This file makes every change a task made to a repository a policy
// request, judged with the file effects in one ruling: a ref created,
// moved or deleted (git.ref; a history rewrite is git.rewrite), HEAD
// moving (git.ref on HEAD), the index (git.index), a hook (git.hook) and a
// config file (git.config). A ref's move is also judged by what its new
// commits change: one request per path, classified as that file change
// would be (policy.BringsRequest), so a commit that changes go.mod waits
// as the change of go.mod does.

// Parts of a repository a GitItem judges.
const (
	GitPartRef    = "ref"
	GitPartIndex  = "index"
	GitPartHook   = "hook"
	GitPartConfig = "config"
)

// GitItem is one part of a repository's changes that a commit applies or
// keeps out as a whole: a ref, the index, a hook or a config file.
type GitItem struct {
	Repo string `json:"repo"`           // "." or the nested repository's path
	Part string `json:"part"`           // GitPartRef, GitPartIndex, GitPartHook, GitPartConfig
	Name string `json:"name,omitempty"` // the ref, hook or config file; "" for the index
	Line string `json:"line"`           // what `kule status` prints for it
	// Verdict is the item's: the most severe of its requests', with their
	// rules and reasons.
	Verdict policy.Verdict `json:"verdict"`
	// Requests are the verdicts of each request the item made.
	Requests []policy.Verdict `json:"requests"`

	reqs []policy.Request
}

// gitSkip, when set by a test, leaves git effects out of the ruling and
// has a commit apply them as opt.Git approves, unjudged: it shows the
// attacks the ruling stops.
var gitSkip bool

// gitItems makes the items and their requests for the repositories' changes.
func gitItems(effs []*gitstate.Effects, base *gitstate.Base) []GitItem {
	var out []GitItem
	for _, e := range effs {
		if e.Gone || e.Made || e.Outside {
			continue
		}
		pre := ""
		if e.Repo != "." && e.Repo != "" {
			pre = e.Repo + "/"
		}
		nested := pre != ""
		gitPath := func(name string) string { return pre + ".git/" + name }
		req := func(a policy.Action, path, reason, change string) policy.Request {
			r := policy.GitRequest(a, path, reason)
			r.GitChange, r.NestedRepo = change, nested
			return r
		}
		brings := func(path, kind, reason string) policy.Request {
			r := policy.BringsRequest(pre+path, kind, reason)
			r.NestedRepo = nested
			return r
		}
		baseRefs := baseRefsOf(base, e.Repo)
		for _, r := range e.Refs {
			it := GitItem{Repo: e.Repo, Part: GitPartRef, Name: r.Name, Line: e.RefLine(r)}
			path := r.Name
			if nested {
				path = gitPath(r.Name)
			}
			a, change := policy.GitRef, ""
			switch {
			case r.Kind == gitstate.RefRewrite:
				a = policy.GitRewrite
			case r.Kind == gitstate.RefDeleted:
				change = policy.GitDelete
			case r.Name == "HEAD":
				change = headChange(r, e, baseRefs)
			}
			it.reqs = append(it.reqs, req(a, path, strings.TrimPrefix(it.Line, "git: "), change))
			for _, c := range r.Brings {
				it.reqs = append(it.reqs, brings(c.Path, c.Kind, "the new commits of "+r.Name+" change it"))
			}
			if r.BringsErr != "" {
				// What the commits change cannot be read: judged as a
				// change inside .git that Kule could not read.
				it.reqs = append(it.reqs, brings(".git/objects", "modify", "what the new commits of "+r.Name+" change could not be read: "+r.BringsErr))
			}
			out = append(out, it)
		}
		if len(e.Index) > 0 || len(e.StagedDiffers) > 0 {
			line := e.IndexLine()
			if line == "" {
				line = e.StagedLine()
			}
			it := GitItem{Repo: e.Repo, Part: GitPartIndex, Line: line}
			it.reqs = append(it.reqs, req(policy.GitIndex, gitPath("index"), "the index changes", ""))
			if len(e.StagedDiffers) > 0 {
				it.reqs = append(it.reqs, req(policy.GitIndex, gitPath("index"), "staged content differs from the file: "+strings.Join(e.StagedDiffers, ", "), policy.GitStagedDiffers))
			}
			for _, c := range e.Index {
				if c.Stage != 0 {
					continue
				}
				it.reqs = append(it.reqs, brings(c.Path, c.Kind, "staged in the index: the next git commit records it"))
			}
			out = append(out, it)
		}
		for _, c := range e.Config {
			it := GitItem{Repo: e.Repo, Part: GitPartConfig, Name: c.Name, Line: e.ConfigLine(c)}
			reason := c.Name + " " + c.Kind
			if len(c.Keys) > 0 {
				reason = strings.Join(c.Keys, "; ")
			}
			it.reqs = append(it.reqs, req(policy.GitConfig, gitPath(c.Name), reason, ""))
			out = append(out, it)
		}
		for _, c := range e.Hooks {
			it := GitItem{Repo: e.Repo, Part: GitPartHook, Name: c.Name, Line: e.HookLine(c)}
			it.reqs = append(it.reqs, req(policy.GitHook, gitPath("hooks/"+c.Name), "hook "+c.Name+" "+c.Kind, ""))
			out = append(out, it)
		}
	}
	return out
}

// headChange says how HEAD moves: detached at a commit, onto a branch that
// has no commits (an orphan), or onto another branch.
func headChange(r gitstate.RefChange, e *gitstate.Effects, baseRefs map[string]string) string {
	target, ok := strings.CutPrefix(r.New, "ref: ")
	if !ok {
		return policy.GitDetach
	}
	if baseRefs[target] != "" {
		for _, o := range e.Refs {
			if o.Name == target && o.Kind == gitstate.RefDeleted {
				return policy.GitOrphan
			}
		}
		return policy.GitSwitch
	}
	for _, o := range e.Refs {
		if o.Name == target && o.New != "" {
			return policy.GitSwitch // a branch the task made, with commits
		}
	}
	return policy.GitOrphan
}

func baseRefsOf(b *gitstate.Base, repo string) map[string]string {
	if b == nil {
		return nil
	}
	for _, r := range b.Repos {
		if r.Path == repo && r.Snapshot != nil {
			return r.Snapshot.Refs
		}
	}
	return nil
}

// judgeItems sets each item's verdicts from the ruling's verdicts on its
// requests, in the order gitItems made them.
func judgeItems(items []GitItem, vs []policy.Verdict) {
	i := 0
	for k := range items {
		it := &items[k]
		it.Requests = vs[i : i+len(it.reqs)]
		i += len(it.reqs)
		it.Verdict = worstOf(it.reqs[0], it.Requests)
	}
}

// worstOf is the verdict of an item made of requests: the most severe
// outcome, every rule of the verdicts that have it, and their reasons.
func worstOf(main policy.Request, vs []policy.Verdict) policy.Verdict {
	w := policy.Pass
	for _, v := range vs {
		w = max(w, v.Outcome)
	}
	out := policy.Verdict{Request: main, Outcome: w}
	var reasons []string
	for _, v := range vs {
		if v.Outcome != w {
			continue
		}
		out.Rules = append(out.Rules, v.Rules...)
		if w == policy.Pass || v.Reason == "" {
			continue
		}
		r := v.Reason
		if v.Request.GitChange == policy.GitBrings {
			r = v.Request.Subject() + ": " + r
		}
		if !slices.Contains(reasons, r) {
			reasons = append(reasons, r)
		}
	}
	slices.Sort(out.Rules)
	out.Rules = slices.Compact(out.Rules)
	if len(reasons) > 8 {
		reasons = append(reasons[:8], "…")
	}
	out.Reason = strings.Join(reasons, "; ")
	return out
}

// gitSelection is what of the repositories the judgement lets a commit
// apply, by repository.
func (j *Judgement) gitSelection() map[string]gitstate.Selection {
	sel := map[string]gitstate.Selection{}
	for i, it := range j.Git {
		if !j.letsGit(i) {
			continue
		}
		s := sel[it.Repo]
		switch it.Part {
		case GitPartRef:
			s.Refs = append(s.Refs, it.Name)
		case GitPartIndex:
			s.Index = true
		case GitPartHook:
			s.Hooks = append(s.Hooks, it.Name)
		case GitPartConfig:
			s.Config = append(s.Config, it.Name)
		}
		sel[it.Repo] = s
	}
	return sel
}

// selectGit keeps of effs what sel lets through.
func selectGit(effs []*gitstate.Effects, sel map[string]gitstate.Selection) []*gitstate.Effects {
	var out []*gitstate.Effects
	for _, e := range effs {
		if o := e.Only(sel[e.Repo]); o != nil {
			out = append(out, o)
		}
	}
	return out
}

// GitHeld lists the repositories' items the ruling keeps out: what waits
// for a person's approval and what is denied.
func (j *Judgement) GitHeld() (waiting, denied []GitItem) {
	if j == nil {
		return nil, nil
	}
	for i, it := range j.Git {
		switch {
		case it.Verdict.Outcome == policy.Deny:
			denied = append(denied, it)
		case !j.letsGit(i):
			waiting = append(waiting, it)
		}
	}
	return waiting, denied
}

// letsGit reports whether the judgement lets the i-th git item through: its
// verdict does, and, for one that asks, the commit's SelectGit (set by
// chooseGit) chose it.
func (j *Judgement) letsGit(i int) bool {
	it := j.Git[i]
	if !j.lets(it.Verdict) {
		return false
	}
	return it.Verdict.Outcome == policy.Pass || j.gitAsk == nil || j.gitAsk(it)
}

// gitLinesJudged are the repositories' lines, each judged part followed by
// its verdict and rules ("· denied (git-hooks)").
func gitLinesJudged(effs []*gitstate.Effects, j *Judgement) []string {
	verdict := map[string]policy.Verdict{}
	for _, it := range j.Git {
		verdict[it.Line] = it.Verdict
	}
	var out []string
	for _, e := range effs {
		for _, l := range e.Lines() {
			if v, ok := verdict[l]; ok {
				l += " · " + v.Outcome.String()
				if len(v.Rules) > 0 {
					l += " (" + strings.Join(v.Rules, ", ") + ")"
				}
			}
			out = append(out, l)
		}
	}
	return out
}
