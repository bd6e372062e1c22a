package graduation

import (
	"context"
	"crypto/ed25519"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kulehq/kule/kernel/internal/history"
	"github.com/kulehq/kule/kernel/internal/memory"
	"github.com/kulehq/kule/kernel/internal/policy"
)

var t0 = time.Date(2030, 3, 1, 9, 0, 0, 0, time.UTC)

const folder = "/work/project"

// good is a run Kule saw end well in task, where the person approved a
// change the rule asked about and the commit was kept.
func good(id int64, task string, at time.Time, rule string) Run {
	return Run{ID: id, Task: task, Folder: folder, Trusted: true, Ended: at, Succeeded: true,
		Uses: []Use{{Rule: rule, Approved: true}}, Outcome: memory.OutcomeCommitted, OutcomeAt: at.Add(time.Minute),
		Paths: []string{"go.mod"}}
}

// enough is five good runs in three tasks, one a day from t0.
func enough(rule string) []Run {
	tasks := []string{"aaaa0001", "bbbb0002", "cccc0003", "aaaa0001", "bbbb0002"}
	var out []Run
	for i, tk := range tasks {
		out = append(out, good(int64(i+1), tk, t0.Add(time.Duration(i)*24*time.Hour), rule))
	}
	return out
}

func keeper(t *testing.T, now *time.Time) *Keeper {
	t.Helper()
	home := t.TempDir()
	_, priv, _ := ed25519.GenerateKey(nil)
	return &Keeper{Home: home, Settings: Defaults(), Now: func() time.Time { return *now }, Log: history.Open(LogPath(home), priv)}
}

// ready is the first moment every threshold holds for enough(): a week
// after the first success, and the last commit kept a day.
var ready = t0.Add(7 * 24 * time.Hour)

// TestProposalExactlyWhenThresholdsHold: the proposal appears at the
// moment the last threshold is met, and with any threshold one short it
// does not.
func TestProposalExactlyWhenThresholdsHold(t *testing.T) {
	t.Parallel()
	rule := "manifests-and-lockfiles"
	cases := map[string]struct {
		runs []Run
		now  time.Time
		want bool
	}{
		"all hold":            {enough(rule), ready, true},
		"cooldown one short":  {enough(rule), ready.Add(-time.Nanosecond), false},
		"successes one short": {enough(rule)[1:], ready.Add(24 * time.Hour), false},
		"tasks one short": {func() []Run {
			rs := enough(rule)
			for i := range rs {
				if rs[i].Task == "cccc0003" {
					rs[i].Task = "aaaa0001"
				}
			}
			return rs
		}(), ready, false},
		"kept one short": {func() []Run {
			rs := enough(rule)
			last := &rs[len(rs)-1]
			last.OutcomeAt = ready.Add(-24*time.Hour + time.Nanosecond)
			return rs
		}(), ready, false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			now := c.now
			k := keeper(t, &now)
			rep, err := k.Review(c.runs)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(rep.Proposals) == 1; got != c.want {
				t.Fatalf("proposal %v, want %v: %+v", got, c.want, rep.Proposals)
			}
			if c.want {
				p := rep.Proposals[0]
				if p.Category.Rule != rule || p.Successes != 5 || p.Tasks != 3 || len(p.Evidence) != 5 {
					t.Fatalf("proposal %+v", p)
				}
			}
		})
	}
}

// TestForgedSuccessCountsForNothing: an agent that writes "tests passed"
// into a file, or says it succeeded, while Kule saw the run fail, earns
// nothing; and a run the person did not approve (the agent's own
// approval, or none) earns nothing either.
func TestForgedSuccessCountsForNothing(t *testing.T) {
	t.Parallel()
	rule := "ci"
	runs := enough(rule)
	// The fifth "success": the command exited 1 after writing the file.
	runs[4].Succeeded, runs[4].Failed = false, true
	runs[4].Paths = append(runs[4].Paths, "TEST_RESULTS.txt")
	now := ready.Add(30 * 24 * time.Hour)
	k := keeper(t, &now)
	rep, _ := k.Review(runs)
	if len(rep.Proposals) != 0 {
		t.Fatalf("a failed run counted: %+v", rep.Proposals)
	}
	// Without the person's approval: ten runs that only passed.
	var quiet []Run
	for i := 0; i < 10; i++ {
		r := good(int64(100+i), []string{"a", "b", "c"}[i%3], t0.Add(time.Duration(i)*time.Hour), "runs-code")
		r.Uses[0].Approved = false
		r.Uses[0].Lifted = true
		quiet = append(quiet, r)
	}
	rep, _ = k.Review(quiet)
	if len(rep.Proposals) != 0 {
		t.Fatalf("runs nobody approved counted: %+v", rep.Proposals)
	}
}

