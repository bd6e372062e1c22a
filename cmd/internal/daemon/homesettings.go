package daemon

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"time"

	"github.com/kulehq/kule/kernel"
)

// Settings' sections for what holds across every task of the home: the daily budget, the
// home's limits, the person's own policy, the remembered rules, the kept secrets (names and
// hosts, never values) and approving an agent profile. Each handler checks what a person
// typed before the kernel keeps it, as the CLI commands that set the same do.

// RuleView is one remembered approval, as `kule rules` lists it.
type RuleView struct {
	N       int    `json:"n"`
	Subject string `json:"subject"`
	Host    bool   `json:"host"`
	For     string `json:"for"`
	Folder  string `json:"folder"`
	Added   string `json:"added"`
	Asks    string `json:"asks"` // what asks again once it is forgotten
}

func (d *Daemon) listRules(w http.ResponseWriter, r *http.Request) {
	rs, err := d.k.RememberedRules()
	if err != nil {
		fail(w, err)
		return
	}
	out := []RuleView{}
	for _, x := range rs {
		out = append(out, ruleView(x))
	}
	writeJSON(w, 200, out)
}

// SecretView is a kept secret without its value.
type SecretView struct {
	Name  string    `json:"name"`
	Hosts []string  `json:"hosts"`
	Added time.Time `json:"added"`
}

func (d *Daemon) listSecrets(w http.ResponseWriter, r *http.Request) {
	st, err := kernel.OpenSecrets(d.home)
	if err != nil {
		fail(w, err)
		return
	}
	all, err := st.List()
	if err != nil {
		fail(w, err)
		return
	}
	out := []SecretView{}
	for _, s := range all {
		out = append(out, SecretView{Name: s.Name, Hosts: s.Hosts, Added: s.Added}) // never the value
	}
	writeJSON(w, 200, out)
}

// DailyBudget is the cap of all tasks together in any 24 hours; nil: none.
type DailyBudget struct {
	Daily *kernel.Money `json:"daily"`
}

func checkMoney(c *kernel.Money) error {
	if c == nil {
		return nil
	}
	if !currencyRe().MatchString(c.Currency) || !(c.Amount > 0) || c.Amount > 1e6 || math.IsInf(c.Amount, 0) {
		return fmt.Errorf("%w: a budget is an amount above 0 and at most 1,000,000 in a currency of three capitals (5.00 USD); nothing was changed", errBadRequest)
	}
	return nil
}

func (d *Daemon) getBudget(w http.ResponseWriter, r *http.Request) {
	c, err := kernel.DailyCap(d.home)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, 200, DailyBudget{Daily: c})
}

func (d *Daemon) putBudget(w http.ResponseWriter, r *http.Request) {
	var in DailyBudget
	if err := readBody(r, &in); err != nil {
		fail(w, err)
		return
	}
	if err := d.setDailyBudget(in.Daily); err != nil {
		fail(w, err)
		return
	}
	d.getBudget(w, r)
}

func (d *Daemon) setDailyBudget(c *kernel.Money) error {
	if err := checkMoney(c); err != nil {
		return err
	}
	return d.k.SetDailyCap(c)
}

// homeLimits is the home's limits in the form's units.
func homeLimits(l kernel.Settings) LimitsRequest {
	x := l.Limits
	return LimitsRequest{CPU: x.CPU, MemoryMiB: x.Memory >> 20, DiskMiB: x.Disk >> 20,
		TimeMinutes: x.Time.Minutes(), IdleMinutes: x.Idle.Minutes(), TaskMinutes: x.TaskTime.Minutes()}
}

// checkLimits says what is wrong with limits a person typed, or nil.
func checkLimits(in LimitsRequest) error {
	bad := func(what string) error { return fmt.Errorf("%w: %s; nothing was changed", errBadRequest, what) }
	switch {
	case in.CPU < 0 || in.CPU > 1024 || math.IsNaN(in.CPU):
		return bad("CPU is a number of cores from 0 (no limit of its own) to 1024")
	case in.MemoryMiB < 0 || in.MemoryMiB > 1<<24:
		return bad("memory is MiB from 0 to 16 TiB")
	case in.DiskMiB < 0 || in.DiskMiB > 1<<26:
		return bad("disk is MiB from 0 to 64 TiB")
	case in.TimeMinutes < 0 || in.IdleMinutes < 0 || in.TaskMinutes < 0 || in.TimeMinutes > 1e6 || in.IdleMinutes > 1e6 || in.TaskMinutes > 1e6 ||
		math.IsNaN(in.TimeMinutes) || math.IsNaN(in.IdleMinutes) || math.IsNaN(in.TaskMinutes):
		return bad("times are minutes from 0 to 1,000,000")
	}
	return nil
}

func (d *Daemon) getLimits(w http.ResponseWriter, r *http.Request) {
	cfg, err := d.k.Settings()
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, 200, homeLimits(*cfg))
}

func (d *Daemon) putLimits(w http.ResponseWriter, r *http.Request) {
	var in LimitsRequest
	if err := readBody(r, &in); err != nil {
		fail(w, err)
		return
	}
	if err := d.setHomeLimits(in); err != nil {
		fail(w, err)
		return
	}
	d.getLimits(w, r)
}

