package proxy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

// Verdicts in network.jsonl.
const (
	Tunneled  = "tunneled"  // CONNECT passed (looked inside or not: see Intercepted)
	Forwarded = "forwarded" // plain HTTP forwarded
	Refused   = "refused"   // the connection was not made
)

// Entry is one line of network.jsonl: one connection the task asked for.
type Entry struct {
	Time        time.Time `json:"time"`
	Host        string    `json:"host"`
	Port        int       `json:"port"`
	Verdict     string    `json:"verdict"`
	Rule        string    `json:"rule,omitempty"`
	Reason      string    `json:"reason,omitempty"`
	Named       bool      `json:"named,omitempty"`       // the exact host:port was named by the person (a local endpoint may be reached)
	Loopback    bool      `json:"loopback,omitempty"`    // the host is, or was reached at, this machine's loopback
	Intercepted bool      `json:"intercepted,omitempty"` // the proxy read the requests inside TLS
	Secrets     []string  `json:"secrets,omitempty"`     // names of the secrets sent on it
	Refusals    []string  `json:"refusals,omitempty"`    // requests refused inside the connection
	Requests    int       `json:"requests,omitempty"`    // requests read (intercepted or plain HTTP)
	WebSockets  int       `json:"websockets,omitempty"`  // WebSocket upgrades relayed (frames read, see websocket.go)
	BytesUp     int64     `json:"bytes_up"`
	BytesDown   int64     `json:"bytes_down"`
	Error       string    `json:"error,omitempty"`
}

// journal appends entries to network.jsonl and keeps them for Summary.
type journal struct {
	mu      sync.Mutex
	path    string
	entries []Entry
}

func (j *journal) add(e Entry) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.entries = append(j.entries, e)
	if j.path == "" {
		return nil
	}
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(j.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("proxy: network log: %w", err)
	}
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("proxy: network log: %w", err)
	}
	return nil
}

func (j *journal) all() []Entry {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]Entry(nil), j.entries...)
}

// ReadLog reads a network.jsonl. A damaged line is an error naming its number.
func ReadLog(path string) ([]Entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("proxy: network log: %w", err)
	}
	defer f.Close()
	var out []Entry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for n := 1; sc.Scan(); n++ {
		var e Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return out, fmt.Errorf("proxy: network log %s line %d: %w", path, n, err)
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// Summary returns one line per host (and verdict) for the CLI, in the order
// the hosts were first met:
//
//	net: api.example.test:443 ×2 · refused, waits for approval (no-rule-lets-it-pass)
//	net: api.stripe.com:443 · tunneled · with STRIPE_KEY
func Summary(entries []Entry) []string {
	type group struct {
		e       Entry
		n       int
		secrets map[string]bool
		refused []string
		errs    []string
		first   int
	}
	groups := map[string]*group{}
	var order []string
	for i, e := range entries {
		k := fmt.Sprintf("%s:%d|%s|%s|%s", e.Host, e.Port, e.Verdict, e.Rule, e.Reason)
		g, ok := groups[k]
		if !ok {
			g = &group{e: e, secrets: map[string]bool{}, first: i}
			groups[k] = g
			order = append(order, k)
		}
		g.n++
		for _, s := range e.Secrets {
			g.secrets[s] = true
		}
		if e.Error != "" && len(g.errs) == 0 {
			g.errs = append(g.errs, e.Error)
		}
		for _, r := range e.Refusals {
			if len(g.refused) < 3 {
				g.refused = append(g.refused, r)
			}
		}
	}
	lines := make([]string, 0, len(order))
	for _, k := range order {
		g := groups[k]
		var b strings.Builder
		fmt.Fprintf(&b, "net: %s:%d", g.e.Host, g.e.Port)
		if g.n > 1 {
			fmt.Fprintf(&b, " ×%d", g.n)
		}
		b.WriteString(" · " + g.e.Verdict)
		if g.e.Reason != "" && g.e.Verdict == Refused {
			b.WriteString(", " + g.e.Reason)
		}
		if g.e.Rule != "" {
			b.WriteString(" (" + g.e.Rule + ")")
		}
		if len(g.secrets) > 0 {
			names := make([]string, 0, len(g.secrets))
			for s := range g.secrets {
				names = append(names, s)
			}
			sort.Strings(names)
			b.WriteString(" · with " + strings.Join(names, ", "))
		}
		for _, r := range g.refused {
			b.WriteString(" · refused " + r)
		}
		for _, e := range g.errs {
			b.WriteString(" · failed: " + e)
		}
		lines = append(lines, b.String())
	}
	return lines
}
