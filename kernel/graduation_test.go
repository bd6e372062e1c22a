package kernel_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/internal/policy"
)

// TestGraduationThroughTheKernel: real commands change go.mod in three
// tasks, the person approves each commit, and the memory's clock puts the
// runs weeks ago. The category is proposed; accepting it lets the next
// task's go.mod change pass without a question; that commit undone, the
// graduated rule is withdrawn and go.mod asks again. A run that exits 1
// after writing "tests passed" earns nothing.
func TestGraduationThroughTheKernel(t *testing.T) {
	f, _ := memFixture(t)
	ctx := context.Background()
	st, err := f.k.Memory()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Add(-30 * 24 * time.Hour)
	st.SetClock(func() time.Time { return now })
	commit := func(tk *kernel.Task, approve bool) *kernel.CommitReport {
		t.Helper()
		rep, err := f.k.Commit(ctx, tk, kernel.CommitOptions{Policy: true, Approve: approve})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	// A forged success first: exit 1 with a file that says it passed.
	forged := f.newTask()
	if code := f.run(forged, `echo "tests passed" > TEST_RESULT; echo "module forged" > go.mod; exit 1`); code != 1 {
		t.Fatalf("code %d", code)
	}
	commit(forged, true)
	now = now.Add(24 * time.Hour)
	// Five successes in three tasks (two, two and one), each task made
	// after the commits before it.
	var tk *kernel.Task
	for i := 0; i < 5; i++ {
		if i%2 == 0 {
			tk = f.newTask()
		}
		f.sh(tk, fmt.Sprintf(`echo "module m%d" > go.mod`, i))
		commit(tk, true)
		now = now.Add(2 * 24 * time.Hour)
	}
	rep, err := f.k.ReviewGraduation(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var prop *kernel.GraduationProposal
	for i, p := range rep.Proposals {
		if p.Category.Rule == "manifests-and-lockfiles" {
			prop = &rep.Proposals[i]
		}
	}
	if prop == nil || prop.Successes != 5 || prop.Tasks != 3 {
		t.Fatalf("proposals %+v", rep.Proposals)
	}
	for _, e := range prop.Evidence {
		if e.Ended.Before(now.Add(-12 * 24 * time.Hour)) {
			t.Fatalf("the forged run or one before the reset counted: %+v", e)
		}
	}
	_, r, err := f.k.AcceptGraduation(ctx, prop.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Graduated != prop.ID {
		t.Fatalf("rule %+v", r)
	}
	next := f.newTask()
	st2 := f.sh(next, `echo "module next" > go.mod`)
	j, err := f.k.Judge(next, st2.Effects, false)
	if err != nil || j.Overall() != kernel.RulingPasses {
		t.Fatalf("after accepting: %v %v", j.Overall(), err)
	}
	cr := commit(next, false)
	if len(cr.Applied) != 1 {
		t.Fatalf("applied %v", cr.Applied)
	}
	if _, err := f.k.Undo(ctx, next); err != nil {
		t.Fatal(err)
	}
	rs, _ := policy.ReadRemembered(f.k.Store().Root)
	for _, x := range rs {
		if x.Graduated != "" {
			t.Fatalf("the undo should have withdrawn %s", x.String())
		}
	}
	again := f.newTask()
	st3 := f.sh(again, `echo "module again" > go.mod`)
	j, _ = f.k.Judge(again, st3.Effects, false)
	if j.Overall() != kernel.RulingWaits {
		t.Fatalf("after the demotion go.mod should wait; %s", j.Overall())
	}
	if rep, _ := f.k.ReviewGraduation(ctx, ""); len(rep.Proposals) != 0 {
		t.Fatalf("proposed again at once: %+v", rep.Proposals)
	}
}
