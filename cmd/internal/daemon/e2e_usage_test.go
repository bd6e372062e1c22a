package daemon

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kulehq/kule/kernel"
)

// TestAppUsageBudgetAndLimitStop drives the app in Chromium: the task's
// header shows what its runs used and its cost against its budget and the
// daily budget, marked from 80% and at 100%; a budget notice shows in Live
// and as a notification while the window is behind; a command from the
// command line shows its meters while it runs, and once its idle limit
// stops it, Live says which limit and why.
func TestAppUsageBudgetAndLimitStop(t *testing.T) {
	ctx, shot := browser(t)
	d := startDaemon(t, Config{MeterEvery: 200 * time.Millisecond})
	rep, err := d.k.NewTask(context.Background(), sampleFolder(t))
	must(t, err)
	tk := rep.Task
	tk.Name = "Spend"
	tk.Limits = kernel.Limits{Idle: 2 * time.Second, Memory: 1 << 30}
	must(t, d.k.SaveTask(tk))
	writeUsage(t, tk, 0.85, "USD", 1200)
	must(t, d.k.SetTaskCap(tk, &kernel.Money{Amount: 1, Currency: "USD"}))
	must(t, d.k.SetDailyCap(&kernel.Money{Amount: 20, Currency: "USD"}))
	row := `#task-list li[data-id="` + tk.ID + `"]`
	meterLevel := func(label string) string {
		return value(t, ctx, shot, "read the "+label+" meter", chromedp.Evaluate[string](`(document.querySelector('#t-usage .meter[aria-label="`+label+`"]') || {dataset: {}}).dataset.level || 'none'`))
	}

	step(t, ctx, shot, "open the task",
		chromedp.Navigate(d.URL()),
		chromedp.WaitVisible(chromedp.CSS(row)),
		clickOf(row),
		chromedp.WaitVisible(chromedp.CSS(`#t-usage .meter`)))
	head := value(t, ctx, shot, "read the header", textOf(`#t-usage`))
	for _, want := range []string{"1.2k tokens", "$0.85", "1 run", "$0.85 of $1.00", "85%", "$0.85 of $20.00"} {
		if !strings.Contains(head, want) {
			t.Fatalf("the header lacks %q: %q", want, head)
		}
	}
	if b, day := meterLevel("Budget"), meterLevel("Today"); b != "warn" || day != "ok" {
		t.Fatalf("meters: budget %s, today %s; want warn (85%%) and ok", b, day)
	}
	checkNames(t, ctx, shot, "the header with its budgets")

	// The budget lowered under what was spent: marked spent, no run starts.
	must(t, d.k.SetTaskCap(tk, &kernel.Money{Amount: 0.8, Currency: "USD"}))
	d.Bus.Publish("task", tk.ID, map[string]any{"action": "changed"})
	step(t, ctx, shot, "the budget is spent",
		chromedp.WaitVisible(chromedp.CSS(`#t-usage .meter[aria-label="Budget"][data-level="over"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#t-usage .blocked`)))
	if head := value(t, ctx, shot, "read the header again", textOf(`#t-usage`)); !strings.Contains(head, "spent") || !strings.Contains(head, "no run starts") {
		t.Fatalf("a spent budget's header: %q", head)
	}

	windowBehind(t, ctx, shot)
	// A run's budget notice, as RunAgent forwards agentrun's OnBudget.
	text := "budget: task " + tk.ID + "'s runs have cost $0.85, 85% of its budget of $1.00"
	d.Bus.Publish("budget", tk.ID, kernel.BudgetNotice{Scope: kernel.BudgetScopeTask, Percent: 80, Spent: kernel.Money{Amount: 0.85, Currency: "USD"}, Cap: kernel.Money{Amount: 1, Currency: "USD"}, Text: text})
	step(t, ctx, shot, "Live shows the budget notice", chromedp.WaitVisible(chromedp.CSS(`#live li.budget.warn`)))
	if got := value(t, ctx, shot, "read the notice", textOf(`#live li.budget`)); !strings.Contains(got, text) {
		t.Fatalf("Live's budget notice: %q", got)
	}

	step(t, ctx, shot, "run a command that idles",
		chromedp.Click(chromedp.CSS(`#cmd`)),
		chromedp.SendKeys(chromedp.CSS(`#cmd`), "sleep 60"),
		chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(chromedp.CSS(`#live li.run[data-state="running"] .meters .meter[data-limit="idle"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#live li.run[data-state="running"] .meters .meter[data-limit="memory"]`)))
	step(t, ctx, shot, "the idle limit stops it",
		chromedp.WaitVisible(chromedp.CSS(`#live li.run[data-state="ended"] .limitstop[data-limit="idle"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#live li.run[data-state="ended"] .meter.stopped[data-limit="idle"]`)))
	stop := value(t, ctx, shot, "read why", textOf(`#live li.run .limitstop`))
	if !strings.Contains(stop, "Stopped by its idle limit") || !strings.Contains(stop, "idle: nothing happened for 2s") {
		t.Fatalf("Live says %q", stop)
	}
	if out := value(t, ctx, shot, "read the output", textOf(`#live li.run .out`)); !strings.Contains(out, "kule: exec: stopped by a limit: idle") {
		t.Fatalf("the run's output: %q", out)
	}
	notes := strings.Join(value(t, ctx, shot, "read the notifications", chromedp.Evaluate[[]string](`window.__notes`)), "\n")
	for _, want := range []string{"Budget at 80%: project – Spend: " + text, "Run over: project – Spend: sleep 60 · exit", "stopped by its idle limit"} {
		if !strings.Contains(notes, want) {
			t.Fatalf("notifications lack %q:\n%s", want, notes)
		}
	}
}
