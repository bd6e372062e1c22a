package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kulehq/kule/kernel"
)

func budgetCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "budget TASK [AMOUNT [CURRENCY] | off]",
		Short: "Show or cap what the task's runs may cost together (USD unless a currency follows)",
		Long: `kule budget TASK 5 caps what the task's runs may cost together, as their
agents report it; kule budget TASK 5 EUR in euros; off removes the cap.
No run starts once it is spent, and a run whose agent reports cost as it
works is stopped when it gets there; at 80% and at 100% you are told.
Costs in another currency than the cap's are never converted: Kule says it
cannot judge them and starts no run until the cap is in that currency.`,
		Args: cobra.RangeArgs(1, 3),
		RunE: withTask(func(k *kernel.Kernel, t *kernel.Task, cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				c, err := capArg(args[1:])
				if err != nil {
					return err
				}
				if err := kernel.SetTaskCap(t.Paths.Dir, c); err != nil {
					return err
				}
			}
			sum, err := kernel.BudgetForTask(k.Store().Root, t.Paths.Dir, time.Now())
			if err != nil {
				return err
			}
			printBudget(cmd.OutOrStdout(), t.ID, sum)
			return nil
		}),
	}
}

func dailyBudgetCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "daily-budget [AMOUNT [CURRENCY] | off]",
		Short: "Show or cap what all tasks' runs may cost together in any 24 hours",
		Long: `kule daily-budget 20 caps what every task's runs may cost together in any
24 hours (USD unless a currency follows; off removes it). A run is held to
the tighter of this and its task's budget.`,
		Args: cobra.RangeArgs(0, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, err := openKernel()
			if err != nil {
				return err
			}
			if len(args) > 0 {
				c, err := capArg(args)
				if err != nil {
					return err
				}
				if err := kernel.SetDailyCap(k.Store().Root, c); err != nil {
					return err
				}
			}
			c, err := kernel.DailyCap(k.Store().Root)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if c == nil {
				fmt.Fprintln(w, "daily budget: none (kule daily-budget 20 sets one)")
				return nil
			}
			recent, err := kernel.RecentCharges(k.Store().Root, time.Now())
			if err != nil {
				return err
			}
			spent, other := 0.0, map[string]bool{}
			for _, ch := range recent {
				if ch.Currency == c.Currency {
					spent += ch.Amount
				} else {
					other[ch.Currency] = true
				}
			}
			fmt.Fprintf(w, "daily budget: %s · all tasks in the last 24 hours: %s (%.0f%%)\n", c, kernel.Money{Amount: spent, Currency: c.Currency}, 100*spent/c.Amount)
			for cur := range other {
				fmt.Fprintf(w, "  agents also reported cost in %s: never converted, so the daily budget cannot be judged and no run starts\n", cur)
			}
			return nil
		},
	}
}

// capArg reads "5", "5 EUR", "5EUR" or "off" (nil).
func capArg(args []string) (*kernel.Money, error) {
	s := strings.Join(args, " ")
	if strings.EqualFold(strings.TrimSpace(s), "off") {
		return nil, nil
	}
	c, err := kernel.ParseCap(s)
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// statusBudget is kule status's part: the task's usage and budgets, or
// nothing for a task never run with no caps.
func statusBudget(w io.Writer, k *kernel.Kernel, t *kernel.Task) *kernel.BudgetSummary {
	sum, err := kernel.BudgetForTask(k.Store().Root, t.Paths.Dir, time.Now())
	if err != nil {
		fmt.Fprintf(w, "budget: cannot tell: %v\n", err)
		return nil
	}
	if sum.Usage.Tokens.Total > 0 || len(sum.Usage.Cost) > 0 || sum.Budget != nil || sum.Daily != nil {
		printBudget(w, t.ID, sum)
	}
	return sum
}

// addBudgetJSON adds the task's usage and budgets to kule status --json.
func addBudgetJSON(m map[string]any, k *kernel.Kernel, t *kernel.Task) {
	sum, err := kernel.BudgetForTask(k.Store().Root, t.Paths.Dir, time.Now())
	if err != nil {
		m["usage_error"] = err.Error()
		return
	}
	m["usage"] = sum
}

// printBudget prints a task's usage and where it stands against its caps
// (kule budget, kule status).
func printBudget(w io.Writer, id string, s *kernel.BudgetSummary) {
	u := s.Usage
	var costs []string
	for _, m := range u.Cost {
		costs = append(costs, m.String())
	}
	line := "usage: "
	switch {
	case u.Tokens.Total == 0 && len(costs) == 0:
		line += "none reported yet"
	default:
		line += fmt.Sprintf("%s tokens", thousands(u.Tokens.Total))
		if len(costs) > 0 {
			line += " · cost " + strings.Join(costs, " + ") // never added across currencies
		} else {
			line += " · the agents reported no cost"
		}
	}
	switch {
	case u.Runs == 1:
		line += " · 1 run"
	case u.Runs > 1:
		line += " · " + plural(u.Runs, "run")
	}
	if u.Context != nil && u.Context.Size > 0 {
		line += fmt.Sprintf(" · context %s of %s", thousands(u.Context.Used), thousands(u.Context.Size))
	}
	fmt.Fprintln(w, line)
	if s.Budget != nil {
		fmt.Fprintf(w, "budget: %s of %s (%.0f%%)\n", s.BudgetSpent, s.Budget, 100*s.BudgetSpent.Amount/s.Budget.Amount)
	} else {
		fmt.Fprintf(w, "budget: none (kule budget %s 5 sets one)\n", id)
	}
	if s.Daily != nil {
		fmt.Fprintf(w, "daily budget: %s of %s in the last 24 hours, all tasks (%.0f%%)\n", s.DailySpent, s.Daily, 100*s.DailySpent.Amount/s.Daily.Amount)
	}
	if s.Blocked != "" {
		fmt.Fprintf(w, "no run starts: %s\n", s.Blocked)
	}
	if u.Damaged > 0 {
		fmt.Fprintf(w, "%s skipped\n", count(u.Damaged, "damaged line in usage.jsonl was", "damaged lines in usage.jsonl were"))
	}
}

func thousands(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
