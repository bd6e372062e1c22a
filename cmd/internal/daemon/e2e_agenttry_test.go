package daemon

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kulehq/kule/kernel"
)

// shotAt1000 saves the window at 1000×700, the size Settings' new parts are looked at in, and
// puts the window back to the size the other steps use.
func shotAt1000(t *testing.T, ctx context.Context, shot func(string), name string) {
	t.Helper()
	step(t, ctx, shot, "a window of 1000×700", chromedp.EmulateViewport(1000, 700))
	b := value(t, ctx, shot, "screenshot "+name, chromedp.CaptureScreenshot())
	dir := filepath.Join(os.TempDir(), "kule-e2e-"+t.Name())
	must(t, os.MkdirAll(dir, 0o755))
	p := filepath.Join(dir, name+".png")
	must(t, os.WriteFile(p, b, 0o644))
	t.Logf("screenshot: %s", p)
	step(t, ctx, shot, "the window's own size again", chromedp.EmulateViewport(1360, 860))
}

// TestAppAgentTrial tries an agent from Settings → Agents in Chromium: the trial runs in the
// daemon, its hosts are listed with a checkbox each for those its profile could open, and
// Keep the ticked hosts puts exactly the ticked one into agents.toml; the changed profile
// waits for approval, which the page offers again.
func TestAppAgentTrial(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	ctx, shot := browser(t)
	d := trialDaemon(t, "model.test:443 other.test:443 plain.test:80")
	if kernel.CheckAgentApproved(d.home, peerProfile(t, d)) != nil {
		t.Fatal("the peer should start approved")
	}

	step(t, ctx, shot, "Settings → Agents: Try the peer",
		chromedp.Navigate(d.URL()),
		clickOf(`#btn-settings`),
		clickOf(`#set-agents li[data-agent="peer"] [data-try="peer"]`),
		void(chromedp.Poll[bool](`!!document.querySelector('#set-agents li[data-agent="peer"] .agent-trial li[data-host="model.test:443"] input[data-host="model.test"]')`)))
	got := value(t, ctx, shot, "the hosts listed", chromedp.Evaluate[[]string](`[...document.querySelectorAll('#set-agents li[data-agent="peer"] .agent-trial li[data-host]')].map((li) => li.dataset.host + (li.querySelector('input') ? ' [ ]' : ''))`))
	if want := []string{"model.test:443 [ ]", "other.test:443 [ ]", "plain.test:80"}; !slices.Equal(got, want) {
		t.Fatalf("the trial lists %q, want %q", got, want)
	}
	step(t, ctx, shot, "Keep with nothing ticked says what to do",
		clickOf(`[data-keep-hosts="peer"]`),
		void(chromedp.Poll[bool](`(document.querySelector('#set-agents li[data-agent="peer"] .agent-trial .error') || {}).innerText?.includes('Tick the hosts')`)))
	step(t, ctx, shot, "tick model.test",
		clickOf(`#set-agents input[data-host="model.test"]`))
	checkNames(t, ctx, shot, "Settings → Agents with a trial's hosts")
	shotAt1000(t, ctx, shot, "settings-agent-trial")
	step(t, ctx, shot, "keep the ticked host",
		clickOf(`[data-keep-hosts="peer"]`),
		void(chromedp.Poll[bool](`(document.querySelector('[data-trial-done="peer"]') || {}).innerText?.includes('Added model.test')`)))
	p := peerProfile(t, d)
	if !slices.Equal(p.Hosts, []string{"model.test"}) {
		t.Fatalf("agents.toml gives the peer hosts %v, want exactly the ticked model.test", p.Hosts)
	}
	if kernel.CheckAgentApproved(d.home, p) == nil {
		t.Fatal("keeping the trial's hosts approved the changed profile")
	}
	step(t, ctx, shot, "the changed profile shows its new host and waits for approval",
		clickOf(`#set-agents li[data-agent="peer"] button[aria-label^="Show the profile"]`),
		void(chromedp.Poll[bool](`(document.querySelector('#set-agents li[data-agent="peer"] .agent-more') || {}).innerText?.includes('model.test') && !!document.querySelector('[data-approve="peer"]')`)))
	shotAt1000(t, ctx, shot, "settings-agent-trial-kept")
}
