package graduation

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kulehq/kule/kernel/internal/memory"
	"github.com/kulehq/kule/kernel/internal/policy"
)

const (
	api  = "api.example.com:443"
	evil = "evil.example:443"
)

// hostUse and homeUse are a person's approval of one connection, or of
// one home file they applied.
func hostUse(hp string) Use {
	return Use{Rule: "unknown-hosts", Subject: hp, Host: true, Approved: true}
}
func homeUse(p string) Use { return Use{Rule: "home-writes", Subject: p, Home: true, Approved: true} }

// enoughOf is enough() with u as each run's one use.
func enoughOf(u Use) []Run {
	rs := enough(u.Rule)
	for i := range rs {
		rs[i].Uses = []Use{u}
	}
	return rs
}

// connect judges a connection to hp from a task on folder under the
// home's rules (untrusted: the engine a run with untrusted input gets).
func connect(t *testing.T, home, hp string, untrusted bool) policy.Outcome {
	t.Helper()
	h, p, err := policy.SplitHostPort(hp)
	if err != nil {
		t.Fatal(err)
	}
	return judge(t, home, policy.NetRequest(h, p), untrusted)
}

// homeWrite judges applying the task's ~/path.
func homeWrite(t *testing.T, home, path string) policy.Outcome {
	t.Helper()
	return judge(t, home, policy.HomeRequest(path), false)
}

func judge(t *testing.T, home string, r policy.Request, untrusted bool) policy.Outcome {
	t.Helper()
	e, err := policy.Load(home, folder, "")
	if err != nil {
		t.Fatal(err)
	}
	if untrusted {
		e = e.WithoutGraduated()
	}
	return e.Judge(policy.TaskInfo{ID: "t"}, []policy.Request{r}).Verdicts[0].Outcome
}

// TestPerSubjectThresholds: a host and a home file each graduate on their
// own evidence, at the moment every threshold holds, and with any one of
// them one short they do not; the proposal names the host or the file.
func TestPerSubjectThresholds(t *testing.T) {
	t.Parallel()
	for _, u := range []Use{hostUse(api), homeUse(".bashrc")} {
		cases := map[string]struct {
			runs []Run
			now  time.Time
			want bool
		}{
			"all hold":            {enoughOf(u), ready, true},
			"cooldown one short":  {enoughOf(u), ready.Add(-time.Nanosecond), false},
			"successes one short": {enoughOf(u)[1:], ready.Add(24 * time.Hour), false},
			"tasks one short": {func() []Run {
				rs := enoughOf(u)
				for i := range rs {
					if rs[i].Task == "cccc0003" {
						rs[i].Task = "aaaa0001"
					}
				}
				return rs
			}(), ready, false},
			"kept one short": {func() []Run {
				rs := enoughOf(u)
				rs[len(rs)-1].OutcomeAt = ready.Add(-24*time.Hour + time.Nanosecond)
				return rs
			}(), ready, false},
			"one run not approved": {func() []Run {
				rs := enoughOf(u)
				rs[2].Uses = []Use{{Rule: u.Rule, Subject: u.Subject, Host: u.Host, Home: u.Home}}
				return rs
			}(), ready.Add(30 * 24 * time.Hour), false},
			"one run untrusted": {func() []Run {
				rs := enoughOf(u)
				rs[2].Trusted = false
				return rs
			}(), ready.Add(30 * 24 * time.Hour), false},
		}
		for name, c := range cases {
			t.Run(u.Rule+"/"+name, func(t *testing.T) {
				t.Parallel()
				now := c.now
				rep, err := keeper(t, &now).Review(c.runs)
				if err != nil {
					t.Fatal(err)
				}
				if got := len(rep.Proposals) == 1; got != c.want {
					t.Fatalf("proposal %v, want %v: %+v", got, c.want, rep.Proposals)
				}
				if c.want {
					p := rep.Proposals[0]
					if p.Category.Subject != u.Subject || p.Category.Host != u.Host || p.Category.Home != u.Home || p.Successes != 5 ||
						!strings.Contains(p.Line(), u.Subject) {
						t.Fatalf("proposal %+v: %s", p, p.Line())
					}
				}
			})
		}
	}
}

// secondHost is enough evidence for api, then one approved, kept run that
// connected to evil: the farm and the harvest.
func secondHost() []Run {
	runs := enoughOf(hostUse(api))
	r := good(50, "eeee0005", t0.Add(5*24*time.Hour), "unknown-hosts")
	r.Uses = []Use{hostUse(evil)}
	return append(runs, r)
}

