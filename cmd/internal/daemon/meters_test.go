package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kulehq/kule/cmd/internal/daemon/client"

	"github.com/kulehq/kule/kernel"
)

// writeUsage writes a task's usage.jsonl as kernel/internal/acp records it: a run's
// start, a usage_update with the session's cost, and a turn's tokens.
func writeUsage(t *testing.T, tk *kernel.Task, cost float64, cur string, tokens int) {
	t.Helper()
	now := time.Now().UTC()
	used, size := int64(3000), int64(200000)
	lines := []any{
		map[string]any{"time": now.Add(-time.Minute), "source": kernel.BudgetSourceRun},
		kernel.AgentUsage{Time: now.Add(-50 * time.Second), Session: "s1", Source: "usage_update", Used: &used, Size: &size,
			Cost: json.RawMessage(`{"amount":` + jsonNum(cost) + `,"currency":"` + cur + `"}`)},
		kernel.AgentUsage{Time: now.Add(-40 * time.Second), Session: "s1", Source: "prompt",
			Tokens: json.RawMessage(`{"totalTokens":` + jsonNum(float64(tokens)) + `,"inputTokens":1000,"outputTokens":200}`)},
	}
	var b strings.Builder
	for _, l := range lines {
		j, err := json.Marshal(l)
		must(t, err)
		b.Write(append(j, '\n'))
	}
	must(t, os.WriteFile(filepath.Join(tk.Paths.Dir, kernel.AgentUsageFile), []byte(b.String()), 0o600))
}

func jsonNum(f float64) string { b, _ := json.Marshal(f); return string(b) }

// recorder keeps every event of the bus from now on.
type recorder struct {
	mu     sync.Mutex
	events []Event
}

func record(t *testing.T, d *Daemon) *recorder {
	ch, stop := d.Bus.Subscribe()
	t.Cleanup(stop)
	r := &recorder{}
	go func() {
		for e := range ch {
			r.mu.Lock()
			r.events = append(r.events, e)
			r.mu.Unlock()
		}
	}()
	return r
}

// of returns the events of one type, each as the stream sends it (JSON).
func (r *recorder) of(typ string) []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []map[string]any
	for _, e := range r.events {
		if e.Type != typ {
			continue
		}
		b, _ := json.Marshal(e.Data)
		m := map[string]any{}
		json.Unmarshal(b, &m)
		out = append(out, m)
	}
	return out
}

// TestTaskJSONCarriesUsageAndBudgets: the task's usage (tokens, cost by
// currency, runs), its budget and the daily budget come with the task's
// JSON, as kule status adds them up; a spent budget says no run starts.
func TestTaskJSONCarriesUsageAndBudgets(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, Config{})
	rep, err := d.k.NewTask(context.Background(), sampleFolder(t))
	must(t, err)
	tk := rep.Task
	writeUsage(t, tk, 0.85, "USD", 1200)
	must(t, d.k.SetTaskCap(tk, &kernel.Money{Amount: 1, Currency: "USD"}))
	must(t, d.k.SetDailyCap(&kernel.Money{Amount: 20, Currency: "USD"}))

	c := client.New(d.home)
	get := func() map[string]any {
		var views []map[string]any
		must(t, c.Do(context.Background(), "GET", "/api/tasks", nil, &views))
		if len(views) != 1 {
			t.Fatalf("tasks: %v", views)
		}
		u, ok := views[0]["usage"].(map[string]any)
		if !ok {
			t.Fatalf("the task's JSON has no usage: %v", views[0])
		}
		return u
	}
	u := get()
	used := u["usage"].(map[string]any)
	if used["tokens"].(map[string]any)["total"] != 1200.0 || used["runs"] != 1.0 {
		t.Fatalf("usage %v, want 1200 tokens in 1 run", used)
	}
	cost := used["cost"].([]any)
	if len(cost) != 1 || cost[0].(map[string]any)["amount"] != 0.85 || cost[0].(map[string]any)["currency"] != "USD" {
		t.Fatalf("cost %v, want 0.85 USD", cost)
	}
	money := func(k string) string { m := u[k].(map[string]any); b, _ := json.Marshal(m); return string(b) }
	for k, want := range map[string]string{
		"budget": `{"amount":1,"currency":"USD"}`, "budget_spent": `{"amount":0.85,"currency":"USD"}`,
		"daily_budget": `{"amount":20,"currency":"USD"}`, "daily_spent": `{"amount":0.85,"currency":"USD"}`,
	} {
		if got := money(k); got != want {
			t.Errorf("%s = %s, want %s", k, got, want)
		}
	}
	if u["blocked"] != nil {
		t.Errorf("a budget with room left blocks: %v", u["blocked"])
	}

	// The budget lowered under what was spent: no run starts, and it says how to go on.
	must(t, d.k.SetTaskCap(tk, &kernel.Money{Amount: 0.5, Currency: "USD"}))
	u = get()
	if b, _ := u["blocked"].(string); !strings.Contains(b, "no run was started") || !strings.Contains(b, "kule budget "+tk.ID) {
		t.Fatalf("blocked = %q", b)
	}
	// The single task's view says the same.
	var one struct{ Task TaskView }
	must(t, c.Do(context.Background(), "GET", "/api/tasks/"+tk.ID, nil, &one))
	if one.Task.Usage == nil || one.Task.Usage.Blocked == "" || one.Task.Usage.BudgetSpent.Amount != 0.85 {
		t.Fatalf("GET /api/tasks/{id} usage: %+v", one.Task.Usage)
	}

	// A damaged budget file is said, not guessed at.
	must(t, os.WriteFile(filepath.Join(tk.Paths.Dir, kernel.BudgetTaskFile), []byte("{not json"), 0o600))
	var views []TaskView
	must(t, c.Do(context.Background(), "GET", "/api/tasks", nil, &views))
	if views[0].Usage != nil || views[0].UsageError == "" {
		t.Fatalf("a damaged budget file: usage %+v, error %q", views[0].Usage, views[0].UsageError)
	}
}