// TestUntrustedRunsEarnNothing: runs whose input was untrusted (a chat
// stranger's prompt, recalled items not Kule's own) are no evidence.
func TestUntrustedRunsEarnNothing(t *testing.T) {
	t.Parallel()
	runs := enough("ci")
	runs[2].Trusted = false
	now := ready.Add(30 * 24 * time.Hour)
	k := keeper(t, &now)
	rep, _ := k.Review(runs)
	if len(rep.Proposals) != 0 {
		t.Fatalf("an untrusted run counted: %+v", rep.Proposals)
	}
}

// TestNeverGraduate: mass deletes and history rewrites are not categories
// (their approvals are not rememberable), unknown-hosts and home-writes
// never graduate for a whole folder, and nothing under .kule/ does.
func TestNeverGraduate(t *testing.T) {
	t.Parallel()
	for _, c := range []Category{
		{Folder: folder, Rule: "unknown-hosts"},
		{Folder: folder, Rule: "home-writes"},
		{Folder: folder, Rule: policy.NoRule},
		{Folder: folder, Rule: "every-change"},
		{Folder: folder, Rule: "agent-instructions", Subject: ".kule/policy.cedar"},
	} {
		if Eligible(c) {
			t.Errorf("%s may graduate", c)
		}
	}
	if !Eligible(Category{Folder: folder, Rule: "unknown-hosts", Subject: "api.example.com:443", Host: true}) {
		t.Error("one host should be a category")
	}
	runs := enough("unknown-hosts")
	now := ready
	k := keeper(t, &now)
	if rep, _ := k.Review(runs); len(rep.Proposals) != 0 {
		t.Fatalf("unknown-hosts for a whole folder was proposed: %+v", rep.Proposals)
	}
}

// TestAcceptThenFailureDemotes: accepting a proposal keeps a graduated
// permit in rules.cedar that lets the rule's changes pass; one failure in
// the category withdraws it, resets the count and says so, and the
// history holds both, signed.
func TestAcceptThenFailureDemotes(t *testing.T) {
	t.Parallel()
	rule := "manifests-and-lockfiles"
	now := ready
	k := keeper(t, &now)
	runs := enough(rule)
	rep, err := k.Review(runs)
	if err != nil || len(rep.Proposals) != 1 {
		t.Fatalf("%v %+v", err, rep)
	}
	id := rep.Proposals[0].ID
	if _, _, err := k.Accept(runs, "gnope"); err == nil {
		t.Fatal("accepting an unknown id should fail")
	}
	p, r, err := k.Accept(runs, id)
	if err != nil {
		t.Fatal(err)
	}
	if r.Graduated != id || r.Subject != "" || p.ID != id || !strings.Contains(r.String(), "graduated") {
		t.Fatalf("rule %+v", r)
	}
	if pass(t, k.Home, "go.mod", false) != policy.Pass {
		t.Fatal("the graduated rule should let go.mod through")
	}
	// The input-trust gate: a run with untrusted input asks again.
	if pass(t, k.Home, "go.mod", true) != policy.Ask {
		t.Fatal("an untrusted run got the graduated permit")
	}
	if pass(t, k.Home, ".kule/policy.cedar", false) == policy.Pass {
		t.Fatal("a graduated rule let a change under .kule/ through")
	}
	// Accepted: no longer proposed.
	if rep, _ := k.Review(runs); len(rep.Proposals) != 0 {
		t.Fatalf("still proposed after accepting: %+v", rep.Proposals)
	}
	// A later run, let through by the graduated rule, has its commit undone.
	now = now.Add(24 * time.Hour)
	bad := good(99, "dddd0004", now, rule)
	bad.Uses[0] = Use{Rule: rule, Lifted: true}
	bad.Outcome, bad.OutcomeAt = memory.OutcomeUndone, now.Add(time.Hour)
	now = now.Add(2 * time.Hour)
	rep, err = k.Review(append(runs, bad))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Demotions) != 1 || rep.Demotions[0].Withdrawn != id || !strings.Contains(rep.Demotions[0].Line(), "withdrawn") {
		t.Fatalf("demotions %+v", rep.Demotions)
	}
	if pass(t, k.Home, "go.mod", false) != policy.Ask {
		t.Fatal("after the demotion go.mod should ask again")
	}
	rs, _ := policy.ReadRemembered(k.Home)
	if len(rs) != 0 {
		t.Fatalf("rules left: %+v", rs)
	}
	// The count starts again: the old successes no longer count, and a
	// second review says nothing new.
	now = now.Add(60 * 24 * time.Hour)
	rep, _ = k.Review(append(runs, bad))
	if len(rep.Proposals) != 0 || len(rep.Demotions) != 0 {
		t.Fatalf("after the reset: %+v", rep)
	}
	b, _ := os.ReadFile(LogPath(k.Home))
	if !strings.Contains(string(b), "graduation.accepted") || !strings.Contains(string(b), "graduation.demoted") {
		t.Fatalf("history: %s", b)
	}
}

