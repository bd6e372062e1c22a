package daemon

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kulehq/kule/kernel"
)

// installExtension zips an extension of files into the daemon's home and,
// when approve is set, approves it.
func installExtension(t *testing.T, d *Daemon, files map[string]string, approve bool) string {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for name, body := range files {
		w, err := zw.Create(name)
		must(t, err)
		_, err = w.Write([]byte(body))
		must(t, err)
	}
	must(t, zw.Close())
	s := kernel.NewExtensionStore(d.home)
	pkg, err := s.Install(b.Bytes())
	must(t, err)
	if approve {
		_, err := s.Approve(pkg.Manifest.ID, "")
		must(t, err)
	}
	return pkg.Manifest.ID
}

var helloFiles = map[string]string{
	"extension.json": `{"id":"me.hello","name":"Hello","version":"0.1.0","description":"Says hello.",
 "permissions":["commands","tasks.read","settings"],
 "commands":[{"id":"greet","title":"Hello: greet"}],
 "settings":[{"id":"greeting","title":"Greeting","type":"string","default":"Hi"}]}`,
	"main.js": `kule.commands.register('greet', () => kule.settings.get('greeting') + '!');`,
}

func call(t *testing.T, d *Daemon, method, path, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, "http://"+d.Addr()+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+d.Token())
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestExtensionsAPI: the list says what each extension asks for in words
// and whether it may run; a command does not run here without a runner, and
// an unapproved one never would.
func TestExtensionsAPI(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, Config{})
	installExtension(t, d, helloFiles, false)
	code, body := call(t, d, "GET", "/api/extensions", "")
	if code != 200 {
		t.Fatalf("list: %d %s", code, body)
	}
	var list []extensionView
	must(t, json.Unmarshal([]byte(body), &list))
	if len(list) != 1 || list[0].Approved || !strings.Contains(list[0].Reason, "not approved yet") || list[0].Permissions[1].Says == "" || list[0].Settings[0].Default != "Hi" {
		t.Fatalf("list: %+v", list)
	}
	if code, body := call(t, d, "POST", "/api/extensions/me.hello/commands/greet", `{}`); code != http.StatusServiceUnavailable || !strings.Contains(body, "cannot run") {
		t.Fatalf("run without a runner: %d %s", code, body)
	}
	k := newKernel(t)
	d2 := startDaemon(t, Config{Kernel: k, Extensions: func() *kernel.ExtensionRunner {
		return &kernel.ExtensionRunner{Store: kernel.NewExtensionStore(k.Home())}
	}})
	installExtension(t, d2, helloFiles, false)
	if code, body := call(t, d2, "POST", "/api/extensions/me.hello/commands/greet", `{}`); code != http.StatusConflict || !strings.Contains(body, "waits for approval") {
		t.Fatalf("run unapproved: %d %s", code, body)
	}
}