// TestExecStoppedByIdleLimit: a command from the app that does nothing is
// stopped by the task's idle limit. While it runs its usage against its
// limits streams as "limits" events; the stop, with which limit and why,
// reaches the stream, the run's output and the step.
func TestExecStoppedByIdleLimit(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, Config{MeterEvery: 50 * time.Millisecond})
	rep, err := d.k.NewTask(context.Background(), sampleFolder(t))
	must(t, err)
	tk := rep.Task
	tk.Limits = kernel.Limits{Idle: time.Second, Memory: 1 << 30}
	must(t, d.k.SaveTask(tk))
	rec := record(t, d)

	st, err := d.Exec(context.Background(), tk, []string{"/bin/sh", "-c", "sleep 60"}, "sleep 60")
	if !errors.Is(err, kernel.ErrLimitStopped) {
		t.Fatalf("exec under an idle limit: %v", err)
	}
	if st.Limit != "idle" || !strings.Contains(st.Output, "idle: nothing happened for 1s") || !strings.Contains(st.Error, "stopped by a limit") {
		t.Fatalf("step: limit %q, error %q, output %q", st.Limit, st.Error, st.Output)
	}
	waitFor(t, "the run's end on the stream", func() bool { return len(rec.of("run")) == 2 })
	end := rec.of("run")[1]
	if end["state"] != "end" || end["limit"] != "idle" || !strings.Contains(end["error"].(string), "idle: nothing happened for 1s") {
		t.Fatalf("the run's end event: %v", end)
	}
	var out strings.Builder
	for _, o := range rec.of("output") {
		out.WriteString(o["text"].(string))
	}
	if !strings.Contains(out.String(), "kule: exec: stopped by a limit: idle") {
		t.Fatalf("the run's output does not say why it stopped: %q", out.String())
	}
	ms := rec.of("limits")
	if len(ms) < 2 {
		t.Fatalf("limits events: %v, want some while it ran and a last one", ms)
	}
	last := ms[len(ms)-1]
	if last["final"] != true || last["limit"] != "idle" {
		t.Fatalf("the last limits event: %v", last)
	}
	lim := last["limits"].(map[string]any)
	if lim["idle_seconds"] != 1.0 || lim["memory"] != float64(1<<30) || lim["cpu"] != nil {
		t.Fatalf("limits in the event: %v", lim)
	}
	running := ms[len(ms)-2]
	u := running["usage"].(map[string]any)
	if running["final"] == true || u["processes"].(float64) < 1 || u["memory"].(float64) <= 0 || u["idle_seconds"].(float64) <= 0 {
		t.Fatalf("a running run's usage: %v", running)
	}
	if idle := last["usage"].(map[string]any)["idle_seconds"].(float64); idle < 1 {
		t.Fatalf("stopped for idle after %vs of idle", idle)
	}
}

