package daemon

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/kulehq/kule/extensions/host"
	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/sdk/extension"
)

// inProcessHosts is a runner whose hosts are the real extension host
// (extensions/host) served in this process over go-plugin's gRPC, one per
// launch, counted in launches: the daemon's pool is what is tested, not the
// plugin sandbox (cmd/kule's TestExtCommandFromTheDaemon runs that).
func inProcessHosts(t *testing.T, k *kernel.Kernel, launches *atomic.Int32) func() *kernel.ExtensionRunner {
	return func() *kernel.ExtensionRunner {
		return &kernel.ExtensionRunner{
			Store:    kernel.NewExtensionStore(k.Home()),
			Services: k.ExtensionServices(nil),
			Launch: func(context.Context) (*extension.HostClient, func(), error) {
				launches.Add(1)
				// Closing the client shuts its server down (go-plugin's
				// controller); stopping the server as well races with that.
				c, _ := goplugin.TestPluginGRPCConn(t, false, map[string]goplugin.Plugin{extension.Kind: &extension.HostPlugin{Impl: host.New(nil)}})
				raw, err := c.Dispense(extension.Kind)
				if err != nil {
					c.Close()
					return nil, nil, err
				}
				return raw.(*extension.HostClient), func() { c.Close() }, nil
			},
		}
	}
}

// TestExtensionHostsKeptRunning: the daemon keeps an extension's host
// between commands (three commands, at most two hosts started: the spare
// and the one loaded), loads it afresh when its settings change, and saves
// only settings of the manifest's types.
func TestExtensionHostsKeptRunning(t *testing.T) {
	t.Parallel()
	k := newKernel(t)
	var launches atomic.Int32
	d := startDaemon(t, Config{Kernel: k, Extensions: inProcessHosts(t, k, &launches)})
	installExtension(t, d, helloFiles, true)
	greet := func() string {
		t.Helper()
		code, body := call(t, d, "POST", "/api/extensions/me.hello/commands/greet", `{}`)
		if code != 200 {
			t.Fatalf("greet: %d %s", code, body)
		}
		var out struct {
			Result string `json:"result"`
		}
		must(t, json.Unmarshal([]byte(body), &out))
		return out.Result
	}
	for range 3 {
		if got := greet(); got != "Hi!" {
			t.Fatalf("greet = %q", got)
		}
	}
	if n := launches.Load(); n > 2 {
		t.Fatalf("three commands started %d hosts; the daemon should keep one (and one spare)", n)
	}
	for _, bad := range []string{`{"greeting":3}`, `{"greeting":true}`, `{"nope":"x"}`} {
		if code, body := call(t, d, "PUT", "/api/extensions/me.hello/settings", bad); code != http.StatusUnprocessableEntity {
			t.Fatalf("settings %s: %d %s; want refused", bad, code, body)
		}
	}
	if got := greet(); got != "Hi!" {
		t.Fatalf("after refused settings, greet = %q", got)
	}
	if code, body := call(t, d, "PUT", "/api/extensions/me.hello/settings", `{"greeting":"Yo"}`); code != 200 || !strings.Contains(body, `"greeting":"Yo"`) {
		t.Fatalf("save settings: %d %s", code, body)
	}
	if got := greet(); got != "Yo!" {
		t.Fatalf("after saving settings, greet = %q", got)
	}
	code, body := call(t, d, "GET", "/api/extensions", "")
	if code != 200 || !strings.Contains(body, `"value":"Yo"`) {
		t.Fatalf("list after saving: %d %s", code, body)
	}
	// Disabled, its host is not used again.
	must(t, kernel.NewExtensionStore(d.home).SetDisabled("me.hello", true))
	if code, body := call(t, d, "POST", "/api/extensions/me.hello/commands/greet", `{}`); code == 200 {
		t.Fatalf("a disabled extension's kept host answered: %s", body)
	}
}

var notesFiles = map[string]string{
	"extension.json": `{"id":"me.notes","name":"Notes","version":"0.1.0","permissions":["review.read","review.notes","settings"],
 "review_notes":true,
 "settings":[{"id":"marker","title":"The word to look for","type":"string","default":"todo"}]}`,
	"main.js": `kule.review.onNotes((rv) => {
  const m = kule.settings.get('marker');
  const out = [];
  for (const e of rv.effects) {
    if (e.path.includes(m)) out.push({ path: e.path, text: 'named ' + m });
    // The entity is the first one named in the file, when the differ named any.
    if (e.path.endsWith('.go')) out.push({ path: e.path, entity: (e.entities || [])[0] || 'func Serve', text: 'this changes a public API' });
  }
  out.push({ path: '../outside', text: 'dropped' });
  return out;
});`,
}

