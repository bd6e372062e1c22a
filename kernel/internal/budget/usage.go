package budget

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"sort"
	"strings"
	"time"
)

// The sources of usage.jsonl's lines. kernel/internal/acp writes SourceUpdate (a
// usage_update: context size and, when the agent says, the session's cost
// so far) and SourcePrompt (a turn's token counts); the run path writes
// SourceRun when a run starts (MarkRun).
const (
	SourceUpdate = "usage_update"
	SourcePrompt = "prompt"
	SourceRun    = "run_start"
)

// maxLine bounds one line of usage.jsonl, as kernel/internal/acp bounds a message.
const maxLine = 64 << 20

// record is one line of usage.jsonl (acp.Usage, and the run marks).
type record struct {
	Time    time.Time       `json:"time"`
	Session string          `json:"session,omitempty"`
	Source  string          `json:"source"`
	Used    *int64          `json:"used,omitempty"`
	Size    *int64          `json:"size,omitempty"`
	Cost    json.RawMessage `json:"cost,omitempty"`
	Tokens  json.RawMessage `json:"tokens,omitempty"`
}

// Tokens are the token counts of a task's turns, added up.
type Tokens struct {
	Total       int64 `json:"total"`
	Input       int64 `json:"input,omitempty"`
	Output      int64 `json:"output,omitempty"`
	Thought     int64 `json:"thought,omitempty"`
	CachedRead  int64 `json:"cached_read,omitempty"`
	CachedWrite int64 `json:"cached_write,omitempty"`
}

// promptTokens is ACP's PromptResponse.usage.
type promptTokens struct {
	Total       int64 `json:"totalTokens"`
	Input       int64 `json:"inputTokens"`
	Output      int64 `json:"outputTokens"`
	Thought     int64 `json:"thoughtTokens"`
	CachedRead  int64 `json:"cachedReadTokens"`
	CachedWrite int64 `json:"cachedWriteTokens"`
}

// Context is the last context-window report.
type Context struct {
	Used int64     `json:"used"`
	Size int64     `json:"size"`
	Time time.Time `json:"time"`
}

// Charge is cost an agent reported, at the time it reported it.
type Charge struct {
	Time time.Time `json:"time"`
	Money
}

// Usage is what a task's runs used, from its usage.jsonl.
type Usage struct {
	Tokens  Tokens   `json:"tokens"`
	Cost    []Money  `json:"cost"` // one per currency, by currency
	Context *Context `json:"context,omitempty"`
	Runs    int      `json:"runs"` // runs that marked their start
	Charges []Charge `json:"-"`
	// Damaged counts lines that did not parse (a crash mid-write) or
	// carried a cost Kule cannot read; they are skipped.
	Damaged int `json:"damaged_lines,omitempty"`
}

// Spent is what the charges in currency cur add up to.
func (u *Usage) Spent(cur string) float64 {
	for _, m := range u.Cost {
		if m.Currency == cur {
			return m.Amount
		}
	}
	return 0
}

// meter turns the cumulative session cost agents report (ACP's
// usage_update.cost is the session's cost so far) into charges. A run
// mark starts every session's count from zero, since an agent process
// counts from its own start; a report below the last is such a restart
// too (a file written before run marks existed).
type meter map[string]float64 // session + currency → last reported

func (m meter) charge(session string, c Money) float64 {
	key := session + "\x00" + c.Currency
	last := m[key]
	m[key] = c.Amount
	if c.Amount >= last {
		return c.Amount - last
	}
	return c.Amount
}

// parseCost reads ACP's {"amount": 0.5, "currency": "USD"}.
func parseCost(raw json.RawMessage) (Money, bool, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return Money{}, false, nil
	}
	var c struct {
		Amount   *float64 `json:"amount"`
		Currency string   `json:"currency"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return Money{}, false, err
	}
	cur := strings.ToUpper(strings.TrimSpace(c.Currency))
	if c.Amount == nil || *c.Amount < 0 || math.IsNaN(*c.Amount) || math.IsInf(*c.Amount, 0) || !validCurrency(cur) {
		return Money{}, false, fmt.Errorf("budget: cost %s is not an amount and a currency", raw)
	}
	return Money{Amount: *c.Amount, Currency: cur}, true, nil
}

// ReadUsage reads a usage.jsonl; a missing file is no usage.
func ReadUsage(path string) (*Usage, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &Usage{Cost: []Money{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("budget: usage: %w", err)
	}
	defer f.Close()
	return ParseUsage(f)
}

// ParseUsage reads usage.jsonl's lines. A damaged line is counted and
// skipped; the others are kept.
func ParseUsage(r io.Reader) (*Usage, error) {
	u := &Usage{}
	m := meter{}
	sums := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var rec record
		if json.Unmarshal(line, &rec) != nil {
			u.Damaged++
			continue
		}
		switch rec.Source {
		case SourceRun:
			u.Runs++
			clear(m)
		case SourceUpdate:
			if rec.Used != nil && rec.Size != nil {
				u.Context = &Context{Used: *rec.Used, Size: *rec.Size, Time: rec.Time}
			}
			c, ok, err := parseCost(rec.Cost)
			if err != nil {
				u.Damaged++
				continue
			}
			if !ok {
				continue
			}
			if d := m.charge(rec.Session, c); d > 0 {
				u.Charges = append(u.Charges, Charge{Time: rec.Time, Money: Money{Amount: d, Currency: c.Currency}})
				sums[c.Currency] += d
			} else if _, seen := sums[c.Currency]; !seen {
				sums[c.Currency] = 0 // a cost of 0 is still a currency reported
			}
		case SourcePrompt:
			var t promptTokens
			if json.Unmarshal(rec.Tokens, &t) != nil {
				u.Damaged++
				continue
			}
			total := t.Total
			if total == 0 {
				total = t.Input + t.Output + t.Thought
			}
			u.Tokens.Total += total
			u.Tokens.Input += t.Input
			u.Tokens.Output += t.Output
			u.Tokens.Thought += t.Thought
			u.Tokens.CachedRead += t.CachedRead
			u.Tokens.CachedWrite += t.CachedWrite
		}
	}
	u.Cost = sortedMoney(sums)
	if err := sc.Err(); err != nil {
		return u, fmt.Errorf("budget: usage: %w", err)
	}
	return u, nil
}

func sortedMoney(sums map[string]float64) []Money {
	out := []Money{}
	for c, a := range sums {
		out = append(out, Money{Amount: a, Currency: c})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Currency < out[j].Currency })
	return out
}

// MarkRun writes the line that starts a run in usage.jsonl: the agent's
// process counts its session's cost from zero again.
func MarkRun(w io.Writer, now time.Time) error {
	b, err := json.Marshal(record{Time: now.UTC(), Source: SourceRun})
	if err != nil {
		return err
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("budget: mark the run in usage.jsonl: %w", err)
	}
	return nil
}