// pass judges a modify of path in folder under the home's rules.
func pass(t *testing.T, home, path string, untrusted bool) policy.Outcome {
	t.Helper()
	e, err := policy.Load(home, folder, "")
	if err != nil {
		t.Fatal(err)
	}
	if untrusted {
		e = e.WithoutGraduated()
	}
	r := e.Judge(policy.TaskInfo{ID: "t"}, []policy.Request{{Action: policy.FileModify, Path: path, Effect: 0}})
	return r.Verdicts[0].Outcome
}

// TestFromMemory: the evidence read from memory's records, as the kernel
// keeps them: approvals, exit codes, commits and undos, on a clock the
// test moves.
func TestFromMemory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st, err := memory.Open(filepath.Join(dir, "memory.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := t0
	st.SetClock(func() time.Time { return now })
	ctx := context.Background()
	rule := "manifests-and-lockfiles"
	for i, tk := range []string{"aaaa0001", "bbbb0002", "cccc0003", "aaaa0001", "bbbb0002"} {
		id, err := st.StartRun(ctx, memory.Start{Task: tk, Folder: folder, Kind: memory.KindExec, Prompt: "go get x"})
		if err != nil {
			t.Fatal(err)
		}
		zero := 0
		if i == 4 {
			zero = 1 // exits 1 after writing "tests passed"
		}
		how := memory.EndDone
		if zero != 0 {
			how = memory.EndFailed
		}
		if _, err := st.EndRun(ctx, id, memory.End{Exit: &zero, How: how, Paths: []string{"go.mod", "PASSED"}}); err != nil {
			t.Fatal(err)
		}
		if err := st.Committed(ctx, tk, memory.Commit{Checkpoint: i + 1, By: "cli", Rules: map[string]memory.RuleUse{rule: {Asked: 1, Approved: 1}}}); err != nil {
			t.Fatal(err)
		}
		now = now.Add(24 * time.Hour)
	}
	rs, err := st.Runs(ctx, memory.Filter{Folder: folder})
	if err != nil {
		t.Fatal(err)
	}
	runs := FromMemory(rs)
	if len(runs) != 5 || !runs[0].Trusted || len(runs[0].Uses) != 1 || !runs[0].Uses[0].Approved {
		t.Fatalf("runs %+v", runs)
	}
	clock := t0.Add(40 * 24 * time.Hour)
	k := keeper(t, &clock)
	rep, _ := k.Review(runs)
	// The failed fifth run resets the count: four before it no longer count.
	if len(rep.Proposals) != 0 || len(rep.Demotions) != 1 {
		t.Fatalf("report %+v", rep)
	}
}