// TestAppReviewShowsExtensionNotes: Review shows an extension's notes under
// the file (and the entity) they are about, as text; Settings →
// Extensions edits the extension's setting, and the next review's notes
// follow it.
func TestAppReviewShowsExtensionNotes(t *testing.T) {
	ctx, shot := browser(t)
	k := newKernel(t)
	var launches atomic.Int32
	d := startDaemon(t, Config{Kernel: k, Extensions: inProcessHosts(t, k, &launches)})
	installExtension(t, d, notesFiles, true)
	folder := sampleFolder(t)
	rep, err := d.k.NewTask(context.Background(), folder)
	must(t, err)
	cp := rep.Task.Paths.Copy
	must(t, os.WriteFile(filepath.Join(cp, "todo.txt"), []byte("x\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(cp, "fixme.txt"), []byte("<b>y</b>\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(cp, "serve.go"), []byte("package x\n\nfunc Serve() {}\n"), 0o644))

	code, body := call(t, d, "GET", "/api/tasks/"+rep.Task.ID, "")
	if code != 200 || !strings.Contains(body, `"text":"named todo"`) || !strings.Contains(body, "notes dropped") {
		t.Fatalf("the review's JSON: %d %s", code, body)
	}
	step(t, ctx, shot, "open Review",
		chromedp.Navigate(d.URL()),
		clickOf(`#task-list li[data-id="`+rep.Task.ID+`"]`),
		chromedp.KeyEvent("2", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		chromedp.WaitVisible(chromedp.CSS(`#changes li[data-path="todo.txt"] .ext-note`)))
	todo := value(t, ctx, shot, "read the note", textOf(`#changes li[data-path="todo.txt"] .ext-notes`))
	if !strings.Contains(todo, "named todo") || !strings.Contains(todo, "[me.notes]") {
		t.Fatalf("todo.txt's notes read %q", todo)
	}
	if n := value(t, ctx, shot, "fixme.txt has none", chromedp.Evaluate[int](`document.querySelectorAll('#changes li[data-path="fixme.txt"] .ext-note').length`)); n != 0 {
		t.Fatalf("fixme.txt has %d notes before the setting changed", n)
	}
	shot("review-with-notes")
	serve := value(t, ctx, shot, "read the entity's note", textOf(`#changes li[data-path="serve.go"]`))
	if !strings.Contains(serve, "• func Serve: this changes a public API") {
		t.Fatalf("serve.go's row reads %q; want the note under its entity", serve)
	}

	step(t, ctx, shot, "change the marker in Settings → Extensions",
		clickOf(`#btn-settings`),
		chromedp.WaitVisible(chromedp.CSS(`#ext-set-me-notes-marker`)),
		chromedp.SetValue(chromedp.CSS(`#ext-set-me-notes-marker`), "fixme"),
		void(chromedp.Evaluate[bool](`document.getElementById('ext-me-notes').scrollIntoView(), true`)))
	shot("settings-extensions")
	step(t, ctx, shot, "save the setting",
		clickOf(`#ext-me-notes button.ext-save`),
		void(chromedp.Poll[bool](`document.getElementById('toasts').innerText.includes('settings saved')`)))
	step(t, ctx, shot, "open Review again",
		chromedp.Navigate(d.URL()),
		clickOf(`#task-list li[data-id="`+rep.Task.ID+`"]`),
		chromedp.KeyEvent("2", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		chromedp.WaitVisible(chromedp.CSS(`#changes li[data-path="fixme.txt"] .ext-note`)))
	fixme := value(t, ctx, shot, "read the new note", chromedp.Evaluate[string](`(() => { const li = document.querySelector('#changes li[data-path="fixme.txt"] .ext-note'); return li.innerHTML; })()`))
	if !strings.Contains(fixme, "named fixme") || strings.Contains(fixme, "<b>") {
		t.Fatalf("fixme.txt's note is %q", fixme)
	}
	if n := value(t, ctx, shot, "todo.txt has none now", chromedp.Evaluate[int](`document.querySelectorAll('#changes li[data-path="todo.txt"] .ext-note').length`)); n != 0 {
		t.Fatalf("todo.txt still has %d notes", n)
	}
}