func (d *Daemon) setHomeLimits(in LimitsRequest) error {
	if err := checkLimits(in); err != nil {
		return err
	}
	cfg, err := d.k.Settings()
	if err != nil {
		return err
	}
	mins := func(m float64) time.Duration { return time.Duration(m * float64(time.Minute)) }
	cfg.Limits.CPU, cfg.Limits.Memory, cfg.Limits.Disk = in.CPU, in.MemoryMiB<<20, in.DiskMiB<<20
	cfg.Limits.Time, cfg.Limits.Idle, cfg.Limits.TaskTime = mins(in.TimeMinutes), mins(in.IdleMinutes), mins(in.TaskMinutes)
	return d.k.SaveSettings(cfg)
}

// OwnPolicy is the person's own policy.cedar, which replaces the built-in one.
type OwnPolicy struct {
	Text   string `json:"text"`
	Exists bool   `json:"exists"`
}

func (d *Daemon) getOwnPolicy(w http.ResponseWriter, r *http.Request) {
	b, err := os.ReadFile(d.k.PersonPolicyPath())
	if errors.Is(err, os.ErrNotExist) {
		writeJSON(w, 200, OwnPolicy{})
		return
	}
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, 200, OwnPolicy{Text: string(b), Exists: true})
}

// checkOwnPolicy is the guard that a person's own policy parses and fits Kule's schema
// before it replaces the built-in one: a broken policy.cedar would leave every task judged
// by nothing the person meant. A test turns it off to show the file it keeps out.
var checkOwnPolicy = true

func (d *Daemon) putOwnPolicy(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Text string `json:"text"`
	}
	if err := readBody(r, &in); err != nil {
		fail(w, err)
		return
	}
	if checkOwnPolicy {
		if err := kernel.ValidatePolicy("policy.cedar", []byte(in.Text)); err != nil {
			fail(w, fmt.Errorf("%w: %w (nothing was kept; the policy that held still holds)", errBadRequest, err))
			return
		}
	}
	if err := kernel.WriteFileAtomic(d.k.PersonPolicyPath(), []byte(in.Text), 0o600); err != nil {
		fail(w, err)
		return
	}
	d.Bus.Publish("task", "", map[string]any{"action": "policy"})
	d.getOwnPolicy(w, r)
}

func (d *Daemon) deleteOwnPolicy(w http.ResponseWriter, r *http.Request) {
	if err := os.Remove(d.k.PersonPolicyPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
		fail(w, err)
		return
	}
	d.Bus.Publish("task", "", map[string]any{"action": "policy"})
	d.getOwnPolicy(w, r)
}

// AgentProfileView is what an agent profile runs, shown before it is approved.
type AgentProfileView struct {
	Profile  kernel.AgentProfile `json:"profile"`
	Builtin  bool                `json:"builtin"`
	Approved bool                `json:"approved"`
	Needs    bool                `json:"needs_approval"`
}

func (d *Daemon) agentProfile(r *http.Request) (*kernel.AgentSet, kernel.AgentProfile, error) {
	if d.cfg.AgentSet == nil {
		return nil, kernel.AgentProfile{}, fmt.Errorf("%w: this daemon runs no agent profiles", errBadRequest)
	}
	set, err := d.cfg.AgentSet()
	if err != nil {
		return nil, kernel.AgentProfile{}, err
	}
	for _, p := range set.Profiles {
		if p.Name == r.PathValue("name") {
			return set, p, nil
		}
	}
	return nil, kernel.AgentProfile{}, fmt.Errorf("agent %q: %w", r.PathValue("name"), os.ErrNotExist)
}

func (d *Daemon) showAgent(w http.ResponseWriter, r *http.Request) {
	_, p, err := d.agentProfile(r)
	if err != nil {
		fail(w, err)
		return
	}
	needs := !p.Builtin || p.Setting != ""
	approved := !needs || kernel.CheckAgentApproved(d.home, p) == nil
	writeJSON(w, 200, AgentProfileView{Profile: p, Builtin: p.Builtin, Approved: approved, Needs: needs})
}

// approveAgent approves a profile exactly as it is now (sha256 of its content), as kule
// agents approve does; a later change waits for approval again. The page shows the profile
// (showAgent) before it asks.
func (d *Daemon) approveAgent(w http.ResponseWriter, r *http.Request) {
	set, p, err := d.agentProfile(r)
	if err != nil {
		fail(w, err)
		return
	}
	if p.Builtin && p.Setting == "" {
		writeJSON(w, 200, map[string]any{"approved": true, "note": p.Name + " is built in; it needs no approval"})
		return
	}
	if err := kernel.ApproveAgent(d.home, p, set.Profiles); err != nil {
		fail(w, err)
		return
	}
	d.Bus.Publish("task", "", map[string]any{"action": "agents"})
	writeJSON(w, 200, map[string]any{"approved": true, "sha256": p.Hash()})
}

func (d *Daemon) homeSettingsRoutes(m *http.ServeMux) {
	m.HandleFunc("GET /api/rules", d.listRules)
	m.HandleFunc("GET /api/secrets", d.listSecrets)
	m.HandleFunc("GET /api/budget", d.getBudget)
	m.HandleFunc("PUT /api/budget", d.putBudget)
	m.HandleFunc("GET /api/limits", d.getLimits)
	m.HandleFunc("PUT /api/limits", d.putLimits)
	m.HandleFunc("GET /api/policy/own", d.getOwnPolicy)
	m.HandleFunc("PUT /api/policy/own", d.putOwnPolicy)
	m.HandleFunc("DELETE /api/policy/own", d.deleteOwnPolicy)
	m.HandleFunc("GET /api/agents/{name}", d.showAgent)
	m.HandleFunc("POST /api/agents/{name}/approve", d.approveAgent)
}
