package daemon

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/kulehq/kule/kernel"
)

// .kule-profile.json: the parts of a person's setup they tick — the theme, their own themes,
// Motion, shortcuts, the policy choice, the daily budget, the home's limits and their own
// agent profiles — to carry to another machine. What a profile never holds, on export or
// import: secrets, remembered approvals and a person's own policy (each lets something
// through that the person approved on this machine, for this machine), and an agent's env
// values (they may hold a key). Imported agent profiles wait for approval like any new one.

// ProfileParts are the parts a profile may hold, in the order Settings lists them.
var ProfileParts = []string{"theme", "own_themes", "motion", "shortcuts", "policy", "daily_budget", "limits", "agents"}

// refusedParts are fields a profile never holds; a file naming one is refused with why.
var refusedParts = map[string]string{
	"secrets": "secrets stay on the machine they were added on", "secret": "secrets stay on the machine they were added on",
	"rules": "remembered approvals stay on the machine they were given on", "remembered": "remembered approvals stay on the machine they were given on",
	"own_policy": "a person's own policy is not carried in a profile", "policy_cedar": "a person's own policy is not carried in a profile",
}

// ProfileFile is .kule-profile.json. A part is there when its field is.
type ProfileFile struct {
	Format      string                `json:"format"`  // "kule-profile"
	Version     int                   `json:"version"` // 1
	Theme       *string               `json:"theme,omitempty"`
	OwnThemes   []OwnTheme            `json:"own_themes,omitempty"`
	Motion      *string               `json:"motion,omitempty"`
	Shortcuts   map[string]string     `json:"shortcuts,omitempty"`
	Policy      *string               `json:"policy,omitempty"`
	DailyBudget *kernel.Money         `json:"daily_budget,omitempty"`
	Limits      *LimitsRequest        `json:"limits,omitempty"`
	Agents      []kernel.AgentProfile `json:"agents,omitempty"`
}

var errProfile = errors.New(".kule-profile.json")

const maxProfileAgents = 32

