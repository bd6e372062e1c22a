package kernel

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kulehq/kule/kernel/internal/atomicfile"

	"github.com/kulehq/kule/kernel/internal/effects"
	"github.com/kulehq/kule/kernel/internal/gitstate"
	"github.com/kulehq/kule/kernel/internal/manifest"
	"github.com/kulehq/kule/kernel/internal/policy"
	"github.com/kulehq/kule/kernel/internal/task"
)

// This file is where commit meets kernel/internal/policy: the policy in force for a
// task's folder rules on its effects, and a commit applies only what the
// ruling lets through. Commit judges under its locks, from the very status it
// then applies (commit.go), so nothing the policy did not see goes in.

// Judgement is the policy's ruling on a set of effects and what it lets a
// commit apply: what passes, and what asks when a person approved.
type Judgement struct {
	Ruling  policy.Ruling
	Pending []effects.Effect // the effects judged, in the order the ruling indexes them
	Approve bool             // what asks was approved
	allowed map[string]bool  // by effectKey
	// seen holds every path below a directory effect the policy was shown
	// (its facts); a commit leaves out what appeared there since.
	seen   map[string]bool
	listed map[string]bool // the directories whose contents were listed
	// Git holds the repositories' changes as judged items; their verdicts
	// follow the files' in Ruling.Verdicts, one per item.
	Git []GitItem
	// gitAsk, when set, chooses which git items that ask an approval lets
	// through (CommitOptions.SelectGit).
	gitAsk func(GitItem) bool
}

// lets reports whether the judgement lets a verdict's change through.
func (j *Judgement) lets(v policy.Verdict) bool {
	return v.Outcome == policy.Pass || (j.Approve && v.Outcome == policy.Ask)
}

// unseen reports whether full, below the directory effect at dir, appeared
// after the policy judged dir's contents.
func (j *Judgement) unseen(dir, full string) bool {
	return j != nil && j.listed[dir] && !j.seen[full]
}

// Judge rules on pending (file effects alone) with the policy in force for
// t (its group's, or the home's for its folder). approve lets through what
// the policy says waits for a person (never what it denies). A policy that
// cannot be read is an error: nothing may pass. JudgeStatus judges a whole
// status, its repositories' changes with its files.
func (k *Kernel) Judge(t *task.Task, pending []effects.Effect, approve bool) (*Judgement, error) {
	return k.judge(t, pending, nil, nil, nil, approve)
}

// JudgeStatus rules on everything of st a commit would apply: its pending
// file effects (ignored ones too with includeIgnored) and every change to
// its repositories, in one ruling. The status then prints each git line
// with its verdict.
func (k *Kernel) JudgeStatus(t *task.Task, st *Status, includeIgnored, approve bool) (*Judgement, error) {
	j, err := k.judge(t, st.Pending(includeIgnored), applicableGit(st.Git), st.gitBase, st.manifest, approve)
	if err == nil {
		st.judged = j
	}
	return j, err
}

func (k *Kernel) judge(t *task.Task, pending []effects.Effect, git []*gitstate.Effects, gitBase *gitstate.Base, m *manifest.Manifest, approve bool) (*Judgement, error) {
	eng, err := k.LoadPolicyFor(t)
	if err != nil {
		return nil, policyErr(err)
	}
	eng = k.trustGate(t, eng)
	facts := policy.GatherFacts(t.Paths.Copy, t.Folder, pending)
	reqs := policy.FromEffects(pending, facts)
	markTruncations(t, m, pending, reqs)
	info := TaskInfo(t)
	info.Deleted = loadDeleted(t)
	nfile := len(reqs)
	var items []GitItem
	if !gitSkip {
		items = gitItems(git, gitBase)
	}
	for _, it := range items {
		reqs = append(reqs, it.reqs...)
	}
	ruling := eng.Judge(info, reqs)
	judgeItems(items, ruling.Verdicts[nfile:])
	ruling.Verdicts = ruling.Verdicts[:nfile:nfile]
	for _, it := range items {
		ruling.Verdicts = append(ruling.Verdicts, it.Verdict)
	}
	j := &Judgement{Ruling: ruling, Pending: pending, Approve: approve, allowed: map[string]bool{}, seen: map[string]bool{}, Git: items}
	j.listed = map[string]bool{}
	for dir, below := range facts.Below {
		j.listed[dir] = true
		for _, p := range below {
			j.seen[p] = true
		}
	}
	lets := j.lets
	for _, v := range j.Ruling.Verdicts {
		if e, ok := j.effectOf(v); ok && lets(v) {
			j.allowed[effectKey(e)] = true
		}
	}
	// An effect goes in only if every request about it lets it through.
	for _, v := range j.Ruling.Verdicts {
		if e, ok := j.effectOf(v); ok && !lets(v) {
			delete(j.allowed, effectKey(e))
		}
	}
	return j, nil
}