// TestSecondHostGetsNothing: five successes for api.example.com:443 in
// three tasks earn a proposal for that host alone; the one run that also
// reached evil.example:443 earns evil nothing. Accepted, the permit lets
// exactly api.example.com:443 through: not evil.example, not another port
// of the same host, and not a run whose input was untrusted.
func TestSecondHostGetsNothing(t *testing.T) {
	t.Parallel()
	now := ready.Add(24 * time.Hour)
	k := keeper(t, &now)
	rep, err := k.Review(secondHost())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Proposals) != 1 || rep.Proposals[0].Category.Subject != api || rep.Proposals[0].Successes != 5 {
		t.Fatalf("proposals %+v", rep.Proposals)
	}
	if sc := rep.Proposals[0].Scope(); !strings.Contains(sc, api) || !strings.Contains(sc, "any other host or port still asks") {
		t.Fatalf("scope %s", sc)
	}
	_, r, err := k.Accept(secondHost(), rep.Proposals[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Host || r.Subject != api || r.Rule.For != "unknown-hosts" {
		t.Fatalf("permit %+v", r)
	}
	for hp, want := range map[string]policy.Outcome{api: policy.Pass, evil: policy.Ask, "api.example.com:8443": policy.Ask, "example.com:443": policy.Ask} {
		if got := connect(t, k.Home, hp, false); got != want {
			t.Errorf("%s: %v, want %v", hp, got, want)
		}
	}
	if connect(t, k.Home, api, true) != policy.Ask {
		t.Error("a run with untrusted input got the graduated permit")
	}
}

// TestSecondHostGetsNothingAttack: the same runs with per-subject keying
// taken away (subjectBlind): api's evidence is added up with evil's, a
// proposal names evil.example:443, and accepting it lets evil through.
func TestSecondHostGetsNothingAttack(t *testing.T) {
	subjectBlind = true
	defer func() { subjectBlind = false }()
	now := ready.Add(24 * time.Hour)
	k := keeper(t, &now)
	rep, err := k.Review(secondHost())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Proposals) != 1 || rep.Proposals[0].Category.Subject != evil {
		t.Fatalf("without per-subject keying the attack should succeed: %+v", rep.Proposals)
	}
	if _, _, err := k.Accept(secondHost(), rep.Proposals[0].ID); err != nil {
		t.Fatal(err)
	}
	if connect(t, k.Home, evil, false) != policy.Pass {
		t.Fatal("the farmed permit should let evil.example through")
	}
}

// TestDemotionWithdrawsOneHost: two hosts graduated; a run let through to
// one of them by its permit fails, and that permit alone is withdrawn.
func TestDemotionWithdrawsOneHost(t *testing.T) {
	t.Parallel()
	other := "pkg.example.org:443"
	runs := append(enoughOf(hostUse(api)), enoughOf(hostUse(other))...)
	for i := range runs[5:] {
		runs[5+i].ID += 10
	}
	now := ready
	k := keeper(t, &now)
	rep, err := k.Review(runs)
	if err != nil || len(rep.Proposals) != 2 {
		t.Fatalf("%v %+v", err, rep)
	}
	ids := map[string]string{}
	for _, p := range rep.Proposals {
		if _, _, err := k.Accept(runs, p.ID); err != nil {
			t.Fatal(err)
		}
		ids[p.Category.Subject] = p.ID
	}
	now = now.Add(24 * time.Hour)
	bad := good(99, "dddd0004", now, "unknown-hosts")
	bad.Uses = []Use{{Rule: "unknown-hosts", Subject: api, Host: true, Lifted: true}}
	bad.Succeeded, bad.Failed = false, true
	bad.Paths = []string{"fetch.log"} // no path the earlier runs changed: its own failure only
	now = now.Add(time.Hour)
	rep, err = k.Review(append(runs, bad))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Demotions) != 1 || rep.Demotions[0].Withdrawn != ids[api] || rep.Demotions[0].Category.Subject != api {
		t.Fatalf("demotions %+v", rep.Demotions)
	}
	if connect(t, k.Home, api, false) != policy.Ask || connect(t, k.Home, other, false) != policy.Pass {
		t.Fatal("the failure should withdraw api's permit and keep the other's")
	}
}

// TestHomeFileGraduates: a home file graduates alone: its permit lets
// that file through and no other, and the person taking one of its applies
// back demotes it.
func TestHomeFileGraduates(t *testing.T) {
	t.Parallel()
	runs := enoughOf(homeUse(".bashrc"))
	now := ready
	k := keeper(t, &now)
	rep, err := k.Review(runs)
	if err != nil || len(rep.Proposals) != 1 || !rep.Proposals[0].Category.Home {
		t.Fatalf("%v %+v", err, rep)
	}
	if !strings.Contains(rep.Proposals[0].Line(), "~/.bashrc") || !strings.Contains(rep.Proposals[0].Scope(), "any other file of your home still asks") {
		t.Fatalf("line %s; scope %s", rep.Proposals[0].Line(), rep.Proposals[0].Scope())
	}
	if _, _, err := k.Accept(runs, rep.Proposals[0].ID); err != nil {
		t.Fatal(err)
	}
	if homeWrite(t, k.Home, ".bashrc") != policy.Pass || homeWrite(t, k.Home, ".profile") != policy.Ask || homeWrite(t, k.Home, ".ssh/config") != policy.Ask {
		t.Fatal("the permit should let ~/.bashrc through and nothing else")
	}
	now = now.Add(24 * time.Hour)
	runs[4].Uses[0].Undone, runs[4].Uses[0].UndoneAt = true, now
	now = now.Add(time.Hour)
	rep, err = k.Review(runs)
	if err != nil || len(rep.Demotions) != 1 || rep.Demotions[0].Withdrawn == "" {
		t.Fatalf("%v %+v", err, rep)
	}
	if homeWrite(t, k.Home, ".bashrc") != policy.Ask {
		t.Fatal("after the undo ~/.bashrc should ask again")
	}
}