// ParseProfile reads a .kule-profile.json strictly: only the parts above, each checked as
// the setting it carries is checked when set by hand (themes as themes.json, shortcuts as
// shortcuts.json, a budget and limits as Settings checks them), and never a secret, a
// remembered approval, a person's own policy or an agent's env values.
func ParseProfile(b []byte) (ProfileFile, error) {
	var p ProfileFile
	if len(b) > maxBody {
		return p, fmt.Errorf("%w: larger than 1 MiB", errProfile)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return p, fmt.Errorf("%w: %v", errProfile, err)
	}
	for k := range top {
		if why, ok := refusedParts[strings.ToLower(k)]; ok {
			return p, fmt.Errorf("%w: it holds %q, which a profile never does (%s); nothing was imported", errProfile, k, why)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return ProfileFile{}, fmt.Errorf("%w: %v", errProfile, err)
	}
	if dec.More() {
		return ProfileFile{}, fmt.Errorf("%w: more than one JSON value", errProfile)
	}
	if p.Format != "kule-profile" || p.Version != 1 {
		return ProfileFile{}, fmt.Errorf("%w: not a Kule profile of version 1 (format %q, version %d)", errProfile, p.Format, p.Version)
	}
	// Themes, own themes and Motion are checked together, as themes.json is.
	ts := ThemeSettings{Theme: "system", Motion: "system", Own: p.OwnThemes}
	if p.Theme != nil {
		ts.Theme = *p.Theme
		if strings.HasPrefix(ts.Theme, "own-") && !slices.ContainsFunc(p.OwnThemes, func(o OwnTheme) bool { return o.ID == ts.Theme }) {
			ts.Theme = "system" // an own theme the file does not carry: checked by its id only
			if !themeIDRe().MatchString(*p.Theme) {
				return ProfileFile{}, fmt.Errorf("%w: theme %q", errProfile, *p.Theme)
			}
		}
	}
	if p.Motion != nil {
		ts.Motion = *p.Motion
		if ts.Motion == "" {
			return ProfileFile{}, fmt.Errorf("%w: motion is empty (system, on or off)", errProfile)
		}
	}
	if tb, _ := json.Marshal(ts); true {
		if _, err := ParseThemes(tb); err != nil {
			return ProfileFile{}, fmt.Errorf("%w: %w", errProfile, err)
		}
	}
	if p.Shortcuts != nil {
		sb, _ := json.Marshal(p.Shortcuts)
		if _, err := ParseShortcuts(sb); err != nil {
			return ProfileFile{}, fmt.Errorf("%w: %w", errProfile, err)
		}
	}
	if p.Policy != nil && !slices.Contains(kernel.PolicyChoices, *p.Policy) {
		return ProfileFile{}, fmt.Errorf("%w: policy %q (%s)", errProfile, *p.Policy, strings.Join(kernel.PolicyChoices, " or "))
	}
	if err := checkMoney(p.DailyBudget); err != nil {
		return ProfileFile{}, fmt.Errorf("%w: daily budget: %w", errProfile, err)
	}
	if p.Limits != nil {
		if err := checkLimits(*p.Limits); err != nil {
			return ProfileFile{}, fmt.Errorf("%w: limits: %w", errProfile, err)
		}
	}
	if len(p.Agents) > maxProfileAgents {
		return ProfileFile{}, fmt.Errorf("%w: more than %d agent profiles", errProfile, maxProfileAgents)
	}
	names := map[string]bool{}
	for _, a := range p.Agents {
		if a.Name == "" || names[a.Name] {
			return ProfileFile{}, fmt.Errorf("%w: an agent profile without a name, or one name twice (%q)", errProfile, a.Name)
		}
		names[a.Name] = true
		if len(a.Env) > 0 {
			return ProfileFile{}, fmt.Errorf("%w: agent %s carries env values, which a profile never does (they may hold a key); nothing was imported", errProfile, a.Name)
		}
	}
	return p, nil
}

// ProfilePart is one part a profile file holds, in words, as the page lists it before
// anything changes.
type ProfilePart struct {
	Part string `json:"part"`
	What string `json:"what"`
	Note string `json:"note,omitempty"`
}

// profileHolds lists what p holds; all are the agent profiles the home has, for whether an
// agent's name is taken here.
func profileHolds(p ProfileFile, all []kernel.AgentProfile) []ProfilePart {
	out := []ProfilePart{}
	if p.Theme != nil {
		out = append(out, ProfilePart{"theme", "the theme " + *p.Theme, ""})
	}
	if p.OwnThemes != nil {
		ns := []string{}
		for _, o := range p.OwnThemes {
			ns = append(ns, o.Name)
		}
		out = append(out, ProfilePart{"own_themes", fmt.Sprintf("%d own themes: %s", len(ns), strings.Join(ns, ", ")), "added to yours; one with the same id is replaced"})
	}
	if p.Motion != nil {
		out = append(out, ProfilePart{"motion", "Motion " + *p.Motion, ""})
	}
	if p.Shortcuts != nil {
		out = append(out, ProfilePart{"shortcuts", fmt.Sprintf("%d shortcuts of its own", len(p.Shortcuts)), "they replace your shortcuts.json"})
	}
	if p.Policy != nil {
		out = append(out, ProfilePart{"policy", "the " + *p.Policy + " policy", ""})
	}
	if p.DailyBudget != nil {
		out = append(out, ProfilePart{"daily_budget", fmt.Sprintf("a daily budget of %.2f %s", p.DailyBudget.Amount, p.DailyBudget.Currency), ""})
	}
	if p.Limits != nil {
		l := p.Limits
		out = append(out, ProfilePart{"limits", fmt.Sprintf("limits: CPU %g, memory %d MiB, disk %d MiB, a run %g min, idle %g min, a task's runs %g min (0: none)", l.CPU, l.MemoryMiB, l.DiskMiB, l.TimeMinutes, l.IdleMinutes, l.TaskMinutes), ""})
	}
	for _, a := range p.Agents {
		note := "it waits for your approval before it runs"
		if err := kernel.CheckAppendAgent(a, all); err != nil {
			note = "not imported: " + err.Error()
		}
		out = append(out, ProfilePart{"agents", fmt.Sprintf("agent %s: runs %s, reaches %s", a.Name, strings.Join(a.Command, " "), orNone(a.Hosts)), note})
	}
	return out
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "no host"
	}
	return strings.Join(s, ", ")
}

