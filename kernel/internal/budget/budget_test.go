package budget

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// t0 is two days ago: a usage file is written now, and one last written
// before the 24 hours is not read at all.
var t0 = time.Now().UTC().Add(-48 * time.Hour).Truncate(time.Hour)

// line is a usage.jsonl line as kernel/internal/acp writes it.
func update(at time.Time, session string, cost float64, cur string) string {
	return fmt.Sprintf(`{"time":%q,"session":%q,"source":"usage_update","used":1200,"size":200000,"cost":{"amount":%g,"currency":%q}}`, at.Format(time.RFC3339Nano), session, cost, cur)
}

func prompt(at time.Time, total, in, out int) string {
	return fmt.Sprintf(`{"time":%q,"session":"s","source":"prompt","tokens":{"totalTokens":%d,"inputTokens":%d,"outputTokens":%d}}`, at.Format(time.RFC3339Nano), total, in, out)
}

func runMark(at time.Time) string {
	return fmt.Sprintf(`{"time":%q,"source":"run_start"}`, at.Format(time.RFC3339Nano))
}

// newTask makes $home/tasks/<id> with the usage lines given.
func newTask(t *testing.T, home, id string, lines ...string) string {
	t.Helper()
	dir := filepath.Join(home, "tasks", id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	text := strings.Join(lines, "\n")
	if len(lines) > 0 {
		text += "\n"
	}
	if err := os.WriteFile(filepath.Join(dir, UsageFile), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestParseCap(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Money{
		"5": {5, "USD"}, "5 EUR": {5, "EUR"}, "2.50usd": {2.5, "USD"}, " 20 gbp ": {20, "GBP"},
	} {
		got, err := ParseCap(in)
		if err != nil || got != want {
			t.Errorf("ParseCap(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-5", "five", "5 euros", "5 E1R", "1e999", "."} {
		if _, err := ParseCap(in); !errors.Is(err, ErrBadCap) {
			t.Errorf("ParseCap(%q) accepted it (%v)", in, err)
		}
	}
}

// The cost an agent reports is its session's so far: a task's cost is the
// increase over each run, and a run mark starts the count again.
func TestUsageAddsUpEachRunsCost(t *testing.T) {
	t.Parallel()
	lines := []string{
		runMark(t0),
		update(t0.Add(1*time.Minute), "s", 0.10, "USD"),
		update(t0.Add(2*time.Minute), "s", 0.25, "USD"),
		prompt(t0.Add(3*time.Minute), 30, 20, 10),
		`{"time":"2026-12-01T09:04:00Z","source":"usage_upd`, // a crash mid-write
		runMark(t0.Add(time.Hour)),
		update(t0.Add(61*time.Minute), "s", 0.05, "USD"), // the agent counts from zero again
		update(t0.Add(62*time.Minute), "s", 0.40, "USD"),
		prompt(t0.Add(63*time.Minute), 0, 7, 3), // no total: input + output
		// A file written before run marks: the count dropped, a restart.
		update(t0.Add(70*time.Minute), "t", 0.30, "USD"),
		update(t0.Add(71*time.Minute), "t", 0.10, "USD"),
		`{"time":"2026-12-01T10:12:00Z","source":"usage_update","cost":{"amount":"lots","currency":"USD"}}`,
	}
	u, err := ParseUsage(strings.NewReader(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	want := 0.25 + 0.40 + 0.30 + 0.10
	if got := u.Spent("USD"); fmt.Sprintf("%.4f", got) != fmt.Sprintf("%.4f", want) {
		t.Errorf("spent %.4f USD, want %.4f", got, want)
	}
	if u.Tokens.Total != 40 || u.Tokens.Input != 27 || u.Tokens.Output != 13 {
		t.Errorf("tokens %+v, want 40 in all (27 in, 13 out)", u.Tokens)
	}
	if u.Runs != 2 || u.Damaged != 2 {
		t.Errorf("runs %d (want 2), damaged %d (want 2)", u.Runs, u.Damaged)
	}
	if u.Context == nil || u.Context.Used != 1200 || u.Context.Size != 200000 {
		t.Errorf("context %+v", u.Context)
	}
}

func TestCurrenciesAreNeverAdded(t *testing.T) {
	t.Parallel()
	u, err := ParseUsage(strings.NewReader(strings.Join([]string{
		update(t0, "a", 1, "USD"), update(t0, "b", 2, "eur"), update(t0, "c", 0, "GBP"),
	}, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	want := []Money{{2, "EUR"}, {0, "GBP"}, {1, "USD"}}
	if d := cmp.Diff(want, u.Cost); d != "" {
		t.Fatalf("cost by currency (-want +got):\n%s", d)
	}
}

func TestASpentTaskBudgetRefusesTheNextRun(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	dir := newTask(t, home, "1a2b3c4d", runMark(t0), update(t0.Add(time.Minute), "s", 4.99, "USD"))
	s, err := Stand(home, dir, t0.Add(time.Hour))
	if err != nil || s.Check() != nil {
		t.Fatalf("no budget yet, and the run was refused: %v %v", err, s.Check())
	}
	cap5 := Money{5, "USD"}
	if err := SetTaskCap(dir, &cap5); err != nil {
		t.Fatal(err)
	}
	s, _ = Stand(home, dir, t0.Add(time.Hour))
	if err := s.Check(); err != nil {
		t.Fatalf("$4.99 of $5 refused the run: %v", err)
	}
	// The next run costs a cent more: the budget is spent.
	f, _ := os.OpenFile(filepath.Join(dir, UsageFile), os.O_APPEND|os.O_WRONLY, 0)
	MarkRun(f, t0.Add(2*time.Hour))
	fmt.Fprintln(f, update(t0.Add(2*time.Hour+time.Minute), "s", 0.01, "USD"))
	f.Close()
	s, _ = Stand(home, dir, t0.Add(3*time.Hour))
	err = s.Check()
	if !errors.Is(err, ErrSpent) {
		t.Fatalf("a spent budget let the run start: %v", err)
	}
	for _, want := range []string{"$5.00 of its $5.00 budget", "no run was started", "kule budget 1a2b3c4d 10", "kule budget 1a2b3c4d off"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q does not say %q", err, want)
		}
	}
	// off removes it.
	if err := SetTaskCap(dir, nil); err != nil {
		t.Fatal(err)
	}
	if c, err := TaskCap(dir); c != nil || err != nil {
		t.Fatalf("after off the cap is %v (%v)", c, err)
	}
}

// The daily cap holds every task together in the 24 hours before now;
// what is older has left the window.
func TestDailyBudgetCountsEveryTaskInTheLast24Hours(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	now := t0.Add(48 * time.Hour)
	a := newTask(t, home, "aaaaaaaa", runMark(t0), update(t0.Add(time.Minute), "s", 50, "USD")) // two days ago
	newTask(t, home, "bbbbbbbb", runMark(now.Add(-5*time.Hour)), update(now.Add(-5*time.Hour), "s", 12, "USD"))
	newTask(t, home, "cccccccc", runMark(now.Add(-time.Hour)), update(now.Add(-time.Hour), "s", 7.5, "USD"))
	daily := Money{20, "USD"}
	if err := SetDailyCap(home, &daily); err != nil {
		t.Fatal(err)
	}
	s, err := Stand(home, a, now)
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := s.DailySpent(); m.Amount != 19.5 {
		t.Fatalf("spent in the last 24 hours: %v, want $19.50 (the $50 two days ago has left the window)", m)
	}
	if err := s.Check(); err != nil {
		t.Fatalf("$19.50 of $20 refused the run: %v", err)
	}
	newTask(t, home, "dddddddd", update(now.Add(10*time.Minute), "s", 0.5, "USD"))
	s, _ = Stand(home, a, now.Add(30*time.Minute))
	err = s.Check()
	if !errors.Is(err, ErrSpent) || !strings.Contains(err.Error(), "$20.00 in the last 24 hours") || !strings.Contains(err.Error(), "kule daily-budget 40") {
		t.Fatalf("a spent daily budget: %v", err)
	}
	// Five hours later task b's $12 has left the window.
	s, _ = Stand(home, a, now.Add(19*time.Hour+time.Minute))
	if err := s.Check(); err != nil {
		t.Fatalf("after the oldest cost left the window: %v", err)
	}
}

func TestACapInOneCurrencyIsNotJudgedAgainstAnother(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	dir := newTask(t, home, "1a2b3c4d", update(t0, "s", 1, "EUR"))
	cap5 := Money{5, "USD"}
	SetTaskCap(dir, &cap5)
	s, _ := Stand(home, dir, t0.Add(time.Minute))
	err := s.Check()
	if !errors.Is(err, ErrCurrency) || !strings.Contains(err.Error(), "never converts") || !strings.Contains(err.Error(), "kule budget 1a2b3c4d AMOUNT EUR") {
		t.Fatalf("USD cap, EUR usage: %v", err)
	}
	eur := Money{5, "EUR"}
	SetTaskCap(dir, &eur)
	s, _ = Stand(home, dir, t0.Add(time.Minute))
	if err := s.Check(); err != nil {
		t.Fatalf("an EUR cap with EUR usage: %v", err)
	}
}

func TestADamagedCapFileRefusesTheRun(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	dir := newTask(t, home, "1a2b3c4d")
	os.WriteFile(filepath.Join(dir, TaskFile), []byte(`{"cap":{"amount":5`), 0o600)
	if _, err := Stand(home, dir, t0); !errors.Is(err, ErrDamaged) {
		t.Fatalf("a damaged budget.json read as no budget: %v", err)
	}
	os.WriteFile(filepath.Join(home, DailyFile), []byte(`{"cap":{"amount":-1,"currency":"USD"}}`), 0o600)
	if _, err := DailyCap(home); !errors.Is(err, ErrDamaged) {
		t.Fatalf("a negative daily cap was accepted: %v", err)
	}
}

type stops struct {
	mu      sync.Mutex
	notices []Notice
	err     chan error
}

func newStops() *stops { return &stops{err: make(chan error, 1)} }
func (s *stops) notify(n Notice) {
	s.mu.Lock()
	s.notices = append(s.notices, n)
	s.mu.Unlock()
}
func (s *stops) stop(err error) { s.err <- err }

func cost(amount float64, cur string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"sessionUpdate":"usage_update","used":10,"size":100,"cost":{"amount":%g,"currency":%q}}`, amount, cur))
}

// A run whose agent reports cost as it works: told at 80%, stopped at the
// tighter cap (here the daily one), with why.
func TestWatcherStopsTheRunAtTheTighterCap(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	now := t0
	dir := newTask(t, home, "1a2b3c4d", runMark(now.Add(-time.Hour)), update(now.Add(-time.Hour), "s", 1, "USD"))
	newTask(t, home, "99999999", update(now.Add(-time.Hour), "s", 6, "USD"))
	task, daily := Money{10, "USD"}, Money{8, "USD"}
	SetTaskCap(dir, &task)
	SetDailyCap(home, &daily)
	s, err := Stand(home, dir, now)
	if err != nil || s.Check() != nil {
		t.Fatal(err, s.Check())
	}
	st := newStops()
	w := s.Watch(st.notify, st.stop)
	w.Observe(json.RawMessage(`{"totalTokens":5}`)) // a turn's tokens: nothing to judge
	w.Observe(cost(0.2, "USD"))                     // daily 7.2 of 8: 90%
	w.Observe(cost(0.5, "USD"))                     // 7.5
	if w.Err() != nil || len(st.notices) != 1 || st.notices[0].Percent != 80 || st.notices[0].Scope != ScopeDaily {
		t.Fatalf("at 90%% of the daily cap: err %v, notices %+v", w.Err(), st.notices)
	}
	w.Observe(cost(1.0, "USD")) // 8.0: the daily cap is reached (the task's is at 2 of 10)
	err = <-st.err
	if !errors.Is(err, ErrSpent) || !strings.Contains(err.Error(), "the daily budget is $8.00") || !strings.Contains(err.Error(), "kule daily-budget") {
		t.Fatalf("stopped with %v", err)
	}
	if len(st.notices) != 2 || st.notices[1].Percent != 100 || !strings.Contains(st.notices[1].Text, "the run is stopped") {
		t.Fatalf("notices %+v", st.notices)
	}
	if got := w.Run(); len(got) != 1 || got[0].Amount != 1.0 {
		t.Fatalf("the run cost %v, want $1.00", got)
	}
}

func TestWatcherStopsARunReportingAnotherCurrency(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	dir := newTask(t, home, "1a2b3c4d")
	task := Money{10, "USD"}
	SetTaskCap(dir, &task)
	s, _ := Stand(home, dir, t0)
	st := newStops()
	w := s.Watch(st.notify, st.stop)
	w.Observe(cost(0.01, "EUR"))
	if err := <-st.err; !errors.Is(err, ErrCurrency) || !strings.Contains(err.Error(), "the run was stopped") {
		t.Fatalf("EUR reported against a USD cap: %v", err)
	}
}

func TestWatcherTellsAtTheStartOfARunPast80(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	dir := newTask(t, home, "1a2b3c4d", update(t0, "s", 4.2, "USD"))
	task := Money{5, "USD"}
	SetTaskCap(dir, &task)
	s, _ := Stand(home, dir, t0.Add(time.Minute))
	st := newStops()
	s.Watch(st.notify, st.stop)
	if len(st.notices) != 1 || st.notices[0].Percent != 80 || !strings.Contains(st.notices[0].Text, "84% of its budget") {
		t.Fatalf("notices %+v", st.notices)
	}
}

func TestSummaryForTheDaemon(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	dir := newTask(t, home, "1a2b3c4d", runMark(t0), update(t0, "s", 2, "USD"), prompt(t0, 30, 20, 10))
	task := Money{2, "USD"}
	SetTaskCap(dir, &task)
	sum, err := ForTask(home, dir, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(sum)
	for _, want := range []string{`"tokens":{"total":30`, `"cost":[{"amount":2,"currency":"USD"}]`, `"budget":{"amount":2,"currency":"USD"}`, `"budget_spent":{"amount":2`, `"blocked":"budget spent`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("summary JSON lacks %s:\n%s", want, b)
		}
	}
}

func FuzzParseUsage(f *testing.F) {
	f.Add(strings.Join([]string{runMark(t0), update(t0, "s", 0.5, "USD"), prompt(t0, 3, 2, 1)}, "\n"))
	f.Add(`{"source":"usage_update","cost":{"amount":1e308,"currency":"USD"}}` + "\n" + `{"source":"usage_update","cost":{"amount":1e308,"currency":"USD"}}`)
	f.Add(`{"source":"prompt","tokens":null}`)
	f.Fuzz(func(t *testing.T, s string) {
		u, err := ParseUsage(strings.NewReader(s))
		if err != nil {
			return
		}
		for _, m := range u.Cost {
			if m.Amount < 0 || !validCurrency(m.Currency) {
				t.Fatalf("cost %v from %q", m, s)
			}
		}
		for _, c := range u.Charges {
			if c.Amount <= 0 {
				t.Fatalf("charge %v from %q", c, s)
			}
		}
	})
}

func FuzzParseCap(f *testing.F) {
	for _, s := range []string{"5", "5 EUR", "2.50usd", "0", "1e3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if m, err := ParseCap(s); err == nil && (m.Amount <= 0 || !validCurrency(m.Currency)) {
			t.Fatalf("ParseCap(%q) = %v", s, m)
		}
	})
}

// A task whose usage was last written before the window is not read.
func TestOldUsageFilesAreNotRead(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	now := t0.Add(72 * time.Hour)
	dir := newTask(t, home, "aaaaaaaa", "{damaged")
	old := now.Add(-25 * time.Hour)
	os.Chtimes(filepath.Join(dir, UsageFile), old, old)
	if _, err := RecentCharges(home, now); err != nil {
		t.Fatal(err)
	}
	newTask(t, home, "bbbbbbbb", update(now.Add(-time.Hour), "s", 2, "USD"))
	if c, err := RecentCharges(home, now); err != nil || len(c) != 1 || c[0].Amount != 2 {
		t.Fatalf("recent charges %v %v", c, err)
	}
}

func FuzzLoadCap(f *testing.F) {
	f.Add([]byte(`{"cap":{"amount":5,"currency":"USD"}}`))
	f.Add([]byte(`{"cap":{"amount":0,"currency":"usd"}}`))
	f.Add([]byte(`{"cap":{"amount":"5"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, TaskFile), b, 0o600); err != nil {
			t.Fatal(err)
		}
		if c, err := TaskCap(dir); err == nil && c != nil && (c.Amount <= 0 || !validCurrency(c.Currency)) {
			t.Fatalf("TaskCap(%q) = %v", b, c)
		}
	})
}