// effectKey identifies an effect within one status.
func effectKey(e effects.Effect) string {
	return string(e.Kind) + "\x00" + e.Path + "\x00" + e.From
}

func (j *Judgement) effectOf(v policy.Verdict) (effects.Effect, bool) {
	i := v.Request.Effect
	if i < 0 || i >= len(j.Pending) {
		return effects.Effect{}, false
	}
	return j.Pending[i], true
}

// Allows reports whether the ruling lets e through. An effect it never
// judged is not let through.
func (j *Judgement) Allows(e effects.Effect) bool { return j.allowed[effectKey(e)] }

// Held splits what the ruling kept out of applied: what waits for a
// person's approval and what is denied, the repositories' items (whose
// Request.Effect is -1; GitHeld gives their lines) after the files.
func (j *Judgement) Held(applied []effects.Effect) (waiting, denied []policy.Verdict) {
	done := map[string]bool{}
	for _, e := range applied {
		done[effectKey(e)] = true
	}
	for i, v := range j.Ruling.Verdicts {
		e, ok := j.effectOf(v)
		if g := i - (len(j.Ruling.Verdicts) - len(j.Git)); g >= 0 {
			// A repository's item (GitHeld names it by its line).
			switch {
			case v.Outcome == policy.Deny:
				denied = append(denied, v)
			case !j.letsGit(g):
				waiting = append(waiting, v)
			}
			continue
		} else if !ok || done[effectKey(e)] {
			continue
		}
		switch {
		case v.Outcome == policy.Deny:
			denied = append(denied, v)
		case v.Outcome == policy.Ask && !j.Approve:
			waiting = append(waiting, v)
		}
	}
	return waiting, denied
}

// Remembered is what Remember kept.
type Remembered struct {
	Added   int
	Skipped int      // approvals that always ask (mass deletes, rewrites, links, .kule/)
	NotKept []string // paths whose names cannot be written as a rule
}

// Remember keeps, as rules for t's folder, the approvals of what asked and
// was applied.
func (k *Kernel) Remember(t *task.Task, j *Judgement, applied []effects.Effect) (*Remembered, error) {
	done := map[string]bool{}
	for _, e := range applied {
		done[effectKey(e)] = true
	}
	var approved []policy.Verdict
	r := &Remembered{}
	for _, v := range j.Ruling.Verdicts {
		e, ok := j.effectOf(v)
		if v.Outcome != policy.Ask || !ok || !done[effectKey(e)] {
			continue
		}
		if !v.Rememberable {
			r.Skipped++
			continue
		}
		approved = append(approved, v)
	}
	added, notKept, err := policy.Remember(k.store.Root, t.Folder, approved)
	if err != nil {
		return nil, fmt.Errorf("the commit was applied, but %w", err)
	}
	r.Added, r.NotKept = len(added), notKept
	return r, nil
}

// JudgeHome rules on applying the task's changes to paths in the person's
// home (relative to it, as `kule home` lists them), in that order. A person
// applies each change by hand, so a change that asks is theirs to apply;
// one the policy denies is never applied. A policy that cannot be read is
// an error: nothing may be applied.
func (k *Kernel) JudgeHome(t *task.Task, paths []string) ([]policy.Verdict, error) {
	eng, err := k.LoadPolicyFor(t)
	if err != nil {
		return nil, policyErr(err)
	}
	eng = k.trustGate(t, eng) // a graduated home file asks again for a run whose input was not all trusted
	reqs := make([]policy.Request, len(paths))
	for i, p := range paths {
		reqs[i] = policy.HomeRequest(p)
	}
	r := eng.Judge(TaskInfo(t), reqs)
	if len(r.Verdicts) != len(paths) {
		return nil, fmt.Errorf("policy: %d verdicts on %d home changes", len(r.Verdicts), len(paths))
	}
	return r.Verdicts, nil
}