// TestHomeOnlyRunsCount: runs that changed only a file of the home commit
// nothing to the folder; the person's apply of the file, kept a day and
// not undone, is their evidence. One short of the day, or with the apply
// undone, they are not, and a use that was never applied never counts.
func TestHomeOnlyRunsCount(t *testing.T) {
	t.Parallel()
	homeOnly := func(applied func(i int, r Run) Use) []Run {
		rs := enoughOf(homeUse(".gitconfig"))
		for i := range rs {
			rs[i].Outcome, rs[i].OutcomeAt, rs[i].Paths = "", time.Time{}, nil
			rs[i].Uses = []Use{applied(i, rs[i])}
		}
		return rs
	}
	appliedAfter := func(i int, r Run) Use {
		u := homeUse(".gitconfig")
		u.At = r.Ended.Add(time.Minute)
		return u
	}
	cases := map[string]struct {
		runs []Run
		now  time.Time
		want bool
	}{
		"applies kept a day": {homeOnly(appliedAfter), ready, true},
		"the last apply one short of a day": {homeOnly(func(i int, r Run) Use {
			u := appliedAfter(i, r)
			if i == 4 {
				u.At = ready.Add(-24 * time.Hour).Add(time.Nanosecond)
			}
			return u
		}), ready, false},
		"the last apply just a day": {homeOnly(func(i int, r Run) Use {
			u := appliedAfter(i, r)
			if i == 4 {
				u.At = ready.Add(-24 * time.Hour)
			}
			return u
		}), ready, true},
		"one apply undone": {homeOnly(func(i int, r Run) Use {
			u := appliedAfter(i, r)
			if i == 2 {
				u.Undone, u.UndoneAt = true, u.At.Add(time.Hour)
			}
			return u
		}), ready.Add(30 * 24 * time.Hour), false},
		"never applied": {homeOnly(func(i int, r Run) Use {
			u := appliedAfter(i, r)
			u.Approved = false
			return u
		}), ready.Add(30 * 24 * time.Hour), false},
	}
	for name, c := range cases {
		now := c.now
		rep, err := keeper(t, &now).Review(c.runs)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(rep.Proposals) == 1; got != c.want {
			t.Errorf("%s: proposal %v, want %v (%+v)", name, got, c.want, rep.Proposals)
		}
	}
}

// TestFromMemorySubjects: the memory's subjects become one use per host,
// so its evidence for one host counts for that host alone.
func TestFromMemorySubjects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := memory.Open(filepath.Join(t.TempDir(), "memory.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := t0
	st.SetClock(func() time.Time { return now })
	for i, tk := range []string{"aaaa0001", "bbbb0002", "cccc0003", "aaaa0001", "bbbb0002", "cccc0003"} {
		id, err := st.StartRun(ctx, memory.Start{Task: tk, Folder: folder, Kind: memory.KindExec, Prompt: "curl"})
		if err != nil {
			t.Fatal(err)
		}
		hp := api
		if i == 5 {
			hp = evil
		}
		if _, err := st.AddTaskSubject(ctx, tk, true, memory.SubjectUse{Rule: "unknown-hosts", Kind: memory.SubjectHost, Subject: hp, Asked: 1, Approved: 1}); err != nil {
			t.Fatal(err)
		}
		zero := 0
		if _, err := st.EndRun(ctx, id, memory.End{Exit: &zero, Paths: []string{"out.json"}}); err != nil {
			t.Fatal(err)
		}
		if err := st.Committed(ctx, tk, memory.Commit{Checkpoint: i + 1, By: "cli"}); err != nil {
			t.Fatal(err)
		}
		now = now.Add(24 * time.Hour)
	}
	rs, err := st.Runs(ctx, memory.Filter{Folder: folder})
	if err != nil {
		t.Fatal(err)
	}
	clock := t0.Add(40 * 24 * time.Hour)
	rep, err := keeper(t, &clock).Review(FromMemory(rs))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Proposals) != 1 || rep.Proposals[0].Category != (Category{Folder: folder, Rule: "unknown-hosts", Subject: api, Host: true}) {
		t.Fatalf("proposals %+v", rep.Proposals)
	}
}
