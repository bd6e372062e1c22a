package daemon

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/kulehq/kule/kernel"
)

func TestParseProfile(t *testing.T) {
	tests := map[string]struct {
		in string
		ok bool
	}{
		"empty":            {`{"format":"kule-profile","version":1}`, true},
		"every part":       {`{"format":"kule-profile","version":1,"theme":"nord","motion":"off","shortcuts":{"palette.open":"Mod+P"},"policy":"careful","daily_budget":{"amount":5,"currency":"USD"},"limits":{"cpu":2,"memory_mib":2048,"disk_mib":0,"time_minutes":30,"idle_minutes":0,"task_time_minutes":0},"agents":[{"name":"mine","command":["mine-acp"],"hosts":["api.example.com"]}]}`, true},
		"an own theme":     {`{"format":"kule-profile","version":1,"theme":"own-sea","own_themes":[{"id":"own-sea","name":"Sea","base":"nord","colours":{"accent":"#0088cc"}}]}`, true},
		"not a profile":    {`{"format":"something","version":1}`, false},
		"secrets":          {`{"format":"kule-profile","version":1,"secrets":[{"name":"OPENAI_API_KEY","value":"sk-1"}]}`, false},
		"remembered rules": {`{"format":"kule-profile","version":1,"rules":["permit(principal,action,resource);"]}`, false},
		"own policy":       {`{"format":"kule-profile","version":1,"own_policy":"permit(principal,action,resource);"}`, false},
		"an agent's env":   {`{"format":"kule-profile","version":1,"agents":[{"name":"mine","command":["x"],"env":{"OPENAI_API_KEY":"sk-1"}}]}`, false},
		"a builtin agent":  {`{"format":"kule-profile","version":1,"agents":[{"name":"mine","command":["x"],"builtin":true}]}`, false},
		"a reserved key":   {`{"format":"kule-profile","version":1,"shortcuts":{"task.commit":"Mod+W"}}`, false},
		"an odd policy":    {`{"format":"kule-profile","version":1,"policy":"permissive"}`, false},
		"a bad budget":     {`{"format":"kule-profile","version":1,"daily_budget":{"amount":-1,"currency":"USD"}}`, false},
		"a bad colour":     {`{"format":"kule-profile","version":1,"own_themes":[{"id":"own-x","name":"X","base":"nord","colours":{"accent":"red"}}]}`, false},
		"a negative limit": {`{"format":"kule-profile","version":1,"limits":{"cpu":-1}}`, false},
		"unknown part":     {`{"format":"kule-profile","version":1,"extensions":["x"]}`, false},
		"two values":       {`{"format":"kule-profile","version":1}{}`, false},
		"an agent twice":   {`{"format":"kule-profile","version":1,"agents":[{"name":"a","command":["x"]},{"name":"a","command":["y"]}]}`, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := ParseProfile([]byte(tc.in))
			if (err == nil) != tc.ok {
				t.Fatalf("ParseProfile(%s) = %v, want ok=%v", tc.in, err, tc.ok)
			}
			if err != nil && !errors.Is(err, errProfile) {
				t.Fatalf("error %v is not errProfile", err)
			}
		})
	}
}

