package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/chromedp/chromedp"

	"github.com/kulehq/kule/kernel"
)

// TestAppSettingsSections drives Settings in Chromium: one section each, listed beside them in
// order; the policy choice and a broken own policy (refused, nothing kept); the daily budget
// and the home's limits; secrets listed by name, never value; an agent profile shown and then
// approved; and a .kule-profile.json imported: what it holds is shown first and nothing
// changes until Import, then the ticked parts are kept and the imported agent waits for
// approval.
func TestAppSettingsSections(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	ctx, shot := browser(t)
	d := profileDaemon(t)
	must(t, os.WriteFile(kernel.PersonalAgentsPath(d.home), []byte("[[agent]]\nname = \"mine\"\ncommand = [\"/bin/true\"]\nhosts = [\"api.example.com\"]\n"), 0o600))
	st, err := kernel.OpenSecrets(d.home)
	must(t, err)
	_, err = st.Add("GITHUB_TOKEN", "ghp-never-in-the-page", []string{"api.github.com"})
	must(t, err)

	step(t, ctx, shot, "open Settings",
		chromedp.Navigate(d.URL()),
		clickOf(`#btn-settings`),
		chromedp.WaitVisible(chromedp.CSS(`#settings-nav a[data-section="agents"]`)))
	order := value(t, ctx, shot, "the sections", chromedp.Evaluate[string](`[...document.querySelectorAll('#settings-nav a')].map((a) => a.dataset.section).join(',')`))
	want := "agents,policy,rules,secrets,budgets,limits,transports,extensions,appearance,shortcuts,questions,profile"
	if order != want {
		t.Fatalf("Settings lists %s, want %s", order, want)
	}

	step(t, ctx, shot, "the agent of agents.toml waits for approval; show it and approve it",
		void(chromedp.Poll[bool](`!!document.querySelector('#set-agents li[data-agent="mine"]')`)),
		clickOf(`#set-agents li[data-agent="mine"] button`),
		void(chromedp.Poll[bool](`(document.querySelector('#set-agents li[data-agent="mine"] .agent-more') || {}).innerText?.includes('api.example.com')`)),
		clickOf(`[data-approve="mine"]`),
		void(chromedp.Poll[bool](`(document.querySelector('#set-agents li[data-agent="mine"]') || {}).innerText?.includes('Approved')`)))
	set, err := kernel.LoadAgents(fstest.MapFS{}, d.home)
	must(t, err)
	for _, p := range set.Profiles {
		if p.Name == "mine" && kernel.CheckAgentApproved(d.home, p) != nil {
			t.Fatal("Approve in Settings did not approve the profile")
		}
	}

	step(t, ctx, shot, "Policy: careful, then a broken own policy is refused",
		clickOf(`#settings-nav a[data-section="policy"]`),
		clickOf(`input[name="set-policy"][value="careful"]`),
		chromedp.SendKeys(chromedp.CSS(`#set-own-policy`), "permit (principal, action, resource) when { nonsense( };"),
		clickOf(`#set-own-keep`),
		void(chromedp.Poll[bool](`document.querySelector('#settings-policy .error').innerText.length > 0`)))
	waitFor(t, "the policy choice kept", func() bool {
		cfg, err := d.k.Settings()
		return err == nil && cfg.Policy.Choice == "careful"
	})
	if _, err := os.Stat(d.k.PersonPolicyPath()); err == nil {
		t.Fatal("a broken own policy was kept")
	}

	step(t, ctx, shot, "Secrets by name only",
		void(chromedp.Poll[bool](`!!document.querySelector('#set-secrets li[data-secret="GITHUB_TOKEN"]')`)))
	if body := value(t, ctx, shot, "the page's text", chromedp.Evaluate[string](`document.body.innerText`)); strings.Contains(body, "ghp-never-in-the-page") {
		t.Fatal("a secret's value reached the page")
	}

	step(t, ctx, shot, "a daily budget and the home's limits",
		clickOf(`#settings-nav a[data-section="budgets"]`),
		chromedp.SendKeys(chromedp.CSS(`#set-daily-amount`), "5"),
		clickOf(`#set-daily-keep`),
		void(chromedp.Poll[bool](`document.querySelector('#settings-budgets [role=status]').innerText.includes('5.00 USD')`)),
		void(chromedp.Evaluate[bool](`(document.getElementById('set-lim-cpu').value = '2', true)`)),
		clickOf(`#set-limits-keep`),
		void(chromedp.Poll[bool](`document.querySelector('#settings-limits [role=status]').innerText.includes('Kept')`)))
	if c, err := kernel.DailyCap(d.home); err != nil || c == nil || c.Amount != 5 || c.Currency != "USD" {
		t.Fatalf("daily cap %v %v, want 5 USD", c, err)
	}
	if cfg, err := d.k.Settings(); err != nil || cfg.Limits.CPU != 2 {
		t.Fatalf("home limits %+v %v, want 2 cores", cfg, err)
	}

	prof := filepath.Join(t.TempDir(), "mine.kule-profile.json")
	must(t, os.WriteFile(prof, []byte(`{"format":"kule-profile","version":1,"theme":"nord","motion":"off","shortcuts":{"palette.open":"Mod+P"},"agents":[{"name":"theirs","command":["/bin/true"],"hosts":["api.other.example"]}]}`), 0o600))
	step(t, ctx, shot, "import a profile: it shows what it holds first",
		clickOf(`#settings-nav a[data-section="profile"]`),
		chromedp.SetUploadFiles(chromedp.CSS(`#profile-file`), []string{prof}),
		void(chromedp.Poll[bool](`!document.getElementById('profile-shown').hidden && document.getElementById('profile-shown').innerText.includes('agent theirs') && document.getElementById('profile-shown').innerText.includes('waits for your approval')`)))
	if _, err := os.Stat(d.themesPath()); err == nil {
		t.Fatal("the profile changed themes.json before Import")
	}
	step(t, ctx, shot, "untick the shortcuts and import",
		clickOf(`#pi-shortcuts`),
		clickOf(`#profile-import`),
		void(chromedp.Poll[bool](`document.getElementById('profile-done').innerText.includes('Imported')`)))
	if s := readFile(d.themesPath()); !strings.Contains(s, `"nord"`) || !strings.Contains(s, `"off"`) {
		t.Fatalf("themes.json after import: %s", s)
	}
	if _, err := os.Stat(d.shortcutsPath()); err == nil {
		t.Fatal("the unticked shortcuts were imported")
	}
	set, err = kernel.LoadAgents(fstest.MapFS{}, d.home)
	must(t, err)
	imported := false
	for _, p := range set.Profiles {
		if p.Name == "theirs" {
			imported = true
			if kernel.CheckAgentApproved(d.home, p) == nil {
				t.Fatal("an imported agent runs without approval")
			}
		}
	}
	if !imported {
		t.Fatal("the profile's agent was not imported")
	}
	shot("settings-profile")
}
