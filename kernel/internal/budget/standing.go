package budget

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Window is the span of the daily cap: any 24 hours.
const Window = 24 * time.Hour

// Scopes of a cap.
const (
	ScopeTask  = "task"
	ScopeDaily = "daily"
)

// Standing is where a task stands against its caps at one moment: what
// the checks before a run and the watcher during it judge.
type Standing struct {
	TaskID string
	Now    time.Time
	// Task is the task's cap and Usage what its runs used (every run
	// since the task was made).
	Task  *Money
	Usage *Usage
	// Daily is the cap of all tasks together; Recent are their charges in
	// the 24 hours before Now, oldest first.
	Daily  *Money
	Recent []Charge
}

// Stand reads the caps and the usage of the task in taskDir under the Kule
// home root home. A cap file that cannot be read is an error (no run starts
// on a guess); a damaged usage line is skipped and counted.
func Stand(home, taskDir string, now time.Time) (*Standing, error) {
	s := &Standing{TaskID: filepath.Base(taskDir), Now: now}
	var err error
	if s.Task, err = TaskCap(taskDir); err != nil {
		return nil, err
	}
	if s.Daily, err = DailyCap(home); err != nil {
		return nil, err
	}
	if s.Usage, err = ReadUsage(filepath.Join(taskDir, UsageFile)); err != nil {
		return nil, err
	}
	if s.Daily != nil {
		if s.Recent, err = RecentCharges(home, now); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// RecentCharges are every task's charges in the 24 hours before now,
// oldest first.
func RecentCharges(home string, now time.Time) ([]Charge, error) {
	dirs, err := filepath.Glob(filepath.Join(home, "tasks", "*", UsageFile))
	if err != nil {
		return nil, err
	}
	var out []Charge
	for _, p := range dirs {
		if st, err := os.Stat(p); err == nil && st.ModTime().Before(now.Add(-Window)) {
			continue // last written before the window: nothing in it counts
		}
		u, err := ReadUsage(p)
		if err != nil {
			return nil, err
		}
		for _, c := range u.Charges {
			if c.Time.After(now.Add(-Window)) && !c.Time.After(now) {
				out = append(out, c)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out, nil
}

// spentIn adds up charges in cur, and lists the other currencies seen.
func spentIn(charges []Charge, cur string) (float64, []string) {
	total := 0.0
	other := map[string]bool{}
	for _, c := range charges {
		if c.Currency == cur {
			total += c.Amount
		} else {
			other[c.Currency] = true
		}
	}
	var names []string
	for c := range other {
		names = append(names, c)
	}
	sort.Strings(names)
	return total, names
}

// TaskSpent is what the task's runs cost in its cap's currency (zero
// without a cap), and the other currencies its agents reported.
func (s *Standing) TaskSpent() (Money, []string) {
	if s.Task == nil {
		return Money{}, nil
	}
	v, _ := spentIn(s.Usage.Charges, s.Task.Currency)
	var other []string // Usage.Cost holds every currency reported, even at zero
	for _, m := range s.Usage.Cost {
		if m.Currency != s.Task.Currency {
			other = append(other, m.Currency)
		}
	}
	return Money{Amount: v, Currency: s.Task.Currency}, other
}

// DailySpent is what all tasks cost in the last 24 hours in the daily
// cap's currency, and the other currencies reported in that time.
func (s *Standing) DailySpent() (Money, []string) {
	if s.Daily == nil {
		return Money{}, nil
	}
	v, other := spentIn(s.Recent, s.Daily.Currency)
	return Money{Amount: v, Currency: s.Daily.Currency}, other
}

// Check refuses a run when a cap is spent (ErrSpent) or cannot be judged
// (ErrCurrency); the error says what was spent, the cap, and how to raise
// it. nil: the run may start.
func (s *Standing) Check() error {
	if s.Task != nil {
		spent, other := s.TaskSpent()
		if len(other) > 0 {
			return s.currencyErr(ScopeTask, *s.Task, other, "no run was started")
		}
		if spent.Amount >= s.Task.Amount {
			return fmt.Errorf("%w: task %s's runs have cost %s of its %s budget; no run was started (raise it with kule budget %s %s, or kule budget %s off)",
				ErrSpent, s.TaskID, spent, *s.Task, s.TaskID, raised(*s.Task, spent), s.TaskID)
		}
	}
	if s.Daily != nil {
		spent, other := s.DailySpent()
		if len(other) > 0 {
			return s.currencyErr(ScopeDaily, *s.Daily, other, "no run was started")
		}
		if spent.Amount >= s.Daily.Amount {
			return fmt.Errorf("%w: all tasks have cost %s in the last 24 hours, the daily budget is %s; no run was started (raise it with kule daily-budget %s, or kule daily-budget off; or wait: the oldest of those costs leaves the 24 hours at %s)",
				ErrSpent, spent, *s.Daily, raised(*s.Daily, spent), s.oldestLeaves().Format("15:04 MST"))
		}
	}
	return nil
}

func (s *Standing) oldestLeaves() time.Time {
	for _, c := range s.Recent {
		if c.Currency == s.Daily.Currency {
			return c.Time.Add(Window).Local()
		}
	}
	return s.Now.Add(Window).Local()
}

// raised proposes a cap above what was spent, as a person types it.
func raised(c, spent Money) string {
	v := c.Amount * 2
	if spent.Amount >= v {
		v = spent.Amount * 2
	}
	s := fmt.Sprintf("%.2f", v)
	s = strings.TrimSuffix(strings.TrimSuffix(s, "0"), "0")
	s = strings.TrimSuffix(s, ".")
	if c.Currency != DefaultCurrency {
		s += " " + c.Currency
	}
	return s
}

func (s *Standing) currencyErr(scope string, c Money, other []string, what string) error {
	which, fix := fmt.Sprintf("task %s's budget is %s", s.TaskID, c), fmt.Sprintf("kule budget %s AMOUNT %s, or kule budget %s off", s.TaskID, other[0], s.TaskID)
	if scope == ScopeDaily {
		which, fix = fmt.Sprintf("the daily budget is %s", c), fmt.Sprintf("kule daily-budget AMOUNT %s, or kule daily-budget off", other[0])
	}
	return fmt.Errorf("%w: %s, but agents reported cost in %s; Kule never converts currencies, so it cannot tell what is left: %s (set the budget in that currency with %s)",
		ErrCurrency, which, strings.Join(other, ", "), what, fix)
}

// For the daemon's task JSON and kule status.

// Summary is a task's usage and budgets, as kule status and the app show it.
type Summary struct {
	Usage *Usage `json:"usage"`
	// Budget is the task's cap and BudgetSpent what its runs cost in the
	// cap's currency.
	Budget      *Money `json:"budget,omitempty"`
	BudgetSpent *Money `json:"budget_spent,omitempty"`
	// Daily is the cap of all tasks in any 24 hours, DailySpent what they
	// cost in the last 24 hours in its currency.
	Daily      *Money `json:"daily_budget,omitempty"`
	DailySpent *Money `json:"daily_spent,omitempty"`
	// Blocked is why no run of the task starts now ("" when one may).
	Blocked string `json:"blocked,omitempty"`
}

// ForTask is the summary of the task in taskDir under the Kule home root
// home: what its runs used and where it stands against its caps. The
// daemon puts it in its task JSON.
func ForTask(home, taskDir string, now time.Time) (*Summary, error) {
	s, err := Stand(home, taskDir, now)
	if err != nil {
		return nil, err
	}
	sum := &Summary{Usage: s.Usage, Budget: s.Task, Daily: s.Daily}
	if s.Task != nil {
		m, _ := s.TaskSpent()
		sum.BudgetSpent = &m
	}
	if s.Daily != nil {
		m, _ := s.DailySpent()
		sum.DailySpent = &m
	}
	if err := s.Check(); err != nil {
		sum.Blocked = err.Error()
	}
	return sum, nil
}