func FuzzParseProfile(f *testing.F) {
	f.Add([]byte(`{"format":"kule-profile","version":1,"theme":"nord","motion":"off","shortcuts":{"palette.open":"Mod+P"},"policy":"careful","daily_budget":{"amount":5,"currency":"USD"},"limits":{"cpu":2},"agents":[{"name":"mine","command":["mine-acp"],"hosts":["api.example.com"]}]}`))
	f.Add([]byte(`{"format":"kule-profile","version":1,"theme":"own-sea","own_themes":[{"id":"own-sea","name":"Sea","base":"nord","colours":{"accent":"#0088cc"}}]}`))
	f.Add([]byte(`{"format":"kule-profile","version":1,"SECRETS":[]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseProfile(b)
		if err != nil {
			return
		}
		var top map[string]json.RawMessage
		_ = json.Unmarshal(b, &top)
		for k := range top {
			if _, bad := refusedParts[strings.ToLower(k)]; bad {
				t.Fatalf("a profile holding %q was accepted", k)
			}
		}
		for _, a := range p.Agents {
			if len(a.Env) > 0 || a.Builtin {
				t.Fatalf("agent %s accepted with env values or as a built-in", a.Name)
			}
		}
		if p.Shortcuts != nil {
			for _, k := range p.Shortcuts {
				if reservedWhy(k) != "" {
					t.Fatalf("reserved key %s accepted", k)
				}
			}
		}
	})
}

// profileDaemon is a daemon whose agent set is the home's own agents.toml.
func profileDaemon(t *testing.T) *Daemon {
	var d *Daemon
	d = startDaemon(t, Config{AgentSet: func() (*kernel.AgentSet, error) { return kernel.LoadAgents(fstest.MapFS{}, d.home) }})
	return d
}

// TestProfileRoundTrip: a profile exported from one home with every part ticked holds the
// theme, Motion, shortcuts, policy choice, daily budget, limits and the person's agents, and
// never the secrets, remembered approvals or own policy the home has; checking it in another
// home changes nothing; importing the ticked parts sets them, and the imported agent waits
// for approval there.
func TestProfileRoundTrip(t *testing.T) {
	a := profileDaemon(t)
	must(t, os.WriteFile(a.themesPath(), []byte(`{"theme":"own-sea","motion":"off","own":[{"id":"own-sea","name":"Sea","base":"nord","colours":{"accent":"#0088cc"}}]}`), 0o600))
	must(t, os.WriteFile(a.shortcutsPath(), []byte(`{"palette.open":"Mod+P"}`), 0o600))
	must(t, os.WriteFile(kernel.PersonalAgentsPath(a.home), []byte("[[agent]]\nname = \"mine\"\ncommand = [\"mine-acp\"]\nhosts = [\"api.example.com\"]\nenv = { MINE_TOKEN = \"tok-secret-1\" }\n"), 0o600))
	must(t, os.WriteFile(a.k.PersonPolicyPath(), []byte("permit (principal, action, resource) when { false }; // own-policy-marker\n"), 0o600))
	st, err := kernel.OpenSecrets(a.home)
	must(t, err)
	_, err = st.Add("OPENAI_API_KEY", "sk-very-secret", []string{"api.openai.com"})
	must(t, err)
	for _, c := range []struct{ path, body string }{
		{"/api/policy", `{"choice":"careful"}`},
		{"/api/budget", `{"daily":{"amount":7.5,"currency":"EUR"}}`},
		{"/api/limits", `{"cpu":2,"memory_mib":1024,"disk_mib":0,"time_minutes":30,"idle_minutes":0,"task_time_minutes":0}`},
	} {
		if code, body := call(t, a, http.MethodPut, c.path, c.body); code != 200 {
			t.Fatalf("PUT %s: %d %s", c.path, code, body)
		}
	}
	code, file := call(t, a, http.MethodGet, "/api/profile?parts="+strings.Join(ProfileParts, ","), "")
	if code != 200 {
		t.Fatalf("export: %d %s", code, file)
	}
	for _, want := range []string{`"own-sea"`, `"off"`, `"Mod+P"`, `"careful"`, `"EUR"`, `"memory_mib":1024`, `"mine-acp"`} {
		if !strings.Contains(file, want) {
			t.Errorf("the profile lacks %s: %s", want, file)
		}
	}
	for _, never := range []string{"sk-very-secret", "OPENAI_API_KEY", "tok-secret-1", "own-policy-marker"} {
		if strings.Contains(file, never) {
			t.Errorf("the profile holds %s, which it never may: %s", never, file)
		}
	}

	b := profileDaemon(t)
	code, holds := call(t, b, http.MethodPost, "/api/profile/check", file)
	if code != 200 || !strings.Contains(holds, "agent mine") || !strings.Contains(holds, "waits for your approval") {
		t.Fatalf("check: %d %s", code, holds)
	}
	if _, err := os.Stat(b.themesPath()); err == nil {
		t.Fatal("checking a profile changed themes.json")
	}
	body, _ := json.Marshal(map[string]any{"file": json.RawMessage(file), "parts": []string{"theme", "own_themes", "motion", "policy", "daily_budget", "agents"}})
	if code, out := call(t, b, http.MethodPost, "/api/profile/import", string(body)); code != 200 || !strings.Contains(out, "waits for approval") {
		t.Fatalf("import: %d %s", code, out)
	}
	if s := readFile(b.themesPath()); !strings.Contains(s, `"own-sea"`) || !strings.Contains(s, `"off"`) {
		t.Fatalf("themes.json after import: %s", s)
	}
	if _, err := os.Stat(b.shortcutsPath()); err == nil {
		t.Fatal("shortcuts were imported though not ticked")
	}
	if _, body := call(t, b, http.MethodGet, "/api/policy", ""); !strings.Contains(body, `"careful"`) {
		t.Fatalf("policy after import: %s", body)
	}
	if _, body := call(t, b, http.MethodGet, "/api/budget", ""); !strings.Contains(body, `"EUR"`) {
		t.Fatalf("budget after import: %s", body)
	}
	set, err := kernel.LoadAgents(fstest.MapFS{}, b.home)
	must(t, err)
	found := false
	for _, p := range set.Profiles {
		if p.Name == "mine" {
			found = true
			if kernel.CheckAgentApproved(b.home, p) == nil {
				t.Fatal("an imported agent runs without approval")
			}
		}
	}
	if !found {
		t.Fatal("the agent was not imported")
	}
	if _, err := os.Stat(b.k.PersonPolicyPath()); err == nil {
		t.Fatal("an own policy came with the profile")
	}
}

// TestOwnPolicyIsCheckedBeforeKept: a policy.cedar that does not parse is refused and the
// file is not written; with the check off the same text is kept.
func TestOwnPolicyIsCheckedBeforeKept(t *testing.T) {
	d := startDaemon(t, Config{})
	bad := `{"text":"permit (principal, action, resource) when { nonsense( };"}`
	if code, body := call(t, d, http.MethodPut, "/api/policy/own", bad); code != http.StatusBadRequest {
		t.Fatalf("PUT of a broken policy: %d %s", code, body)
	}
	if _, err := os.Stat(d.k.PersonPolicyPath()); err == nil {
		t.Fatal("a broken policy was kept")
	}
	t.Run("without the check", func(t *testing.T) {
		checkOwnPolicy = false
		defer func() { checkOwnPolicy = true }()
		if code, body := call(t, d, http.MethodPut, "/api/policy/own", bad); code != 200 {
			t.Fatalf("with the check off the broken policy should be kept (the attack works): %d %s", code, body)
		}
		must(t, os.Remove(d.k.PersonPolicyPath()))
	})
	good := `{"text":"permit (principal, action, resource);\n"}`
	if code, body := call(t, d, http.MethodPut, "/api/policy/own", good); code != 200 || !strings.Contains(body, `"exists":true`) {
		t.Fatalf("PUT of a good policy: %d %s", code, body)
	}
}

// TestSecretsListHasNoValues: Settings → Secrets lists names and hosts, never a value.
func TestSecretsListHasNoValues(t *testing.T) {
	d := startDaemon(t, Config{})
	st, err := kernel.OpenSecrets(d.home)
	must(t, err)
	_, err = st.Add("GITHUB_TOKEN", "ghp-never-shown", []string{"api.github.com"})
	must(t, err)
	code, body := call(t, d, http.MethodGet, "/api/secrets", "")
	if code != 200 || !strings.Contains(body, "GITHUB_TOKEN") || strings.Contains(body, "ghp-never-shown") {
		t.Fatalf("secrets: %d %s", code, body)
	}
}