func (d *Daemon) agentProfiles() []kernel.AgentProfile {
	if d.cfg.AgentSet == nil {
		return nil
	}
	set, err := d.cfg.AgentSet()
	if err != nil || set == nil {
		return nil
	}
	return set.Profiles
}

func (d *Daemon) readThemes() (ThemeSettings, error) {
	b, err := os.ReadFile(d.themesPath())
	if errors.Is(err, os.ErrNotExist) {
		return ThemeSettings{Theme: "system", Motion: "system", Own: []OwnTheme{}}, nil
	}
	if err != nil {
		return ThemeSettings{}, err
	}
	return ParseThemes(b)
}

// exportProfile writes the ticked parts (?parts=theme,motion,…) of this home as a profile.
func (d *Daemon) exportProfile(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(r.URL.Query().Get("parts"), ",")
	for _, p := range parts {
		if !slices.Contains(ProfileParts, p) {
			fail(w, fmt.Errorf("%w: part %q (%s)", errBadRequest, p, strings.Join(ProfileParts, ", ")))
			return
		}
	}
	out := ProfileFile{Format: "kule-profile", Version: 1}
	ts, err := d.readThemes()
	if err != nil {
		fail(w, err)
		return
	}
	cfg, err := d.k.Settings()
	if err != nil {
		fail(w, err)
		return
	}
	for _, p := range parts {
		switch p {
		case "theme":
			out.Theme = &ts.Theme
		case "own_themes":
			out.OwnThemes = ts.Own
		case "motion":
			out.Motion = &ts.Motion
		case "shortcuts":
			out.Shortcuts = map[string]string{}
			if b, err := os.ReadFile(d.shortcutsPath()); err == nil {
				if m, err := ParseShortcuts(b); err == nil {
					out.Shortcuts = m
				}
			}
		case "policy":
			c := cfg.Policy.Choice
			if c == "" {
				c = kernel.PolicyBalanced
			}
			out.Policy = &c
		case "daily_budget":
			if out.DailyBudget, err = kernel.DailyCap(d.home); err != nil {
				fail(w, err)
				return
			}
		case "limits":
			l := homeLimits(*cfg)
			out.Limits = &l
		case "agents":
			out.Agents = []kernel.AgentProfile{}
			for _, a := range d.agentProfiles() {
				if a.Builtin {
					continue // every Kule has those
				}
				a.Env = nil // may hold a key
				out.Agents = append(out.Agents, a)
			}
		}
	}
	if out.Theme != nil && strings.HasPrefix(*out.Theme, "own-") && out.OwnThemes == nil {
		// The theme is one of the person's own: it goes with its colours or not at all.
		for _, o := range ts.Own {
			if o.ID == *out.Theme {
				out.OwnThemes = []OwnTheme{o}
			}
		}
	}
	w.Header().Set("Content-Disposition", `attachment; filename=".kule-profile.json"`)
	writeJSON(w, 200, out)
}

// checkProfile reads a profile file and says what it holds; nothing changes.
func (d *Daemon) checkProfile(w http.ResponseWriter, r *http.Request) {
	var raw json.RawMessage
	if err := readBody(r, &raw); err != nil {
		fail(w, err)
		return
	}
	p, err := ParseProfile(raw)
	if err != nil {
		fail(w, fmt.Errorf("%w: %w", errBadRequest, err))
		return
	}
	writeJSON(w, 200, map[string]any{"holds": profileHolds(p, d.agentProfiles())})
}

