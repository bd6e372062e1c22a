package budget

import (
	"encoding/json"
	"fmt"
	"sync"
)

// Notice tells the person a run reached a share of a cap: a line in the
// run's output, and an event the daemon forwards.
type Notice struct {
	Scope   string `json:"scope"`   // ScopeTask or ScopeDaily
	Percent int    `json:"percent"` // 80 or 100
	Spent   Money  `json:"spent"`
	Cap     Money  `json:"cap"`
	Text    string `json:"text"`
}

// Watcher follows one run's usage events and stops the run when the
// tighter of the task's and the daily cap is reached. Steps:
//  1. Stand and Check before the run starts (a spent budget starts none);
//  2. Watch, with what to call for a notice and how to stop the run;
//  3. Observe every usage event the agent sends while the run goes on;
//  4. Err, once the run is over, says whether the budget stopped it.
type Watcher struct {
	s      *Standing
	notify func(Notice)
	stop   func(error)

	mu    sync.Mutex
	m     meter
	run   map[string]float64 // this run's cost, by currency
	told  map[string]int     // scope → the highest share told
	err   error
	taskC Money // what the task had spent before the run
	dayC  Money
}

// Watch starts watching a run from where s stands. notify is told at 80%
// and 100% of each cap (already at the start when the run begins past
// 80%); stop is called once, with the error that stopped the run.
func (s *Standing) Watch(notify func(Notice), stop func(error)) *Watcher {
	w := &Watcher{s: s, notify: notify, stop: stop, m: meter{}, run: map[string]float64{}, told: map[string]int{}}
	w.taskC, _ = s.TaskSpent()
	w.dayC, _ = s.DailySpent()
	w.mu.Lock()
	w.judgeLocked()
	w.mu.Unlock()
	return w
}

// Observe takes one usage event as the agent sent it: ACP's usage_update
// (its cost is the session's so far) or a turn's token counts (no cost:
// nothing to judge).
func (w *Watcher) Observe(update json.RawMessage) {
	var u struct {
		SessionID string          `json:"sessionId"`
		Cost      json.RawMessage `json:"cost"`
	}
	if json.Unmarshal(update, &u) != nil {
		return
	}
	w.Cost(u.SessionID, u.Cost)
}

// Cost takes the cost of one usage line (acp.Usage's Session and Cost);
// an empty or unreadable cost is nothing to judge.
func (w *Watcher) Cost(session string, cost json.RawMessage) {
	c, ok, err := parseCost(cost)
	if err != nil || !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return
	}
	w.run[c.Currency] += w.m.charge(session, c)
	w.judgeLocked()
}

// Run is what this run cost so far, by currency.
func (w *Watcher) Run() []Money {
	w.mu.Lock()
	defer w.mu.Unlock()
	return sortedMoney(w.run)
}

// Err is why the budget stopped the run, or nil.
func (w *Watcher) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (w *Watcher) judgeLocked() {
	if w.s.Task != nil {
		w.judgeScope(ScopeTask, *w.s.Task, w.taskC)
	}
	if w.err == nil && w.s.Daily != nil {
		w.judgeScope(ScopeDaily, *w.s.Daily, w.dayC)
	}
}

func (w *Watcher) judgeScope(scope string, cap Money, before Money) {
	for cur, v := range w.run {
		if cur != cap.Currency && v >= 0 {
			w.halt(w.s.currencyErr(scope, cap, []string{cur}, "the run was stopped"))
			return
		}
	}
	spent := Money{Amount: before.Amount + w.run[cap.Currency], Currency: cap.Currency}
	share := spent.Amount / cap.Amount
	who := "task " + w.s.TaskID + "'s runs have"
	what := "its budget"
	if scope == ScopeDaily {
		who, what = "all tasks have", "the daily budget"
	}
	switch {
	case share >= 1:
		if w.told[scope] < 100 {
			w.told[scope] = 100
			w.tell(Notice{Scope: scope, Percent: 100, Spent: spent, Cap: cap,
				Text: fmt.Sprintf("budget: %s cost %s, all of %s of %s: the run is stopped", who, spent, what, cap)})
		}
		fix := fmt.Sprintf("kule budget %s %s", w.s.TaskID, raised(cap, spent))
		if scope == ScopeDaily {
			fix = "kule daily-budget " + raised(cap, spent)
		}
		w.halt(fmt.Errorf("%w: %s cost %s, %s is %s; the run was stopped (what it did stays in the copy for review; raise it with %s)", ErrSpent, who, spent, what, cap, fix))
	case share >= 0.8:
		if w.told[scope] < 80 {
			w.told[scope] = 80
			w.tell(Notice{Scope: scope, Percent: 80, Spent: spent, Cap: cap,
				Text: fmt.Sprintf("budget: %s cost %s, %.0f%% of %s of %s", who, spent, share*100, what, cap)})
		}
	}
}

func (w *Watcher) tell(n Notice) {
	if w.notify != nil {
		w.notify(n)
	}
}

func (w *Watcher) halt(err error) {
	if w.err != nil {
		return
	}
	w.err = err
	if w.stop != nil {
		// Not under the lock's caller's feet: stopping cancels the turn,
		// which may report usage again.
		go w.stop(err)
	}
}
