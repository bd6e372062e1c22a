package agentrun

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/internal/agents"
	"github.com/kulehq/kule/kernel/internal/proxy"
)

// Errors a caller can test for.
var (
	// ErrNoTrial: Try was given no profile to try.
	ErrNoTrial = errors.New("try: no profile to try")
	// ErrTrialTime: the trial ran out of its time and was stopped.
	ErrTrialTime = errors.New("the agent was stopped")
)

// TrialKey is what each of a trial's key variables holds: no key, so that
// the agent reaches for its model's host (which the trial lists) instead of
// stopping at start for want of one. It has a placeholder's form, which the
// sandbox passes as opening nothing.
const TrialKey = "kule-secret-trial-holds-no-key"

// DefaultTrialTime bounds a trial whose Options set no TrialTime.
const DefaultTrialTime = 3 * time.Minute

// TrialOf is what Try runs of p: its name, command, env, mode and login
// method, a writable home of its own (own_home HOME: an empty folder in the
// trial's task, gone with it) and nothing of the person's (no state, login,
// read-only paths, hosts, or keys: each key variable holds TrialKey), as a
// draft from the registry opens nothing.
func TrialOf(p agents.Profile) agents.Profile {
	env := map[string]string{}
	for k, v := range p.Env {
		env[k] = v
	}
	for k := range p.Keys {
		env[k] = TrialKey
	}
	if len(env) == 0 {
		env = nil
	}
	return agents.Profile{Name: p.Name, Description: p.Description, Command: p.Command, Env: env, Mode: p.Mode, Auth: p.Auth, OwnHome: "HOME", Node: p.Node}
}

// Host is one host a run asked the task's proxy for.
type Host struct {
	Host    string `json:"host"`
	Port    int    `json:"port"`
	Passed  bool   `json:"passed"`
	Rule    string `json:"rule,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Connect int    `json:"connections"`
}

// TryReport is what a trial run found.
type TryReport struct {
	Result Result
	Err    error  // the agent did not start or the turn failed (the hosts are still listed)
	Hosts  []Host // every host it asked for, sorted

	timedOut atomic.Bool
}

// Wanted are the HTTPS hosts the agent was refused: what its profile's
// hosts would need.
func (r *TryReport) Wanted() []string {
	var out []string
	for _, h := range r.Hosts {
		if !h.Passed && h.Port == 443 {
			out = append(out, h.Host)
		}
	}
	return out
}

// Try runs o.Trial once on an empty folder of its own (a task made for the
// run and deleted after it), opened no wider than the trial profile, for
// at most o.TrialTime, and reports the hosts it wanted to reach, from the
// task's network log — also when the agent failed to start. Files it was
// refused are not known: the sandbox hides them without a trace.
func Try(ctx context.Context, k *kernel.Kernel, o Options) (*TryReport, error) {
	if o.Trial == nil {
		return nil, ErrNoTrial
	}
	trial := TrialOf(*o.Trial)
	o.Trial, o.Fresh = &trial, true
	limit := o.TrialTime
	if limit <= 0 {
		limit = DefaultTrialTime
	}
	folder, err := os.MkdirTemp("", "kule-try-")
	if err != nil {
		return nil, fmt.Errorf("try: %w", err)
	}
	defer os.RemoveAll(folder)
	nr, err := k.NewTask(ctx, folder)
	if err != nil {
		return nil, fmt.Errorf("try: %w", err)
	}
	t := nr.Task
	defer k.Delete(context.WithoutCancel(ctx), t) // removed however the trial ends
	rep := &TryReport{}
	timer := time.AfterFunc(limit, func() { rep.timedOut.Store(true) })
	defer timer.Stop()
	sctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	r, err := Start(sctx, k, t, o)
	if err != nil {
		rep.Err = err
	} else {
		// At the limit the agent is stopped: the turn is cancelled, and
		// the agent killed if it does not end.
		stopAt := context.AfterFunc(sctx, r.Stop)
		rep.Result, rep.Err = r.Wait()
		stopAt()
	}
	if rep.timedOut.Load() {
		rep.Err = fmt.Errorf("try: the trial's time (%s) ran out: %w", limit, ErrTrialTime)
	}
	rep.Hosts, err = hostsOf(filepath.Join(t.Paths.Dir, "network.jsonl"))
	if err != nil {
		return rep, err
	}
	return rep, nil
}

// hostsOf reads network.jsonl into one line a host:port.
func hostsOf(path string) ([]Host, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("try: %w", err)
	}
	defer f.Close()
	by := map[string]*Host{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var e proxy.Entry
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Host == "" {
			continue
		}
		key := e.Host + ":" + strconv.Itoa(e.Port)
		h := by[key]
		if h == nil {
			h = &Host{Host: e.Host, Port: e.Port}
			by[key] = h
		}
		h.Connect++
		if e.Verdict != proxy.Refused {
			h.Passed = true
		}
		if h.Rule == "" || (!h.Passed && e.Verdict == proxy.Refused) {
			h.Rule, h.Reason = e.Rule, e.Reason
		}
	}
	out := make([]Host, 0, len(by))
	for _, h := range by {
		out = append(out, *h)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Host != out[j].Host {
			return out[i].Host < out[j].Host
		}
		return out[i].Port < out[j].Port
	})
	return out, sc.Err()
}