// TestAppSettingsListsExtensions: Settings → Extensions shows each
// extension with its permissions in words, its approval and its settings,
// and an approved extension's command reaches the palette.
func TestAppSettingsListsExtensions(t *testing.T) {
	ctx, shot := browser(t)
	d := startDaemon(t, Config{})
	installExtension(t, d, helloFiles, true)
	step(t, ctx, shot, "open the app and Settings",
		chromedp.Navigate(d.URL()),
		chromedp.WaitVisible(chromedp.CSS(`#btn-settings`)),
		clickOf(`#btn-settings`),
		chromedp.WaitVisible(chromedp.CSS(`#settings-extensions #ext-me-hello`)))
	text := value(t, ctx, shot, "read the extension", textOf(`#ext-me-hello`))
	for _, want := range []string{"Hello", "me.hello 0.1.0", "approved", "tasks.read see the list of tasks", "Greeting (greeting, string)", "default \"Hi\"", "sha256 "} {
		if !strings.Contains(text, want) {
			t.Errorf("Settings → Extensions lacks %q:\n%s", want, text)
		}
	}
	step(t, ctx, shot, "its command is in the palette",
		chromedp.KeyEvent("\x1b"),
		chromedp.KeyEvent("k", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		chromedp.WaitVisible(chromedp.CSS(`#pal-input`)),
		chromedp.SendKeys(chromedp.CSS(`#pal-input`), "Hello: greet"),
		chromedp.KeyEvent("\r"),
		// This daemon has no runner: the palette says so rather than failing quietly.
		void(chromedp.Poll[bool](`document.getElementById('toasts').innerText.includes('extensions cannot run in this daemon')`)))
}

var goodPanel = map[string]string{
	"extension.json": `{"id":"me.good","name":"Good","version":"1.0.0","permissions":["panels","tasks.read"],
 "panels":[{"id":"tasks","title":"Good tasks","page":"p.html"}]}`,
	"main.js": `1`,
	"p.html":  `<!doctype html><p id="out">waiting</p><script src="p.js"></script>`,
	"p.js": `window.addEventListener('message', (ev) => { if (ev.data && ev.data.id === 1) parent.postMessage({ good: ev.data.error || ev.data.result.map((t) => t.folder).join(',') }, '*'); });
parent.postMessage({ kule: 1, id: 1, call: 'tasks.list', args: [] }, '*');`,
}

// evilPanel asks for panels only and tries, from its frame, what a panel
// must not do; it posts what it got to the app as {probe}.
var evilPanel = map[string]string{
	"extension.json": `{"id":"me.evil","name":"Evil","version":"1.0.0","permissions":["panels"],
 "panels":[{"id":"probe","title":"Evil probe","page":"p.html"}]}`,
	"main.js": `1`,
	"p.html":  `<!doctype html><p>probe</p><script src="p.js"></script>`,
	"p.js":    probeJS,
}

// probeJS is the attack: it runs in the sandboxed frame, and (the guard
// taken away) in the app's own page.
const probeJS = `(async () => {
  const out = {};
  try { out.parentDoc = 'read ' + parent.document.querySelectorAll('*').length + ' elements'; } catch (e) { out.parentDoc = 'blocked: ' + e.name; }
  try { out.cookie = 'read "' + document.cookie + '"'; } catch (e) { out.cookie = 'blocked: ' + e.name; }
  try { out.storage = 'read ' + localStorage.length; } catch (e) { out.storage = 'blocked: ' + e.name; }
  try { const r = await fetch('/api/tasks'); out.fetch = 'status ' + r.status; } catch (e) { out.fetch = 'blocked: ' + e.name; }
  if (parent !== window) {
    try { top.location.href = '/?escaped=1'; out.top = 'navigated'; } catch (e) { out.top = 'blocked: ' + e.name; }
    out.asOther = await new Promise((ok) => {
      window.addEventListener('message', (ev) => { if (ev.data && ev.data.id === 7) ok(ev.data.error || JSON.stringify(ev.data.result)); });
      parent.postMessage({ kule: 1, id: 7, call: 'tasks.list', args: [], extension: 'me.good', from: 'me.good' }, '*');
    });
    parent.postMessage({ probe: out }, '*');
  }
  return out;
})()`

// TestAppPanelsAreSandboxed: an extension's panel runs in a sandboxed
// frame with a CSP of its own and reaches Kule only through the bridge, as
// itself. The good panel gets its answer; the evil panel cannot read the
// app's DOM, its cookie or storage, fetch the API with the token, navigate
// the top window, or get an answer by claiming to be another extension.
// The same probe run in the app's own page (the sandbox taken away) reads
// the DOM and the API, so the probe is real.
func TestAppPanelsAreSandboxed(t *testing.T) {
	ctx, shot := browser(t)
	d := startDaemon(t, Config{})
	installExtension(t, d, goodPanel, true)
	installExtension(t, d, evilPanel, true)
	folder := sampleFolder(t)
	step(t, ctx, shot, "open the app and make a task",
		chromedp.Navigate(d.URL()),
		chromedp.WaitVisible(chromedp.CSS(`#btn-new`)),
		chromedp.Click(chromedp.CSS(`#btn-new`)),
		chromedp.WaitVisible(chromedp.CSS(`#new-folder`)),
		chromedp.SendKeys(chromedp.CSS(`#new-folder`), folder),
		chromedp.Click(chromedp.CSS(`#new-ok`)),
		chromedp.WaitVisible(chromedp.CSS(`#taskview`)),
		chromedp.WaitVisible(chromedp.CSS(`#tab-x-me-evil-probe`)),
		void(chromedp.Evaluate[bool](`window.__probe = null; window.__good = null;
			window.addEventListener('message', (e) => { if (e.data && e.data.probe) window.__probe = e.data.probe; if (e.data && e.data.good) window.__good = e.data.good; }); true`)))
	step(t, ctx, shot, "the good panel gets its answer",
		clickOf(`#tab-x-me-good-tasks`),
		void(chromedp.Poll[bool](`window.__good !== null`)))
	if good := value(t, ctx, shot, "read the good answer", chromedp.Evaluate[string](`window.__good`)); !strings.Contains(good, folder) {
		t.Fatalf("the good panel got %q; want the task on %s", good, folder)
	}
	step(t, ctx, shot, "the evil panel probes",
		clickOf(`#tab-x-me-evil-probe`),
		void(chromedp.Poll[bool](`window.__probe !== null`)))
	probe := value(t, ctx, shot, "read the probe", chromedp.Evaluate[map[string]string](`window.__probe`))
	for k, want := range map[string]string{"parentDoc": "blocked", "cookie": "blocked", "storage": "blocked", "fetch": "blocked", "top": "blocked",
		"asOther": `me.evil called "tasks.list", which needs the permission "tasks.read"`} {
		if !strings.Contains(probe[k], want) {
			t.Errorf("%s: %q, want %q", k, probe[k], want)
		}
	}
	if u := value(t, ctx, shot, "the app's address", chromedp.Evaluate[string](`location.search`)); strings.Contains(u, "escaped") {
		t.Fatalf("the panel navigated the top window: %s", u)
	}
	// The guard taken away: the same probe in the app's own page reads the
	// DOM and calls the API with the session.
	bare := value(t, ctx, shot, "probe without the sandbox", chromedp.Evaluate[map[string]string](probeJS, chromedp.EvalAwaitPromise))
	if !strings.HasPrefix(bare["parentDoc"], "read ") || bare["fetch"] != "status 200" {
		t.Fatalf("unsandboxed, the probe got %v: it proves nothing", bare)
	}
	// The panel's file, fetched as a page of its own, carries the sandbox
	// in its CSP; with a wrong key it is not served.
	var list []extensionView
	_, body := call(t, d, "GET", "/api/extensions", "")
	must(t, json.Unmarshal([]byte(body), &list))
	for _, x := range list {
		if x.ID != "me.evil" {
			continue
		}
		resp, err := http.Get("http://" + d.Addr() + x.Panels[0].URL)
		must(t, err)
		resp.Body.Close()
		if csp := resp.Header.Get("Content-Security-Policy"); resp.StatusCode != 200 || !strings.Contains(csp, "sandbox allow-scripts") || !strings.Contains(csp, "connect-src 'none'") {
			t.Fatalf("panel page: %d, CSP %q", resp.StatusCode, csp)
		}
		bad := strings.Replace(x.Panels[0].URL, "/ext-panel/", "/ext-panel/0", 1)
		resp, err = http.Get("http://" + d.Addr() + bad)
		must(t, err)
		resp.Body.Close()
		if resp.StatusCode != 404 {
			t.Fatalf("a wrong key: %d", resp.StatusCode)
		}
	}
}

// TestAppUsesAnExtensionTheme: an approved extension's theme is offered in
// Settings → Extensions and, used, sets the app's colours for its named
// parts; it is kept for the next load.
func TestAppUsesAnExtensionTheme(t *testing.T) {
	ctx, shot := browser(t)
	d := startDaemon(t, Config{})
	installExtension(t, d, map[string]string{
		"extension.json":       `{"id":"me.dusk","name":"Dusk","version":"1.0.0","permissions":["themes"],"themes":[{"id":"dusk","title":"Dusk","file":"dusk.kule-theme.json"}]}`,
		"main.js":              `1`,
		"dusk.kule-theme.json": `{"name":"Dusk","dark":true,"colors":{"bg":"#1b1620","accent":"#f2a65a"}}`,
	}, true)
	if code, body := call(t, d, "GET", "/api/extensions/me.dusk/themes/dusk", ""); code != 200 || !strings.Contains(body, `"bg":"#1b1620"`) {
		t.Fatalf("theme API: %d %s", code, body)
	}
	bg := chromedp.Evaluate[string](`getComputedStyle(document.documentElement).getPropertyValue('--bg').trim()`)
	step(t, ctx, shot, "use the theme from Settings",
		chromedp.Navigate(d.URL()),
		chromedp.WaitVisible(chromedp.CSS(`#btn-settings`)),
		clickOf(`#btn-settings`),
		chromedp.WaitVisible(chromedp.CSS(`button.ext-theme`)),
		clickOf(`button.ext-theme`),
		void(chromedp.Poll[bool](`getComputedStyle(document.documentElement).getPropertyValue('--bg').trim() === '#1b1620'`)))
	step(t, ctx, shot, "reload: the theme stays",
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS(`#btn-settings`)),
		void(chromedp.Poll[bool](`getComputedStyle(document.documentElement).getPropertyValue('--bg').trim() === '#1b1620'`)))
	if got := value(t, ctx, shot, "read --bg", bg); got != "#1b1620" {
		t.Fatalf("--bg = %q", got)
	}
}
