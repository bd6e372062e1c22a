package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestAppThemes: a named theme is kept in themes.json (not the browser's storage) and holds
// after a reload; every named theme reads (no colour pair under the WCAG contrast it needs);
// an own theme shows while it is edited, warns of a pair too faint to read, and is kept; a
// .kule-theme.json with something other than #rrggbb is refused before anything changes; Motion
// off is kept and applied.
func TestAppThemes(t *testing.T) {
	ctx, shot := browser(t)
	d := startDaemon(t, Config{})
	themesFile := filepath.Join(d.home, "themes.json")
	step(t, ctx, shot, "pick Nord in Settings",
		chromedp.Navigate(d.URL()),
		chromedp.WaitVisible(chromedp.CSS(`#btn-settings`)),
		chromedp.Click(chromedp.CSS(`#btn-settings`)),
		chromedp.WaitVisible(chromedp.CSS(`input[name=theme][value=nord]`)),
		chromedp.Click(chromedp.CSS(`input[name=theme][value=nord]`)))
	waitFor(t, "themes.json says nord", func() bool { return strings.Contains(readFile(themesFile), `"theme": "nord"`) })
	step(t, ctx, shot, "reload with the browser's storage emptied",
		void(chromedp.Evaluate[bool](`(localStorage.clear(), true)`)),
		chromedp.Navigate("http://"+d.Addr()+"/"),
		void(chromedp.Poll[bool](`document.documentElement.dataset.theme === 'nord'`)))

	faint := value(t, ctx, shot, "every named theme reads", chromedp.Evaluate[[]string](`(async () => {
		const m = await import('/themes.js');
		const out = [], root = document.documentElement;
		for (const [id] of m.named) {
			if (id === 'system') continue;
			root.dataset.theme = id;
			const cs = getComputedStyle(root), c = {};
			for (const [p] of m.parts) {
				let v = cs.getPropertyValue('--' + p).trim();
				if (/^#[0-9a-f]{3}$/i.test(v)) v = '#' + [...v.slice(1)].map((x) => x + x).join('');
				c[p] = v.toLowerCase();
			}
			for (const w of m.faint(c)) out.push(id + ': ' + w);
		}
		root.dataset.theme = 'nord';
		return out;
	})()`, chromedp.EvalAwaitPromise))
	if len(faint) > 0 {
		t.Fatalf("named themes with pairs too faint to read:\n%s", strings.Join(faint, "\n"))
	}

	step(t, ctx, shot, "make an own theme with a faint text colour",
		chromedp.Click(chromedp.CSS(`#btn-settings`)),
		chromedp.WaitVisible(chromedp.CSS(`#btn-own-theme`)),
		chromedp.Click(chromedp.CSS(`#btn-own-theme`)),
		chromedp.WaitVisible(chromedp.CSS(`#theme-name`)),
		void(chromedp.Evaluate[bool](`(() => { const i = document.querySelector('.theme-editor input[data-part=text]'); i.value = '#3b4252'; i.dispatchEvent(new Event('input')); return true; })()`)),
		void(chromedp.Poll[bool](`document.getElementById('theme-warn').innerText.includes('Too faint')`)))
	live := value(t, ctx, shot, "the preview shows it", chromedp.Evaluate[string](`getComputedStyle(document.documentElement).getPropertyValue('--text').trim()`))
	if live != "#3b4252" {
		t.Fatalf("while editing, the text colour is %q; want the one picked (a live preview)", live)
	}
	step(t, ctx, shot, "a readable colour, a name, save",
		void(chromedp.Evaluate[bool](`(() => { const i = document.querySelector('.theme-editor input[data-part=text]'); i.value = '#f5f5f5'; i.dispatchEvent(new Event('input')); return true; })()`)),
		void(chromedp.Poll[bool](`!document.getElementById('theme-warn').innerText.includes('Text on')`)),
		chromedp.SendKeys(chromedp.CSS(`#theme-name`), "Dusk"),
		chromedp.Click(chromedp.CSS(`#theme-save`)))
	waitFor(t, "themes.json keeps the own theme", func() bool {
		s := readFile(themesFile)
		return strings.Contains(s, `"id": "own-dusk"`) && strings.Contains(s, `"theme": "own-dusk"`) && strings.Contains(s, `"text": "#f5f5f5"`)
	})
	// themes.json is written before the daemon answers; the editor closes
	// (and Appearance is drawn afresh) only once the page has the answer.
	step(t, ctx, shot, "the editor closes once it is kept",
		void(chromedp.Poll[bool](`!document.querySelector('.theme-editor:not([hidden])')`)))

	before := readFile(themesFile)
	bad := filepath.Join(t.TempDir(), "evil.kule-theme.json")
	must(t, os.WriteFile(bad, []byte(`{"id":"own-evil","name":"Evil","base":"light","colours":{"bg":"red;background:url(http://evil.example/)"}}`), 0o644))
	step(t, ctx, shot, "import a theme file that is not only colours",
		chromedp.SetUploadFiles(chromedp.CSS(`#theme-import`), []string{bad}),
		void(chromedp.Poll[bool](`document.getElementById('toasts').innerText.includes('not a colour')`)))
	if readFile(themesFile) != before {
		t.Fatal("a refused theme file changed themes.json")
	}
	if open := value(t, ctx, shot, "no editor for it", chromedp.Evaluate[bool](`!!document.querySelector('.theme-editor:not([hidden])')`)); open {
		t.Fatal("a refused theme file was shown")
	}
	good := filepath.Join(t.TempDir(), "sea.kule-theme.json")
	must(t, os.WriteFile(good, []byte(`{"id":"own-sea","name":"Sea","base":"light","colours":{"accent":"#005f73"}}`), 0o644))
	step(t, ctx, shot, "import a good one: it is shown before it is kept",
		chromedp.SetUploadFiles(chromedp.CSS(`#theme-import`), []string{good}),
		chromedp.WaitVisible(chromedp.CSS(`.theme-editor #theme-save`)))
	if readFile(themesFile) != before {
		t.Fatal("an imported theme was kept before Save")
	}
	step(t, ctx, shot, "keep it", chromedp.Click(chromedp.CSS(`#theme-save`)))
	waitFor(t, "themes.json keeps the import", func() bool { return strings.Contains(readFile(themesFile), `"own-sea"`) })
	step(t, ctx, shot, "the editor closes once the import is kept",
		void(chromedp.Poll[bool](`!document.querySelector('.theme-editor:not([hidden])')`)))

	step(t, ctx, shot, "Motion off",
		chromedp.WaitVisible(chromedp.CSS(`input[name=motion][value=off]`)),
		chromedp.Click(chromedp.CSS(`input[name=motion][value=off]`)),
		void(chromedp.Poll[bool](`document.documentElement.dataset.motion === 'off'`)))
	waitFor(t, "themes.json says motion off", func() bool { return strings.Contains(readFile(themesFile), `"motion": "off"`) })
}