// importProfile applies the ticked parts of a profile file. The file is checked whole
// first: one that does not parse changes nothing.
func (d *Daemon) importProfile(w http.ResponseWriter, r *http.Request) {
	var in struct {
		File  json.RawMessage `json:"file"`
		Parts []string        `json:"parts"`
	}
	if err := readBody(r, &in); err != nil {
		fail(w, err)
		return
	}
	p, err := ParseProfile(in.File)
	if err != nil {
		fail(w, fmt.Errorf("%w: %w", errBadRequest, err))
		return
	}
	on := func(part string) bool { return slices.Contains(in.Parts, part) }
	var done, notDone []string
	if on("theme") || on("own_themes") || on("motion") {
		ts, err := d.readThemes()
		if err != nil {
			fail(w, err)
			return
		}
		if on("own_themes") {
			for _, o := range p.OwnThemes {
				if i := slices.IndexFunc(ts.Own, func(x OwnTheme) bool { return x.ID == o.ID }); i >= 0 {
					ts.Own[i] = o
				} else {
					ts.Own = append(ts.Own, o)
				}
			}
		}
		if on("theme") && p.Theme != nil {
			ts.Theme = *p.Theme
		}
		if on("motion") && p.Motion != nil {
			ts.Motion = *p.Motion
		}
		b, _ := json.Marshal(ts)
		if ts, err = ParseThemes(b); err != nil {
			notDone = append(notDone, "themes: "+err.Error())
		} else {
			b, _ = json.MarshalIndent(ts, "", "  ")
			if err := kernel.WriteFileAtomic(d.themesPath(), append(b, '\n'), 0o600); err != nil {
				fail(w, err)
				return
			}
			done = append(done, "themes")
		}
	}
	if on("shortcuts") && p.Shortcuts != nil {
		b, _ := json.MarshalIndent(p.Shortcuts, "", "  ")
		if err := kernel.WriteFileAtomic(d.shortcutsPath(), append(b, '\n'), 0o600); err != nil {
			fail(w, err)
			return
		}
		done = append(done, "shortcuts")
	}
	if on("policy") && p.Policy != nil {
		cfg, err := d.k.Settings()
		if err == nil {
			cfg.Policy.Choice = *p.Policy
			err = d.k.SaveSettings(cfg)
		}
		if err != nil {
			fail(w, err)
			return
		}
		done = append(done, "policy")
	}
	if on("daily_budget") && p.DailyBudget != nil {
		if err := d.setDailyBudget(p.DailyBudget); err != nil {
			fail(w, err)
			return
		}
		done = append(done, "daily budget")
	}
	if on("limits") && p.Limits != nil {
		if err := d.setHomeLimits(*p.Limits); err != nil {
			fail(w, err)
			return
		}
		done = append(done, "limits")
	}
	if on("agents") {
		all := d.agentProfiles()
		for _, a := range p.Agents {
			if err := kernel.AppendPersonalAgent(d.home, a, all); err != nil {
				notDone = append(notDone, "agent "+a.Name+": "+err.Error())
				continue
			}
			all = append(all, a)
			if kernel.CheckAgentApproved(d.home, a) == nil {
				// This machine approved this very content before (same name, same sha256).
				done = append(done, "agent "+a.Name+" (approved before at this content)")
			} else {
				done = append(done, "agent "+a.Name+" (waits for approval)")
			}
		}
	}
	d.Bus.Publish("task", "", map[string]any{"action": "profile"})
	writeJSON(w, 200, map[string]any{"done": orEmpty(done), "not_done": orEmpty(notDone)})
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (d *Daemon) profileRoutes(m *http.ServeMux) {
	m.HandleFunc("GET /api/profile", d.exportProfile)
	m.HandleFunc("POST /api/profile/check", d.checkProfile)
	m.HandleFunc("POST /api/profile/import", d.importProfile)
}