// The overall ruling of a judgement, as `kule status --json` names it.
const (
	RulingPasses = "passes"
	RulingWaits  = "waits"
	RulingDenied = "denied"
)

// Overall is the judgement in one word: "denied" when anything is denied,
// else "waits" when anything waits for a person, else "passes".
func (j *Judgement) Overall() string {
	switch j.Ruling.Worst() {
	case policy.Deny:
		return RulingDenied
	case policy.Ask:
		return RulingWaits
	}
	return RulingPasses
}

// Reasons are the verdicts that keep something out, file and git alike:
// every one that waits or is denied, in the ruling's order.
func (j *Judgement) Reasons() []policy.Verdict {
	out := []policy.Verdict{}
	for _, v := range j.Ruling.Verdicts {
		if v.Outcome != policy.Pass {
			out = append(out, v)
		}
	}
	return out
}

// markTruncations marks the requests of files that a modify leaves with
// less than a tenth of the size the base recorded (policy.Truncation): they
// count as deletions for mass-delete rules. m is the base's manifest,
// loaded here when nil.
func markTruncations(t *task.Task, m *manifest.Manifest, pending []effects.Effect, reqs []policy.Request) {
	for i, e := range pending {
		if e.Kind != effects.Modify || e.NewType != effects.TypeFile {
			continue
		}
		if m == nil {
			var err error
			if m, err = manifest.Load(manifestPath(t.Paths)); err != nil {
				return // status says the base is damaged; nothing is marked
			}
		}
		if old, ok := m.Get(e.Path); ok && old.Type == effects.TypeFile && policy.Truncation(old.Size, e.Size) {
			reqs[i].Truncates = true
		}
	}
}

// deletedPath keeps how many files a task's commits deleted or truncated
// since the count last started over (at the task's making, or when a
// person approved a mass delete): mass-delete rules add up commits, so
// 15 deletions and 15 more in the next commit ask as 30 in one do.
func deletedPath(t *task.Task) string { return filepath.Join(t.Paths.Dir, "deleted.json") }

// deletedSkip, when set by a test, makes every commit count its deletions
// alone, as before the count was kept.
var deletedSkip bool

type deletedCount struct {
	Files int `json:"files"`
}

// loadDeleted is the task's count; 0 when none was kept (or it is
// unreadable, which a test of the write path rules out).
func loadDeleted(t *task.Task) int {
	if deletedSkip {
		return 0
	}
	b, err := os.ReadFile(deletedPath(t))
	if err != nil {
		return 0
	}
	var c deletedCount
	if json.Unmarshal(b, &c) != nil || c.Files < 0 {
		return 0
	}
	return c.Files
}

// countDeleted adds what a commit applied to the task's count, or starts
// it over when the commit applied a mass delete a person approved.
func countDeleted(t *task.Task, j *Judgement, applied []effects.Effect) error {
	if j == nil {
		return nil
	}
	done := map[string]bool{}
	for _, e := range applied {
		done[effectKey(e)] = true
	}
	n, approvedMass := 0, false
	for _, v := range j.Ruling.Verdicts {
		e, ok := j.effectOf(v)
		if !ok || !done[effectKey(e)] {
			continue
		}
		if v.Outcome == policy.Ask && slices.Contains(v.Rules, "mass-deletes") {
			approvedMass = true
		}
		if v.Request.Action == policy.FileDelete || v.Request.Truncates {
			n += max(v.Request.Count, 1)
		}
	}
	total := loadDeleted(t) + n
	if approvedMass {
		total = 0
	}
	if total == loadDeleted(t) {
		return nil
	}
	raw, err := json.Marshal(deletedCount{Files: total})
	if err != nil {
		return err
	}
	return atomicfile.Write(deletedPath(t), raw, 0o600)
}

// policyErr names the policy as what failed, once: the policy package's
// own errors already begin with it, the config's and the groups' do not.
func policyErr(err error) error {
	if strings.HasPrefix(err.Error(), "policy: ") {
		return err
	}
	return fmt.Errorf("policy: %w", err)
}
