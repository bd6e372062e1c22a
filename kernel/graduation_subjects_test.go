package kernel_test

import (
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/internal/memory"
	"github.com/kulehq/kule/kernel/internal/policy"
	"github.com/kulehq/kule/kernel/internal/runner"
	"github.com/kulehq/kule/kernel/internal/task"
)

// TestGraduationPerHostThroughTheKernel: real curl in the sandbox reaches
// a host through the task's proxy after a person approves each question;
// five such runs in three tasks, committed and kept, make a proposal for
// that host:port alone, and one approved run to a second host earns that
// host nothing. Accepted, the next run reaches the first host without a
// question, the second is still refused, and once a run with untrusted
// input is pending in the task the first host asks again.
func TestGraduationPerHostThroughTheKernel(t *testing.T) {
	needRoot(t, "curl")
	f, _ := memFixture(t)
	ctx := context.Background()
	st, err := f.k.Memory()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Add(-30 * 24 * time.Hour)
	st.SetClock(func() time.Time { return now })
	good, goodHits := localModel(t)
	evil, evilHits := localModel(t)
	var asked, runs atomic.Int32
	// exec runs curl to addr in the sandbox, its answer into the copy;
	// approve answers the proxy's question (nil: nobody is there to ask).
	exec := func(tk *task.Task, addr string, approve func(string) bool) string {
		t.Helper()
		var spec runner.Spec
		r, err := kernel.SandboxRunner(f.k.Store().Root, tk, &spec, kernel.SandboxOptions{Warn: &strings.Builder{}})
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		spec.Stdout, spec.Stderr = &out, os.Stderr
		hooks := kernel.NetHooks{}
		if approve != nil {
			hooks.Ask = func(_ context.Context, _ *task.Task, host string, port int, rule string) bool {
				asked.Add(1)
				return rule == "unknown-hosts" && approve(net.JoinHostPort(host, strconv.Itoa(port)))
			}
		}
		kk := f.k.With(kernel.RunHooks{Runner: r, Net: hooks})
		// A new file each run: each run's changes are its own commit.
		name := "answer" + strconv.Itoa(int(runs.Add(1))) + ".txt"
		script := "curl -s --max-time 20 http://" + addr + "/ > " + name + "; cat " + name
		if _, _, err := kk.Exec(ctx, tk, kernel.ExecOptions{Args: []string{"sh", "-c", script}, Spec: spec}); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	commit := func(tk *task.Task) {
		t.Helper()
		if _, err := f.k.Commit(ctx, tk, kernel.CommitOptions{Policy: true}); err != nil {
			t.Fatal(err)
		}
	}
	yes := func(string) bool { return true }
	var tk *task.Task
	for i := 0; i < 5; i++ {
		if i%2 == 0 {
			tk = f.newTask()
		}
		if got := exec(tk, good, yes); got != "model-says-hi" {
			t.Fatalf("run %d: an approved connection got %q", i, got)
		}
		commit(tk)
		now = now.Add(2 * 24 * time.Hour)
	}
	// The second host, approved once, in a task of its own.
	other := f.newTask()
	if got := exec(other, evil, yes); got != "model-says-hi" || evilHits.Load() != 1 {
		t.Fatalf("the second host: %q", got)
	}
	commit(other)
	now = now.Add(2 * 24 * time.Hour)
	rs, err := st.Runs(ctx, memory.Filter{Task: other.ID})
	if err != nil || len(rs) != 1 || len(rs[0].Subjects) != 1 || rs[0].Subjects[0].Subject != evil || rs[0].Subjects[0].Approved != 1 {
		t.Fatalf("the memory of the second host's run: %+v %v", rs, err)
	}
	rep, err := f.k.ReviewGraduation(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Proposals) != 1 || rep.Proposals[0].Category.Subject != good || !rep.Proposals[0].Category.Host || rep.Proposals[0].Successes != 5 {
		all, _ := st.Runs(ctx, memory.Filter{})
		for _, r := range all {
			t.Logf("run %d task %s how %s outcome %s at %v trust %s subjects %+v", r.ID, r.Task, r.How, r.Outcome, r.OutcomeAt, r.Trust, r.Subjects)
		}
		t.Fatalf("proposals %+v", rep.Proposals)
	}
	if _, r, err := f.k.AcceptGraduation(ctx, rep.Proposals[0].ID); err != nil || r.Subject != good || !r.Host {
		t.Fatalf("accept: %+v %v", r, err)
	}
	next := f.newTask()
	before := asked.Load()
	if got := exec(next, good, nil); got != "model-says-hi" {
		t.Fatalf("the graduated host with nobody to ask: %q", got)
	}
	if got := exec(next, evil, nil); strings.Contains(got, "model-says-hi") || evilHits.Load() != 1 {
		t.Fatalf("the second host passed: %q", got)
	}
	if asked.Load() != before {
		t.Fatal("a question was asked with no hook")
	}
	// A chat stranger's run, pending in the task: graduated permits are
	// withheld, and the first host asks (and, with nobody there, is refused).
	id, err := st.StartRun(ctx, memory.Start{Task: next.ID, Folder: next.Folder, Kind: memory.KindAgent, Prompt: "fetch it", Source: memory.SourceChat})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.EndRun(ctx, id, memory.End{}); err != nil {
		t.Fatal(err)
	}
	hits := goodHits.Load()
	if got := exec(next, good, nil); strings.Contains(got, "model-says-hi") || goodHits.Load() != hits {
		t.Fatalf("an untrusted task reached the graduated host: %q", got)
	}
}

// TestGraduationPerHomeFileThroughTheKernel: a task's command changes
// ~/.bashrc in its home layer and the person applies it, in five tasks;
// the memory keeps the file's name on each run, the file is proposed
// alone, and accepted it passes while ~/.profile still asks. The person
// taking an apply back demotes it.
func TestGraduationPerHomeFileThroughTheKernel(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	write(t, home, map[string]string{".bashrc": "export A=0\n", ".profile": "P=0\n"})
	f, _ := memFixture(t)
	ctx := context.Background()
	st, err := f.k.Memory()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Add(-30 * 24 * time.Hour)
	st.SetClock(func() time.Time { return now })
	var last *task.Task
	for i := 0; i < 5; i++ {
		tk := f.newTask()
		f.sh(tk, "echo 'export A="+strconv.Itoa(i+1)+"' >> \"$HOME/.bashrc\"; echo done > out"+strconv.Itoa(i)+".txt")
		if _, err := f.k.Commit(ctx, tk, kernel.CommitOptions{Policy: true}); err != nil {
			t.Fatal(err)
		}
		if err := f.k.ApplyHome(tk, ".bashrc"); err != nil {
			t.Fatal(err)
		}
		now = now.Add(2 * 24 * time.Hour)
		last = tk
	}
	rs, err := st.Runs(ctx, memory.Filter{Task: last.ID})
	if err != nil || len(rs) != 1 || len(rs[0].Subjects) != 1 || rs[0].Subjects[0].Subject != ".bashrc" || rs[0].Subjects[0].Kind != memory.SubjectHome {
		t.Fatalf("the memory of the last run: %+v %v", rs, err)
	}
	rep, err := f.k.ReviewGraduation(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Proposals) != 1 || rep.Proposals[0].Category.Subject != ".bashrc" || !rep.Proposals[0].Category.Home {
		t.Fatalf("proposals %+v", rep.Proposals)
	}
	if _, _, err := f.k.AcceptGraduation(ctx, rep.Proposals[0].ID); err != nil {
		t.Fatal(err)
	}
	next := f.newTask()
	f.sh(next, "echo 'export A=9' >> \"$HOME/.bashrc\"; echo 'P=9' >> \"$HOME/.profile\"")
	vs, err := f.k.JudgeHome(next, []string{".bashrc", ".profile"})
	if err != nil || vs[0].Outcome != policy.Pass || vs[1].Outcome != policy.Ask {
		t.Fatalf("after accepting: %+v %v", vs, err)
	}
	// The person takes the last task's apply back: demoted.
	if rel, err := f.k.UndoHome(last); err != nil || rel != ".bashrc" {
		t.Fatalf("undo %q %v", rel, err)
	}
	if vs, _ := f.k.JudgeHome(next, []string{".bashrc"}); vs[0].Outcome != policy.Ask {
		t.Fatalf("after the undo ~/.bashrc should ask: %+v", vs)
	}
}
