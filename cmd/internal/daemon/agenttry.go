package daemon

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/agentrun"
)

// Settings → Agents → Try: an agent's trial run from the page, as kule agents try NAME runs
// it (agentrun.Try: an empty folder of its own, nothing of the person's home, no keys, no
// hosts, at most agentrun.DefaultTrialTime). The page lists the hosts it reached; the ones
// the person ticks go into the profile's hosts through kernel.AddAgentHosts, the call
// kule agents try --apply makes, so the changed profile waits for approval as any does.

// trialPrompt is what a trial asks the agent, as kule agents try does by default.
const trialPrompt = "Say hello in one short line."

// trials are the daemon's trials: one at a time (each runs an agent), and the last one of
// each agent, whose refused HTTPS hosts are the only ones Keep may add to its profile.
type trials struct {
	mu      sync.Mutex
	running string // the agent being tried, "" when none
	last    map[string]trialKept
}

type trialKept struct {
	id     string
	wanted []string
}

// TrialHost is one host a trial reached, as the page lists it.
type TrialHost struct {
	agentrun.Host
	// CanKeep: a refused HTTPS host, which the profile's hosts would open (what kule agents
	// try --apply adds); Kept: the profile names it already.
	CanKeep bool `json:"can_keep"`
	Kept    bool `json:"kept"`
}

// TrialView is how a trial ended and what it reached.
type TrialView struct {
	ID         string      `json:"id"`
	Agent      string      `json:"agent"`
	StopReason string      `json:"stop_reason,omitempty"`
	Error      string      `json:"error,omitempty"`
	Seconds    float64     `json:"seconds"`
	Limit      string      `json:"limit"` // the trial's time limit, in words
	Hosts      []TrialHost `json:"hosts"`
	// Personal: the profile is in the person's agents.toml, so hosts can be kept in it; a
	// built-in one is never changed.
	Personal bool `json:"personal"`
}

var (
	errTrialRunning = errors.New("a trial is running")
	errTrialStale   = errors.New("not the agent's last trial")
)

func (d *Daemon) tryAgent(w http.ResponseWriter, r *http.Request) {
	set, p, err := d.agentProfile(r)
	if err != nil {
		fail(w, err)
		return
	}
	d.trials.mu.Lock()
	if d.trials.running != "" {
		busy := d.trials.running
		d.trials.mu.Unlock()
		fail(w, fmt.Errorf("%w: the trial of %s is still running; try %s when it has ended (at most %s)", errTrialRunning, busy, p.Name, agentrun.DefaultTrialTime))
		return
	}
	d.trials.running = p.Name
	d.trials.mu.Unlock()
	defer func() { d.trials.mu.Lock(); d.trials.running = ""; d.trials.mu.Unlock() }()
	defer d.busy()()

	said := &tailWriter{max: 4 << 10}
	o := agentrun.Options{Agents: set, Trial: &p, TrialTime: agentrun.DefaultTrialTime, Prompt: trialPrompt, Stderr: said}
	if d.cfg.AgentOptions != nil {
		d.cfg.AgentOptions(&o)
	}
	o.Trial, o.TrialTime, o.Prompt = &p, agentrun.DefaultTrialTime, trialPrompt // a trial is never opened wider
	start := time.Now()
	// The trial ends with the request: a page that went away stops it.
	rep, err := agentrun.Try(r.Context(), d.k, o)
	if err != nil && rep == nil {
		fail(w, fmt.Errorf("the trial of %s did not run: %w", p.Name, err))
		return
	}
	v := TrialView{ID: rand.Text()[:12], Agent: p.Name, StopReason: rep.Result.StopReason, Seconds: time.Since(start).Seconds(),
		Limit: minutesWords(agentrun.DefaultTrialTime), Hosts: []TrialHost{}, Personal: !p.Builtin}
	if rep.Err != nil {
		v.Error = rep.Err.Error()
		if tail := strings.TrimSpace(said.String()); tail != "" {
			v.Error += " — it said: " + tail
		}
	} else if err != nil {
		v.Error = err.Error()
	}
	wanted := rep.Wanted()
	for _, h := range rep.Hosts {
		th := TrialHost{Host: h, Kept: slices.Contains(p.Hosts, h.Host)}
		th.CanKeep = slices.Contains(wanted, h.Host) && h.Port == 443 && !h.Passed && !th.Kept
		v.Hosts = append(v.Hosts, th)
	}
	d.trials.mu.Lock()
	if d.trials.last == nil {
		d.trials.last = map[string]trialKept{}
	}
	d.trials.last[p.Name] = trialKept{id: v.ID, wanted: wanted}
	d.trials.mu.Unlock()
	writeJSON(w, 200, v)
}

// KeepHostsRequest names the trial and the hosts ticked in its list.
type KeepHostsRequest struct {
	Trial string   `json:"trial"`
	Hosts []string `json:"hosts"`
}

// checkTrialHosts is the guard that Keep adds only hosts the agent's last trial was refused:
// without it a request could slip any host into a profile under the trial's name, and the
// person approving the profile would read it as one the agent asked for. A test turns it off
// to show the host it keeps out.
var checkTrialHosts = true

func (d *Daemon) keepTrialHosts(w http.ResponseWriter, r *http.Request) {
	_, p, err := d.agentProfile(r)
	if err != nil {
		fail(w, err)
		return
	}
	var in KeepHostsRequest
	if err := readBody(r, &in); err != nil {
		fail(w, err)
		return
	}
	if p.Builtin {
		fail(w, fmt.Errorf("%w: %s is built in and is not changed; copy it into %s under another name to change it (nothing was changed)", errBadRequest, p.Name, kernel.PersonalAgentsPath(d.home)))
		return
	}
	if len(in.Hosts) == 0 {
		fail(w, fmt.Errorf("%w: no host is ticked; tick the hosts %s may reach (nothing was changed)", errBadRequest, p.Name))
		return
	}
	if checkTrialHosts {
		d.trials.mu.Lock()
		last, ok := d.trials.last[p.Name]
		d.trials.mu.Unlock()
		if !ok || last.id != in.Trial {
			fail(w, fmt.Errorf("%w: %s was tried again since, or the daemon restarted; try it again and tick its hosts (nothing was changed)", errTrialStale, p.Name))
			return
		}
		for _, h := range in.Hosts {
			if !slices.Contains(last.wanted, h) {
				fail(w, fmt.Errorf("%w: the trial of %s was not refused %q; only the hosts its trial was refused can be kept from here (nothing was changed)", errBadRequest, p.Name, h))
				return
			}
		}
	}
	added, err := kernel.AddAgentHosts(d.home, p.Name, in.Hosts)
	if err != nil {
		fail(w, fmt.Errorf("%w (nothing was changed)", err))
		return
	}
	d.Bus.Publish("task", "", map[string]any{"action": "agents"})
	writeJSON(w, 200, map[string]any{"added": orEmpty(added), "waits_for_approval": len(added) > 0})
}

// minutesWords is a time limit as a person says it: "3 minutes".
func minutesWords(d time.Duration) string {
	if d == time.Minute {
		return "1 minute"
	}
	return fmt.Sprintf("%g minutes", d.Minutes())
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailWriter) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.ToValidUTF8(string(t.b), "\uFFFD")
}

func (d *Daemon) trialRoutes(m *http.ServeMux) {
	m.HandleFunc("POST /api/agents/{name}/try", d.tryAgent)
	m.HandleFunc("POST /api/agents/{name}/hosts", d.keepTrialHosts)
}
