package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/agentrun"
)

// errVerdictsChange refuses a move between groups that would change a
// pending verdict until the person confirms it.
var errVerdictsChange = errors.New("moving the task changes what its policy says of pending changes")

// GroupView is a group as the app shows it.
type GroupView struct {
	kernel.Group
	Tasks int    `json:"tasks"`
	Own   string `json:"own_policy,omitempty"` // the text of its own policy
}

func (d *Daemon) groups() *kernel.GroupStore { return d.k.Groups() }

func (d *Daemon) listGroups(w http.ResponseWriter, r *http.Request) {
	gs, err := d.groups().List()
	if err != nil {
		fail(w, err)
		return
	}
	ts, _ := d.k.Tasks()
	out := []GroupView{}
	for _, g := range gs {
		v := GroupView{Group: g}
		for _, t := range ts {
			if t.Group == g.ID {
				v.Tasks++
			}
		}
		if g.Policy == kernel.GroupOwnPolicy {
			v.Own, _ = d.groups().OwnPolicy(g.ID)
		}
		out = append(out, v)
	}
	writeJSON(w, 200, out)
}

type groupEdit struct {
	Name      *string `json:"name"`
	Colour    *string `json:"colour"`
	Policy    *string `json:"policy"`
	OwnPolicy *string `json:"own_policy"`
}

func (d *Daemon) readGroupEdit(r *http.Request) (kernel.GroupEdit, error) {
	var in groupEdit
	if err := readBody(r, &in); err != nil {
		return kernel.GroupEdit{}, err
	}
	if in.Colour != nil && !slices.Contains(Colours, *in.Colour) {
		return kernel.GroupEdit{}, fmt.Errorf("%w: colour %q is not one of %s", errBadRequest, *in.Colour, strings.Join(Colours[1:], ", "))
	}
	return kernel.GroupEdit{Name: in.Name, Colour: in.Colour, Policy: in.Policy, OwnPolicy: in.OwnPolicy}, nil
}

func (d *Daemon) newGroup(w http.ResponseWriter, r *http.Request) {
	e, err := d.readGroupEdit(r)
	if err != nil {
		fail(w, err)
		return
	}
	g, err := d.groups().Create(e)
	if err != nil {
		fail(w, err)
		return
	}
	d.Bus.Publish("group", "", map[string]any{"action": "new", "id": g.ID})
	writeJSON(w, 201, g)
}

func (d *Daemon) patchGroup(w http.ResponseWriter, r *http.Request) {
	e, err := d.readGroupEdit(r)
	if err != nil {
		fail(w, err)
		return
	}
	g, err := d.groups().Change(r.PathValue("id"), e)
	if err != nil {
		fail(w, err)
		return
	}
	d.Bus.Publish("group", "", map[string]any{"action": "edit", "id": g.ID})
	writeJSON(w, 200, g)
}

func (d *Daemon) deleteGroup(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := d.k.DeleteGroup(id); err != nil {
		fail(w, err)
		return
	}
	d.Bus.Publish("group", "", map[string]any{"action": "delete", "id": id})
	writeJSON(w, 200, map[string]any{"deleted": id})
}

// VerdictChange is one pending change whose verdict a group move changes.
type VerdictChange struct {
	Path string `json:"path"`
	From string `json:"from"` // pass, ask or deny
	To   string `json:"to"`
}

func (d *Daemon) verdictChanges(_ context.Context, t *kernel.Task, to string) ([]VerdictChange, error) {
	return VerdictChanges(d.k, t, to)
}

// VerdictChanges judges the task's pending changes (Kernel.Judge) in its
// group and in group to, and lists the paths whose verdict differs: what
// moving it would change.
func VerdictChanges(k *kernel.Kernel, t *kernel.Task, to string) ([]VerdictChange, error) {
	st, err := k.Status(context.Background(), t)
	if err != nil {
		return nil, err
	}
	p := st.Pending(false)
	if len(p) == 0 {
		return nil, nil
	}
	jb, err := k.Judge(t, p, false)
	if err != nil {
		return nil, err
	}
	moved := *t
	moved.Group = to
	ja, err := k.Judge(&moved, p, false)
	if err != nil {
		return nil, fmt.Errorf("the new group's policy: %w", err)
	}
	before, after := rulingsOf(jb), rulingsOf(ja)
	var out []VerdictChange
	for _, e := range p {
		if a, b := before[e.Path].Verdict, after[e.Path].Verdict; a != b {
			out = append(out, VerdictChange{Path: e.Path, From: word(a), To: word(b)})
		}
	}
	return out, nil
}

// setGroup moves a task to a group ("" for none). A move that would change
// a pending verdict is refused with the list unless confirm is set.
func (d *Daemon) setGroup(w http.ResponseWriter, r *http.Request, t *kernel.Task) {
	var in struct {
		Group   string `json:"group"`
		Confirm bool   `json:"confirm"`
	}
	if err := readBody(r, &in); err != nil {
		fail(w, err)
		return
	}
	if in.Group != "" {
		if _, err := d.groups().Get(in.Group); err != nil {
			fail(w, err)
			return
		}
	}
	if d.runs.running(t.ID) {
		fail(w, fmt.Errorf("group %s: %w; move it when the run ends", t.ID, errBusy))
		return
	}
	if in.Group == t.Group {
		writeJSON(w, 200, map[string]any{"task": d.viewOf(r.Context(), t)})
		return
	}
	if !in.Confirm {
		cs, err := d.verdictChanges(r.Context(), t, in.Group)
		if err != nil {
			fail(w, err)
			return
		}
		if len(cs) > 0 {
			writeJSON(w, http.StatusConflict, map[string]any{
				"error":   fmt.Sprintf("group %s: %v (%d); confirm to move it", t.ID, errVerdictsChange, len(cs)),
				"changes": cs,
			})
			return
		}
	}
	fresh, err := d.k.EditTask(t.ID, func(t *kernel.Task) { t.Group = in.Group })
	if err != nil {
		fail(w, err)
		return
	}
	d.Bus.Publish("task", t.ID, map[string]any{"action": "group", "group": in.Group})
	writeJSON(w, 200, map[string]any{"task": d.viewOf(r.Context(), fresh)})
}