// TestAgentStoppedByTimeLimit: an agent turn that goes on past the task's
// time limit is stopped; the turn fails with why, in Live (a notice) and
// on the run's end, and its meters named the time limit.
func TestAgentStoppedByTimeLimit(t *testing.T) {
	t.Parallel()
	cfg := Config{Kernel: newKernel(t), MeterEvery: 50 * time.Millisecond}
	withPeerScript(t, &cfg, "hang", "")
	d := startDaemon(t, cfg)
	rep, err := d.k.NewTask(context.Background(), sampleFolder(t))
	must(t, err)
	tk := rep.Task
	tk.Limits = kernel.Limits{Time: time.Second}
	must(t, d.k.SaveTask(tk))
	rec := record(t, d)

	turn, err := d.RunAgent(context.Background(), tk, AgentRequest{Agent: "peer", Prompt: "think hard"})
	if !errors.Is(err, kernel.ErrLimitStopped) {
		t.Fatalf("a turn past its time limit: %v", err)
	}
	if turn.Limit != "time" || !strings.Contains(turn.Error, "time: the run took longer than 1s") {
		t.Fatalf("turn %+v", turn)
	}
	waitFor(t, "the run's end on the stream", func() bool { return len(rec.of("run")) == 2 })
	if end := rec.of("run")[1]; end["limit"] != "time" || !strings.Contains(end["error"].(string), "took longer than 1s") {
		t.Fatalf("the run's end event: %v", end)
	}
	told := false
	for _, a := range rec.of("agent") {
		if a["type"] == "notice" && strings.Contains(a["text"].(string), "stopped by a limit: time") {
			told = true
		}
	}
	if !told {
		t.Fatalf("Live was not told why: %v", rec.of("agent"))
	}
	ms := rec.of("limits")
	if len(ms) == 0 || ms[len(ms)-1]["limit"] != "time" || ms[len(ms)-1]["limits"].(map[string]any)["time_seconds"] != 1.0 {
		t.Fatalf("limits events: %v", ms)
	}
}

// TestAgentBudgetNotices: an agent's reported cost crosses 80% of the
// task's budget, then 100% on the next turn: each becomes a "budget" event
// (what the app shows in Live and notifies), and the second turn is
// stopped by the budget.
func TestAgentBudgetNotices(t *testing.T) {
	t.Parallel()
	cfg := Config{Kernel: newKernel(t)}
	withPeerScript(t, &cfg, "spend", "")
	d := startDaemon(t, cfg)
	rep, err := d.k.NewTask(context.Background(), sampleFolder(t))
	must(t, err)
	tk := rep.Task
	must(t, d.k.SetTaskCap(tk, &kernel.Money{Amount: 0.3, Currency: "USD"}))
	rec := record(t, d)

	turn, err := d.RunAgent(context.Background(), tk, AgentRequest{Agent: "peer", Prompt: "do it"})
	if err != nil || turn.Limit != "" {
		t.Fatalf("first turn: %+v, %v", turn, err)
	}
	waitFor(t, "the 80% notice", func() bool { return len(rec.of("budget")) == 1 })
	n := rec.of("budget")[0]
	if n["scope"] != "task" || n["percent"] != 80.0 || !strings.Contains(n["text"].(string), "$0.25") {
		t.Fatalf("the 80%% notice: %v", n)
	}
	turn, err = d.RunAgent(context.Background(), tk, AgentRequest{Agent: "peer", Prompt: "more"})
	if !errors.Is(err, kernel.ErrBudgetSpent) || turn.Limit != "budget" {
		t.Fatalf("second turn: %+v, %v", turn, err)
	}
	waitFor(t, "the 100% notice", func() bool {
		for _, n := range rec.of("budget") {
			if n["percent"] == 100.0 {
				return true
			}
		}
		return false
	})
	waitFor(t, "both runs' ends", func() bool { return len(rec.of("run")) == 4 })
	if end := rec.of("run")[3]; end["limit"] != "budget" {
		t.Fatalf("the second run's end: %v", end)
	}
}

// TestExecWithDamagedConfigEndsItsRun: a config.toml that does not parse
// runs nothing, and the run's end reaches the stream (Live does not wait
// on a run that never began).
func TestExecWithDamagedConfigEndsItsRun(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, Config{})
	rep, err := d.k.NewTask(context.Background(), sampleFolder(t))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(d.k.Home(), "config.toml"), []byte("[limits\n"), 0o600))
	rec := record(t, d)
	if _, err := d.Exec(context.Background(), rep.Task, []string{"/bin/sh", "-c", "echo x > made.txt"}, "echo"); err == nil || !strings.Contains(err.Error(), "nothing ran") {
		t.Fatalf("exec with a damaged config: %v", err)
	}
	waitFor(t, "the run's end", func() bool { return len(rec.of("run")) == 2 })
	if end := rec.of("run")[1]; end["state"] != "end" || !strings.Contains(end["error"].(string), "nothing ran") {
		t.Fatalf("the run's end: %v", end)
	}
	if _, err := os.Stat(filepath.Join(rep.Task.Paths.Copy, "made.txt")); err == nil {
		t.Fatal("the command ran")
	}
}
