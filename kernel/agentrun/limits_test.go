package agentrun_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kulehq/kule/kernel/agentrun"
	"github.com/kulehq/kule/kernel/internal/acp"
	"github.com/kulehq/kule/kernel/internal/budget"
	"github.com/kulehq/kule/kernel/internal/config"
	"github.com/kulehq/kule/kernel/internal/limits"
	"github.com/kulehq/kule/kernel/internal/runner"
)

func (f *fixture) notices() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, e := range f.events {
		if e.Type == acp.EventNotice {
			out = append(out, e.Text)
		}
	}
	return out
}

// A run whose agent reports cost as it works is told at 80% and stopped
// at its budget, and fails saying why; the next run does not start.
func TestRunIsStoppedAtItsBudgetAndTheNextIsRefused(t *testing.T) {
	f := newFixture(t, "spend")
	f.approve(t)
	if err := budget.SetTaskCap(f.t.Paths.Dir, &budget.Money{Amount: 2.5, Currency: "USD"}); err != nil {
		t.Fatal(err)
	}
	o := f.options("spend")
	o.Runner = runner.Direct{}
	var mu sync.Mutex
	var told []budget.Notice
	o.OnBudget = func(n budget.Notice) { mu.Lock(); told = append(told, n); mu.Unlock() }
	r, err := agentrun.Start(context.Background(), f.k, f.t, o)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Wait()
	if !errors.Is(err, budget.ErrSpent) || !errors.Is(res.LimitErr, budget.ErrSpent) {
		t.Fatalf("a run past its budget: %v (limit %v)", err, res.LimitErr)
	}
	if !strings.Contains(err.Error(), "$2.50") || !strings.Contains(err.Error(), "kule budget "+f.t.ID) {
		t.Errorf("the run's error does not say the cap and how to raise it: %v", err)
	}
	mu.Lock()
	if len(told) != 2 || told[0].Percent != 80 || told[1].Percent != 100 {
		t.Errorf("budget notices %+v, want 80%% then 100%%", told)
	}
	mu.Unlock()
	text := strings.Join(f.notices(), "\n")
	if !strings.Contains(text, "80% of its budget") || !strings.Contains(text, "the run is stopped") {
		t.Errorf("the run's output lacks the notices:\n%s", text)
	}
	// The agent reported $2.50 (or a step more, reported before the
	// cancel reached it): the task's usage says so.
	sum, err := budget.ForTask(f.k.Store().Root, f.t.Paths.Dir, time.Now())
	if err != nil || sum.BudgetSpent.Amount < 2.5 || sum.Usage.Runs != 1 {
		t.Fatalf("after the run: %+v %v", sum, err)
	}
	if _, err := agentrun.Start(context.Background(), f.k, f.t, o); !errors.Is(err, budget.ErrSpent) || !strings.Contains(err.Error(), "no run was started") {
		t.Fatalf("the next run started with the budget spent: %v", err)
	}
	// Raised, it runs again: the watcher counts this run from its start.
	budget.SetTaskCap(f.t.Paths.Dir, &budget.Money{Amount: sum.BudgetSpent.Amount + 1, Currency: "USD"})
	r, err = agentrun.Start(context.Background(), f.k, f.t, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Wait(); !errors.Is(err, budget.ErrSpent) {
		t.Fatalf("the second run: %v", err)
	}
	if c := r.Cost(); len(c) != 1 || c[0].Amount < 1 || c[0].Amount > 1.5 {
		t.Errorf("the second run cost %v; it had $1.00 left", c)
	}
}

// The daily cap is the tighter one here: another task spent most of it.
func TestRunIsHeldToTheDailyBudget(t *testing.T) {
	f := newFixture(t, "spend")
	f.approve(t)
	other, err := f.k.NewTask(context.Background(), f.folder)
	if err != nil {
		t.Fatal(err)
	}
	writeUsage(t, other.Task.Paths.Dir, `{"time":"`+time.Now().UTC().Add(-time.Hour).Format(time.RFC3339)+`","source":"usage_update","cost":{"amount":9,"currency":"USD"}}`)
	budget.SetTaskCap(f.t.Paths.Dir, &budget.Money{Amount: 100, Currency: "USD"})
	budget.SetDailyCap(f.k.Store().Root, &budget.Money{Amount: 10, Currency: "USD"})
	o := f.options("spend")
	o.Runner = runner.Direct{}
	r, err := agentrun.Start(context.Background(), f.k, f.t, o)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Wait()
	if !errors.Is(err, budget.ErrSpent) || !strings.Contains(err.Error(), "the daily budget is $10.00") {
		t.Fatalf("a run past the daily budget: %v", err)
	}
}

// All of a task's runs together: a run that goes on past the task's time
// is stopped, fails with why, and the next does not start.
func TestTaskTimeStopsARun(t *testing.T) {
	f := newFixture(t, "slow")
	f.approve(t)
	setLimits(t, f, limits.Limits{TaskTime: 2 * time.Second})
	o := f.options("wait")
	o.Runner = runner.Direct{}
	r, err := agentrun.Start(context.Background(), f.k, f.t, o)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Wait()
	if !errors.Is(err, limits.ErrStopped) || !strings.Contains(err.Error(), "task-time") || res.LimitErr == nil {
		t.Fatalf("a run past the task's time: %v", err)
	}
	if _, err := agentrun.Start(context.Background(), f.k, f.t, o); !errors.Is(err, limits.ErrTaskTimeSpent) {
		t.Fatalf("a run started with the task's time used up: %v", err)
	}
}

// An agent that goes quiet (no message, tool call, output or processor
// use) is stopped as idle.
func TestIdleAgentIsStopped(t *testing.T) {
	f := newFixture(t, "slow")
	f.approve(t)
	setLimits(t, f, limits.Limits{Idle: time.Second})
	o := f.options("wait")
	o.Runner = runner.Direct{}
	r, err := agentrun.Start(context.Background(), f.k, f.t, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Wait(); !errors.Is(err, limits.ErrStopped) || !strings.Contains(err.Error(), "idle") {
		t.Fatalf("an idle agent: %v", err)
	}
}

func setLimits(t *testing.T, f *fixture, l limits.Limits) {
	t.Helper()
	cfg, err := config.Load(f.k.Store().Root)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Limits = l
	if err := config.Save(f.k.Store().Root, cfg); err != nil {
		t.Fatal(err)
	}
}

func writeUsage(t *testing.T, dir, line string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, budget.UsageFile), []byte(line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Stop cancels the turn and, when the agent does not end within ten
// seconds, kills it: an agent deaf to the cancel and to the end of its
// input is gone once Stop returns.
func TestStopKillsAnAgentThatDoesNotEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the ten seconds an agent is given; -short skips it")
	}
	f := newFixture(t, "deaf")
	f.approve(t)
	o := f.options("wait")
	o.Runner = runner.Direct{}
	r, err := agentrun.Start(context.Background(), f.k, f.t, o)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the turn to start", func() bool { return f.text() == "waiting" })
	pid := agentPid(t, f)
	r.Stop()
	<-r.Done()
	if err := syscall.Kill(pid, 0); err == nil {
		t.Fatalf("the agent (pid %d) still runs after Stop", pid)
	}
}

// agentPid finds the scripted agent among this process's children.
func agentPid(t *testing.T, f *fixture) int {
	t.Helper()
	for _, p := range limits.Tree(os.Getpid())[1:] {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p)); err == nil && strings.Contains(string(b), "KULE_AGENTRUN_PEER=deaf") {
			return p
		}
	}
	t.Fatal("the agent's process was not found")
	return 0
}