// AgentView is what the first-run screen says of one agent.
type AgentView struct {
	Name     string   `json:"name"`
	Title    string   `json:"title,omitempty"`
	CanStart bool     `json:"can_start"`
	Problem  string   `json:"problem,omitempty"`
	Missing  []string `json:"missing,omitempty"` // what to install
	Auth     []string `json:"auth,omitempty"`    // how it would log in here
	Install  string   `json:"install,omitempty"` // an npx package fetched at the first run
}

// needsLogin is the guard that an agent needing a login none of which is found is not said
// to start here; a test turns it off to show the claim it keeps out.
var needsLogin = true

// AgentViews says of each agent in set whether it can start here and what
// the others need (kernel/agents' Check).
func AgentViews(set *kernel.AgentSet, o kernel.AgentCheckOptions) []AgentView {
	out := []AgentView{}
	for _, s := range kernel.CheckAgents(set, o) {
		v := AgentView{Name: s.Profile.Name, Title: s.Profile.Description, CanStart: s.CanStart(), Missing: s.Missing, Auth: s.Auth}
		if s.Problem != nil {
			v.Problem = s.Problem.Error()
		}
		// An agent that logs in with a key or a login of its own, none of which is found here,
		// and that cannot be logged in from inside a run (no ACP auth method), would start
		// only to fail: it cannot start here until one is.
		if v.CanStart && needsLogin && (len(s.Profile.Keys) > 0 || len(s.Profile.Login) > 0) && len(s.Auth) == 0 && s.Profile.Auth == "" {
			v.CanStart = false
			keys := make([]string, 0, len(s.Profile.Keys))
			for k := range s.Profile.Keys {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			what := "its own login"
			if len(keys) > 0 {
				what = strings.Join(keys, " or ") + " (kule secrets add NAME --host HOST)"
				if len(s.Profile.Login) > 0 {
					what += ", or its own login"
				}
			}
			v.Problem = "no key or login found: it needs " + what
		}
		if s.Package != nil && !s.Installed {
			v.Install = s.Package.Name + "@" + s.Package.Version
		}
		out = append(out, v)
	}
	return out
}

func (d *Daemon) listAgents(w http.ResponseWriter, r *http.Request) {
	if d.cfg.Agents == nil {
		if d.cfg.AgentSet == nil {
			writeJSON(w, 200, []AgentView{})
			return
		}
		set, err := d.cfg.AgentSet()
		if err != nil {
			fail(w, err)
			return
		}
		var o agentrun.Options
		if d.cfg.AgentOptions != nil {
			d.cfg.AgentOptions(&o)
		}
		if o.PackagesRoot == "" {
			if o.PackagesRoot, err = kernel.AgentPackagesRoot(); err != nil {
				fail(w, err)
				return
			}
		}
		co := kernel.AgentCheckOptions{KuleHome: d.home, PackagesRoot: o.PackagesRoot, Home: o.Home}
		co.HasKey = d.k.KeptSecrets()
		if cfg, err := d.k.Settings(); err == nil && !cfg.Sandbox.AcceptWeaker && o.Runner == nil {
			co.Isolation = kernel.SandboxMissing() // every agent runs in the sandbox
		}
		writeJSON(w, 200, AgentViews(set, co))
		return
	}
	as, err := d.cfg.Agents()
	if err != nil {
		fail(w, err)
		return
	}
	if as == nil {
		as = []AgentView{}
	}
	writeJSON(w, 200, as)
}

// getPolicy says which built-in policy holds and whether the person's own
// policy.cedar replaces it.
func (d *Daemon) getPolicy(w http.ResponseWriter, r *http.Request) {
	cfg, err := d.k.Settings()
	if err != nil {
		fail(w, err)
		return
	}
	choice := cfg.Policy.Choice
	if choice == "" {
		choice = kernel.PolicyBalanced
	}
	_, own := os.Lstat(d.k.PersonPolicyPath())
	writeJSON(w, 200, map[string]any{"choice": choice, "choices": kernel.PolicyChoices, "own": own == nil})
}

func (d *Daemon) putPolicy(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Choice string `json:"choice"`
	}
	if err := readBody(r, &in); err != nil {
		fail(w, err)
		return
	}
	if !slices.Contains(kernel.PolicyChoices, in.Choice) {
		fail(w, fmt.Errorf("%w: policy %q; choose %s", errBadRequest, in.Choice, strings.Join(kernel.PolicyChoices, " or ")))
		return
	}
	cfg, err := d.k.Settings()
	if err != nil {
		fail(w, err)
		return
	}
	cfg.Policy.Choice = in.Choice
	if err := d.k.SaveSettings(cfg); err != nil {
		fail(w, err)
		return
	}
	d.Bus.Publish("task", "", map[string]any{"action": "policy"})
	d.getPolicy(w, r)
}
