// Package budget caps what agents' runs may cost, as the agents report it:
// a task's runs together (`kule budget TASK 5`) and all tasks together in
// any 24 hours (`kule daily-budget 20`). It reads each task's usage.jsonl
// (written by kernel/internal/acp), adds up tokens and cost, refuses a run once a
// cap is spent, and watches a run's usage events to stop it when the
// tighter cap is reached, telling the person at 80% and at 100%.
//
// Costs in different currencies are never added together and never
// converted. A cap is judged only against costs in its own currency; when
// an agent reports cost in another currency, the budget cannot be judged,
// and Kule says so and fails closed: no run starts (ErrCurrency), and a
// running one is stopped.
package budget

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kulehq/kule/kernel/internal/atomicfile"
)

// Errors a caller can test for.
var (
	// ErrSpent: a cap is reached; no run starts, a running one is stopped.
	ErrSpent = errors.New("budget spent")
	// ErrCurrency: an agent reported cost in a currency other than the
	// cap's; Kule never converts, so it cannot tell what is left.
	ErrCurrency = errors.New("budget cannot be judged")
	// ErrBadCap: not an amount and a currency.
	ErrBadCap = errors.New("budget: not an amount")
	// ErrDamaged: a budget file does not parse; nothing was changed.
	ErrDamaged = errors.New("budget: damaged file")
)

// DefaultCurrency is the currency of a cap given without one.
const DefaultCurrency = "USD"

// Files.
const (
	// TaskFile is a task's cap, in the task's directory.
	TaskFile = "budget.json"
	// DailyFile is the cap of all tasks in any 24 hours, in $KULE_HOME.
	DailyFile = "daily-budget.json"
	// UsageFile is what a task's runs used (written by kernel/internal/acp).
	UsageFile = "usage.jsonl"
)

// Money is an amount in one currency (ISO 4217 code, upper case).
type Money struct {
	Amount   float64 `json:"amount"`
	Currency string  `json:"currency"`
}

func (m Money) String() string {
	switch m.Currency {
	case "USD":
		return fmt.Sprintf("$%.2f", m.Amount)
	case "EUR":
		return fmt.Sprintf("€%.2f", m.Amount)
	case "GBP":
		return fmt.Sprintf("£%.2f", m.Amount)
	}
	return fmt.Sprintf("%.2f %s", m.Amount, m.Currency)
}

// ParseCap reads "5", "5 EUR", "5eur", "2.50 USD"; the currency is USD
// when none is given.
func ParseCap(s string) (Money, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, cur := t[:i], strings.ToUpper(strings.TrimSpace(t[i:]))
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return Money{}, fmt.Errorf("%w: %q (give an amount above 0 and a currency if not USD: 5, 5 EUR; off removes the budget)", ErrBadCap, s)
	}
	if cur == "" {
		cur = DefaultCurrency
	}
	if !validCurrency(cur) {
		return Money{}, fmt.Errorf("%w: %q is not a currency code (three letters: USD, EUR, GBP…)", ErrBadCap, cur)
	}
	return Money{Amount: v, Currency: cur}, nil
}

func validCurrency(c string) bool {
	if len(c) != 3 {
		return false
	}
	for _, r := range c {
		if r < 'A' || r > 'Z' {
			return false
		}
	}
	return true
}

// capRecord is budget.json and daily-budget.json.
type capRecord struct {
	Cap Money `json:"cap"`
}

func loadCap(path string) (*Money, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("budget: %w", err)
	}
	var r capRecord
	if err := json.Unmarshal(b, &r); err != nil || r.Cap.Amount <= 0 || !validCurrency(r.Cap.Currency) {
		// Fail closed: a cap that cannot be read must not read as none.
		return nil, fmt.Errorf("%w: %s (set the budget again, or remove the file): %v", ErrDamaged, path, err)
	}
	return &r.Cap, nil
}

func saveCap(path string, c *Money) error {
	if c == nil {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("budget: %w", err)
		}
		return atomicfile.SyncDir(filepath.Dir(path))
	}
	b, err := json.Marshal(capRecord{Cap: *c})
	if err != nil {
		return err
	}
	if err := atomicfile.Write(path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("budget: %w", err)
	}
	return nil
}

// TaskCap is the cap of the task in taskDir; nil when it has none.
func TaskCap(taskDir string) (*Money, error) { return loadCap(filepath.Join(taskDir, TaskFile)) }

// SetTaskCap sets (nil: removes) the task's cap, atomically.
func SetTaskCap(taskDir string, c *Money) error { return saveCap(filepath.Join(taskDir, TaskFile), c) }

// DailyCap is the cap of all tasks in any 24 hours; nil when there is none.
func DailyCap(home string) (*Money, error) { return loadCap(filepath.Join(home, DailyFile)) }

// SetDailyCap sets (nil: removes) the daily cap, atomically.
func SetDailyCap(home string, c *Money) error { return saveCap(filepath.Join(home, DailyFile), c) }
