package daemon

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestAppRegistryAddsPanelsSettingsAndCommands drives registry.js, the seam other modules of
// the app (previews, extensions, transports) use instead of editing app.js: a panel registered
// after start gets a tab and is mounted with the current task, its shortcut shows it, a
// settings section shows in Settings, and a command reaches the palette.
func TestAppRegistryAddsPanelsSettingsAndCommands(t *testing.T) {
	ctx, shot := browser(t)
	d := startDaemon(t, Config{})
	folder := sampleFolder(t)
	step(t, ctx, shot, "open the app and make a task",
		chromedp.Navigate(d.URL()),
		chromedp.WaitVisible(chromedp.CSS(`#btn-new`)),
		chromedp.Click(chromedp.CSS(`#btn-new`)),
		chromedp.WaitVisible(chromedp.CSS(`#new-folder`)),
		chromedp.SendKeys(chromedp.CSS(`#new-folder`), folder),
		chromedp.Click(chromedp.CSS(`#new-ok`)),
		chromedp.WaitVisible(chromedp.CSS(`#taskview`)))
	step(t, ctx, shot, "register a panel, a section and a command",
		void(chromedp.Evaluate[bool](`(import('/registry.js').then((r) => {
			r.registerPanel({ id: 'probe', title: 'Probe', key: 'Mod+9',
				mount(el, c) { el.append(c.h('p', { id: 'probe-text' }, 'mounted on ' + c.task.folder)); },
				refresh(c) { document.body.dataset.probeRefreshed = (Number(document.body.dataset.probeRefreshed || 0) + 1); } });
			r.registerSettingsSection({ id: 'probe', title: 'Probe settings', mount(el, c) { el.append(c.h('p', { id: 'probe-set' }, 'a setting')); } });
			r.registerCommand({ id: 'probe.hello', title: 'Probe: say hello', run(c) { c.toast('hello from the probe'); } });
		}), true)`)),
		chromedp.WaitVisible(chromedp.CSS(`#tab-probe`)))
	step(t, ctx, shot, "its shortcut shows the panel",
		chromedp.KeyEvent("9", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		chromedp.WaitVisible(chromedp.CSS(`#probe-text`)))
	text := value(t, ctx, shot, "read the panel", textOf(`#probe-text`))
	if !strings.Contains(text, folder) {
		t.Fatalf("the panel says %q; want it mounted with the task on %s", text, folder)
	}
	if live := value(t, ctx, shot, "Live is hidden", chromedp.Evaluate[bool](`document.getElementById('v-live').hidden`)); !live {
		t.Fatal("Live still shows beside the registered panel")
	}
	step(t, ctx, shot, "the section shows in Settings",
		clickOf(`#btn-settings`),
		chromedp.WaitVisible(chromedp.CSS(`#settings-probe #probe-set`)),
		chromedp.KeyEvent("\x1b"))
	step(t, ctx, shot, "the command runs from the palette",
		chromedp.KeyEvent("k", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		chromedp.WaitVisible(chromedp.CSS(`#pal-input`)),
		chromedp.SendKeys(chromedp.CSS(`#pal-input`), "say hello"),
		chromedp.KeyEvent("\r"),
		void(chromedp.Poll[bool](`document.getElementById('toasts').innerText.includes('hello from the probe')`)))
}
