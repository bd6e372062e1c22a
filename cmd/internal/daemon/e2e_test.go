package daemon

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

var docShot = flag.String("docshot", "", "write a screenshot of the main screen to this file (docs/app.png; TestAppLiveConnectionsAgentAndGroups takes it)")

// browser starts a headless Chromium with a fresh profile, or skips with a
// reason when none is installed and CI is unset.
func browser(t *testing.T) (context.Context, func(string)) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short skips the end-to-end browser runs")
	}
	path := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("no chromium on PATH; .ci/run must install Debian's chromium")
		}
		t.Skip("no chromium on PATH (apt-get install chromium); the app's end-to-end tests need a real browser")
	}
	profile := t.TempDir()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("no-default-browser-check", true),
		chromedp.UserDataDir(profile), chromedp.WindowSize(1360, 860),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() { cancelT(); cancelC(); cancelA() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	// The page's own errors go into the test log: a failure says why.
	_ = chromedp.Listen(ctx, func(ev any) {
		switch e := ev.(type) {
		case *cdpruntime.EventExceptionThrown:
			t.Logf("page exception: %s %s", e.ExceptionDetails.Text, e.ExceptionDetails.Exception.Description)
		case *cdpruntime.EventConsoleAPICalled:
			if e.Type == "error" || e.Type == "warning" {
				var parts []string
				for _, a := range e.Args {
					parts = append(parts, string(a.Value)+a.Description)
				}
				t.Logf("page console %s: %s", e.Type, strings.Join(parts, " "))
			}
		}
	})
	// shot saves a screenshot that outlives the test (for a failure).
	shot := func(name string) {
		dir := filepath.Join(os.TempDir(), "kule-e2e-"+strings.ReplaceAll(t.Name(), "/", "_"))
		os.MkdirAll(dir, 0o755)
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if b, err := chromedp.Run(sctx, chromedp.FullScreenshot(100)); err == nil {
			p := filepath.Join(dir, name+".png")
			os.WriteFile(p, b, 0o644)
			t.Logf("screenshot: %s", p)
		}
	}
	return ctx, shot
}

// step runs browser actions and, when they fail, saves a screenshot first.
func step(t *testing.T, ctx context.Context, shot func(string), what string, acts ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	t.Logf("step: %s", what)
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(sctx, acts...); err != nil {
		shot("failed-" + strings.ReplaceAll(what, " ", "-"))
		t.Fatalf("%s: %v", what, err)
	}
}

// value runs one browser action that reads something.
func value[T any](t *testing.T, ctx context.Context, shot func(string), what string, a chromedp.Action[T]) T {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(sctx, a)
	if err != nil {
		shot("failed-" + strings.ReplaceAll(what, " ", "-"))
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// textOf reads an element's text in one step (the Live tab redraws often:
// a node found first may be gone when its text is read).
func textOf(sel string) chromedp.Action[string] {
	return chromedp.Evaluate[string](`(document.querySelector(` + "`" + sel + "`" + `) || {}).innerText || ''`)
}

// clickOf finds and clicks an element in one step, polling until it is
// there: a redraw between a query and a click (Review redraws on every task
// event) leaves chromedp a node that is gone.
func clickOf(sel string) chromedp.Action[chromedp.Void] {
	return void(chromedp.Poll[bool](`(() => { const e = document.querySelector(` + "`" + sel + "`" + `); if (!e) return false; e.click(); return true })()`))
}

// void drops an action's value.
func void[T any](a chromedp.Action[T]) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := a(ctx, t)
		return chromedp.Void{}, err
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; !cond(); i++ {
		if i > 600 {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func readFile(p string) string { b, _ := os.ReadFile(p); return string(b) }

// TestAppEndToEnd drives the control room in a real headless Chromium: a
// task on a sample folder, a command from the command line, the change with
// its names and verdicts under Review, a commit, Approve and commit for a
// manifest the policy asks about, Undo from the Timeline, questions answered
// from Needs you by click and by keyboard, and the palette.
func TestAppEndToEnd(t *testing.T) {
	ctx, shot := browser(t)
	// The kernel's built-in policy asks about go.mod (manifests-and-lockfiles).
	d := startDaemon(t, Config{Reviewer: StaticReviewer{"README.md": {"# Project", "## Usage"}}})
	folder := sampleFolder(t)

	step(t, ctx, shot, "open the app with a launch code",
		chromedp.Navigate(d.URL()),
		chromedp.WaitVisible(chromedp.CSS(`#btn-new`)))
	loc := value(t, ctx, shot, "launch code gone from the address", chromedp.Location())
	if strings.Contains(loc, "launch") || strings.Contains(loc, "token") {
		t.Fatalf("the launch code stays in the address bar: %s", loc)
	}

	step(t, ctx, shot, "make a task",
		chromedp.Click(chromedp.CSS(`#btn-new`)),
		chromedp.WaitVisible(chromedp.CSS(`#new-folder`)),
		chromedp.SendKeys(chromedp.CSS(`#new-folder`), folder),
		chromedp.SendKeys(chromedp.CSS(`#new-name`), "Sample notes"),
		chromedp.Click(chromedp.CSS(`#new-ok`)),
		chromedp.WaitVisible(chromedp.CSS(`#taskview`)),
		chromedp.WaitVisible(chromedp.CSS(`#task-list li[aria-selected="true"]`)))
	ts, err := d.k.Tasks()
	must(t, err)
	if len(ts) != 1 || ts[0].Folder == "" || ts[0].Name != "Sample notes" {
		t.Fatalf("tasks after New task: %+v", ts)
	}
	id := ts[0].ID

	newLogo := filepath.Join(t.TempDir(), "new.png")
	must(t, os.WriteFile(newLogo, pngOf(t, 6, 5, 200), 0o644))
	step(t, ctx, shot, "run a command from the command line",
		chromedp.Click(chromedp.CSS(`#cmd`)),
		chromedp.SendKeys(chromedp.CSS(`#cmd`), "echo '## Usage' >> README.md && printf 'module x\\n' > go.mod && cp "+newLogo+" logo.png"),
		chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(chromedp.CSS(`#live li.run[data-state="ended"]`)))
	out := value(t, ctx, shot, "read the run in Live", textOf(`#live li.run`))
	step(t, ctx, shot, "see the changes under Review",
		chromedp.KeyEvent("2", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		chromedp.WaitVisible(chromedp.CSS(`#changes li[data-path="README.md"] .name`)),
		chromedp.WaitVisible(chromedp.CSS(`#changes li[data-path="go.mod"] .verdict.ask`)))
	names := value(t, ctx, shot, "read the names", chromedp.Text(chromedp.CSS(`#changes li[data-path="README.md"] .names`)))
	if !strings.Contains(names, "## Usage") || !strings.Contains(out, "exit 0") || !strings.Contains(out, "1 added, 2 changed") {
		t.Fatalf("review names %q, output %q", names, out)
	}
	// The changed picture shows before and after, each as it is.
	sizes := value(t, ctx, shot, "the pictures load", chromedp.Poll[[]int](`(() => {
		const im = [...document.querySelectorAll('#changes li[data-path="logo.png"] .pics img')];
		return im.length === 2 && im.every((i) => i.complete && i.naturalWidth > 0) ? im.map((i) => i.naturalWidth) : null;
	})()`))
	if fmt.Sprint(sizes) != "[4 6]" {
		t.Fatalf("before and after are %v pixels wide, want [4 6]", sizes)
	}
	if strings.Contains(readFile(filepath.Join(folder, "README.md")), "Usage") {
		t.Fatal("the folder changed before a commit")
	}

	// A connection question posted through the Questions interface, as the proxy would.
	var qs Questions = d.Q
	answered := make(chan Question, 1)
	go func() {
		a, _ := qs.Ask(context.Background(), Question{Task: id, Kind: "connection", Title: "Connect to registry.example:443?", Detail: "npm install asked for it", Subject: "registry.example:443"})
		answered <- a
	}()
	step(t, ctx, shot, "see the question under Needs you",
		chromedp.WaitVisible(chromedp.CSS(`#needs li[data-question] button.primary`)))
	step(t, ctx, shot, "approve it", clickOf(`#needs li[data-question] button.primary`))
	select {
	case a := <-answered:
		if a.State != Approved || a.By != "person" {
			t.Fatalf("the asker got %+v, want approved by a person", a)
		}
	case <-time.After(30 * time.Second):
		shot("question-not-answered")
		t.Fatal("the asker never got the answer")
	}
	step(t, ctx, shot, "the answered question leaves Needs you", chromedp.WaitNotVisible(chromedp.CSS(`#needs`)))
	// A second one answered with the keyboard: Mod+Shift+X denies (a browser keeps
	// Ctrl+Shift+N for a private window and never hands it to a page).
	go func() {
		a, _ := qs.Ask(context.Background(), Question{Task: id, Kind: "permission", Title: "Let the agent run rm -rf build?", Subject: "terminal"})
		answered <- a
	}()
	step(t, ctx, shot, "deny with the keyboard",
		chromedp.WaitVisible(chromedp.CSS(`#needs li[data-question]`)),
		chromedp.Click(chromedp.CSS(`#t-name`)),
		chromedp.KeyEvent("x", chromedp.KeyModifiers(chromedp.ModifierCtrl, chromedp.ModifierShift)),
		chromedp.WaitNotVisible(chromedp.CSS(`#needs`)))
	select {
	case a := <-answered:
		if a.State != Denied {
			t.Fatalf("Mod+Shift+X gave %s, want denied", a.State)
		}
	case <-time.After(30 * time.Second):
		shot("keyboard-deny-not-answered")
		t.Fatal("the asker never got the keyboard's answer")
	}

	step(t, ctx, shot, "commit",
		chromedp.Click(chromedp.CSS(`#btn-commit`)),
		chromedp.WaitNotPresent(chromedp.CSS(`#changes li[data-path="README.md"]`)))
	if !strings.Contains(readFile(filepath.Join(folder, "README.md")), "## Usage") {
		t.Fatal("Commit did not write README.md to the folder")
	}
	if _, err := os.Stat(filepath.Join(folder, "go.mod")); err == nil {
		t.Fatal("a plain Commit took in go.mod, which the policy asks about")
	}
	step(t, ctx, shot, "approve and commit the manifest",
		chromedp.WaitVisible(chromedp.CSS(`#btn-approve-commit`)),
		chromedp.Click(chromedp.CSS(`#btn-approve-commit`)),
		chromedp.WaitVisible(chromedp.CSS(`#no-changes`)))
	if readFile(filepath.Join(folder, "go.mod")) != "module x\n" {
		t.Fatal("Approve and commit did not write go.mod")
	}

	step(t, ctx, shot, "undo from the Timeline",
		chromedp.KeyEvent("3", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		chromedp.WaitVisible(chromedp.CSS(`#v-timeline button[aria-label^="Undo checkpoint 2"]`)),
		clickOf(`#v-timeline button[aria-label^="Undo checkpoint 2"]`),
		chromedp.WaitVisible(chromedp.CSS(`#dlg-confirm #confirm-ok`)),
		chromedp.Click(chromedp.CSS(`#confirm-ok`)),
		chromedp.WaitVisible(chromedp.CSS(`#v-timeline button[aria-label^="Undo checkpoint 1"]`)))
	if _, err := os.Stat(filepath.Join(folder, "go.mod")); err == nil {
		t.Fatal("Undo left go.mod in the folder")
	}

	step(t, ctx, shot, "palette finds Files",
		chromedp.KeyEvent("k", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		chromedp.WaitVisible(chromedp.CSS(`#pal-input`)),
		chromedp.SendKeys(chromedp.CSS(`#pal-input`), "files"),
		chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(chromedp.CSS(`#files li[aria-label^="notes"]`)))

	checkNames(t, ctx, shot, "the main screen")
}

// checkNames fails when a control on screen has no accessible name.
func checkNames(t *testing.T, ctx context.Context, shot func(string), where string) {
	t.Helper()
	unnamed := value(t, ctx, shot, "accessible names: "+where, chromedp.Evaluate[[]string](`[...document.querySelectorAll('button, input, textarea, select, [role=tab], [role=option], [role=radio]')]
		.filter(e => e.offsetParent !== null && !(e.getAttribute('aria-label') || e.textContent.trim() || (e.labels && e.labels.length) || e.getAttribute('title')))
		.map(e => e.outerHTML.slice(0, 80))`))
	if len(unnamed) > 0 {
		t.Fatalf("%s: controls without an accessible name: %v", where, unnamed)
	}
}

// TestAppTokenCheckInBrowser opens the app without its token, and drives it
// from a page of another origin on the same machine (same site for cookies):
// neither gets through.
func TestAppTokenCheckInBrowser(t *testing.T) {
	ctx, shot := browser(t)
	d := startDaemon(t, Config{})
	folder := sampleFolder(t)
	step(t, ctx, shot, "open without the token", chromedp.Navigate("http://"+d.Addr()+"/"))
	body := value(t, ctx, shot, "read the page", chromedp.Text(chromedp.CSS(`body`)))
	if !strings.Contains(body, "Kule is locked") {
		t.Fatalf("the app opened without its token: %q", body)
	}
	// Get the cookie, as the person's browser has it.
	step(t, ctx, shot, "open with the token", chromedp.Navigate(d.URL()), chromedp.WaitVisible(chromedp.CSS(`#btn-new`)))

	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><title>evil</title><script>
		const target = %q;
		(async () => {
		  const out = [];
		  try { await fetch(target + '/api/tasks', {method: 'POST', mode: 'no-cors', credentials: 'include', headers: {'Content-Type': 'text/plain'}, body: JSON.stringify({folder: %q})}); out.push('post sent'); } catch (e) { out.push('post failed'); }
		  try { const r = await fetch(target + '/api/tasks', {credentials: 'include'}); out.push('read ' + r.status + ' ' + (await r.text())); } catch (e) { out.push('read blocked'); }
		  document.title = 'done: ' + out.join(' | ');
		})();
		</script>`, "http://"+d.Addr(), folder)
	}))
	defer evil.Close()
	step(t, ctx, shot, "a page of another origin tries to drive the daemon", chromedp.Navigate(evil.URL))
	value(t, ctx, shot, "the page's fetches end", chromedp.Poll[bool](`document.title.startsWith('done')`))
	title := value(t, ctx, shot, "read the title", chromedp.Title())
	if strings.Contains(title, "read 200") {
		t.Fatalf("another origin read the task list: %s", title)
	}
	ts, err := d.k.Tasks()
	must(t, err)
	if len(ts) != 0 {
		t.Fatalf("another origin made a task: %+v (%s)", ts, title)
	}
	t.Logf("foreign page: %s", title)
}

// TestAppKeyboardAndSettings reorders tasks with Alt+↓ (kept in task.json),
// switches tasks with Alt+PageDown, rebinds the palette in Settings (kept in
// shortcuts.json) and picks the high-contrast theme.
func TestAppKeyboardAndSettings(t *testing.T) {
	ctx, shot := browser(t)
	d := startDaemon(t, Config{})
	var ids []string
	for range 2 {
		rep, err := d.k.NewTask(context.Background(), sampleFolder(t))
		must(t, err)
		ids = append(ids, rep.Task.ID)
		time.Sleep(2 * time.Millisecond)
	}
	step(t, ctx, shot, "open the app",
		chromedp.Navigate(d.URL()),
		clickOf(`#task-list li[data-id="`+ids[0]+`"]`),
		chromedp.WaitVisible(chromedp.CSS(`#taskview`)),
		chromedp.KeyEvent(kb.ArrowDown, chromedp.KeyModifiers(chromedp.ModifierAlt)),
		chromedp.WaitVisible(chromedp.CSS(`#task-list li:nth-child(2)[data-id="`+ids[0]+`"]`)))
	ts, err := d.k.Tasks()
	must(t, err)
	if ts[0].ID != ids[1] || ts[1].ID != ids[0] {
		t.Fatalf("order after Alt+Down: %s, %s; want %s first", ts[0].ID, ts[1].ID, ids[1])
	}
	step(t, ctx, shot, "Alt+PageDown to the next task",
		chromedp.KeyEvent(kb.PageDown, chromedp.KeyModifiers(chromedp.ModifierAlt)),
		chromedp.WaitVisible(chromedp.CSS(`#task-list li[aria-selected="true"][data-id="`+ids[1]+`"]`)))

	step(t, ctx, shot, "Shift+Enter adds a line, Enter runs both",
		chromedp.Click(chromedp.CSS(`#cmd`)),
		chromedp.SendKeys(chromedp.CSS(`#cmd`), "echo one"),
		chromedp.KeyEvent("\r", chromedp.KeyModifiers(chromedp.ModifierShift)),
		chromedp.SendKeys(chromedp.CSS(`#cmd`), "echo two"),
		chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(chromedp.CSS(`#live li.run[data-state="ended"]`)))
	out := value(t, ctx, shot, "read the output", textOf(`#live li.run .out`))
	left := value(t, ctx, shot, "read the command line", chromedp.Value(chromedp.CSS(`#cmd`)))
	if !strings.Contains(out, "one\ntwo") || left != "" {
		t.Fatalf("two lines gave output %q, command line left %q", out, left)
	}
	// Closing the window stops nothing; reopening it shows what ran.
	step(t, ctx, shot, "reopen the window",
		chromedp.Navigate("http://"+d.Addr()+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#live li.run.past .out`)))
	if again := value(t, ctx, shot, "read the run again", textOf(`#live li.run.past .out`)); !strings.Contains(again, "one\ntwo") {
		t.Fatalf("after reopening, Live shows %q", again)
	}
	step(t, ctx, shot, "rebind the palette to Mod+P in Settings",
		chromedp.Click(chromedp.CSS(`#btn-settings`)),
		chromedp.WaitVisible(chromedp.CSS(`#keys-body button[data-cmd="palette.open"]`)),
		chromedp.Click(chromedp.CSS(`#keys-body button[data-cmd="palette.open"]`)),
		chromedp.KeyEvent("p", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		void(chromedp.Poll[bool](`document.querySelector('#keys-body button[data-cmd="palette.open"]').textContent.includes('P')`)),
		chromedp.Click(chromedp.CSS(`input[name=theme][value=contrast]`)))
	waitFor(t, "shortcuts.json", func() bool {
		return strings.Contains(readFile(filepath.Join(d.home, "shortcuts.json")), `"palette.open": "Mod+P"`)
	})
	theme := value(t, ctx, shot, "theme", chromedp.Evaluate[string](`document.documentElement.dataset.theme`))
	if theme != "contrast" {
		t.Fatalf("theme %q, want contrast", theme)
	}
	step(t, ctx, shot, "the new key opens the palette",
		chromedp.Click(chromedp.CSS(`#dlg-settings button[value=close]`)),
		chromedp.KeyEvent("p", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		chromedp.WaitVisible(chromedp.CSS(`#pal-input`)))
}

// windowBehind puts the app's window behind others, with notifications
// allowed: a stand-in Notification records what the app tells, in
// window.__notes.
func windowBehind(t *testing.T, ctx context.Context, shot func(string)) {
	t.Helper()
	value(t, ctx, shot, "the window goes behind", chromedp.Evaluate[bool](`(() => {
		Object.defineProperty(document, 'hidden', { configurable: true, get: () => true });
		window.__notes = [];
		window.Notification = class { static permission = 'granted'; constructor(title, o) { window.__notes.push(title + ': ' + o.body); } };
		return true;
	})()`))
}

// A list of questions fetched just before a new question was asked must not
// hide it when it arrives after the question's event (answering one
// question refetches the list; an agent may ask the next at once). The page's
// fetch of the list is held until the new question is on screen, as a slow
// machine would hold it.
func TestAStaleQuestionListNeverHidesAWaitingOne(t *testing.T) {
	ctx, shot := browser(t)
	d := startDaemon(t, Config{})
	var qs Questions = d.Q
	ask := func(title string) {
		go qs.Ask(context.Background(), Question{Task: "feedface", Kind: "permission", Title: title, Subject: "terminal"})
	}
	step(t, ctx, shot, "open the app", chromedp.Navigate(d.URL()), chromedp.WaitVisible(chromedp.CSS(`#btn-new`)))
	ask("Let the agent run make?")
	step(t, ctx, shot, "see the first question", chromedp.WaitVisible(chromedp.CSS(`#needs li[data-question] button.primary`)))
	step(t, ctx, shot, "hold the list's next fetch", void(chromedp.Evaluate[bool](`(() => {
		window.__held = 0;
		window.__hold = new Promise((r) => { window.__release = r; });
		const real = window.fetch;
		window.fetch = async (url, opt) => {
			const r = await real(url, opt);
			if (String(url) === '/api/questions' && (!opt || opt.method === 'GET')) {
				const body = await r.text();
				window.__held++;
				await window.__hold;
				return new Response(body, { status: r.status, headers: r.headers });
			}
			return r;
		};
		return true;
	})()`)))
	step(t, ctx, shot, "approve the first", clickOf(`#needs li[data-question] button.primary`))
	step(t, ctx, shot, "the list is fetched and held", void(chromedp.Poll[bool](`window.__held > 0`)))
	ask("Let the agent run make install?")
	step(t, ctx, shot, "see the second question", void(chromedp.Poll[bool](`(document.querySelector('#needs-list') || {}).innerText.includes('make install')`)))
	step(t, ctx, shot, "let the held list arrive", void(chromedp.Evaluate[bool](`(window.__release(), true)`)))
	// The held list (from before the second question) has arrived by now,
	// and any fetch made after it too.
	step(t, ctx, shot, "the lists settle", void(chromedp.Poll[bool](`new Promise((r) => setTimeout(() => r(true), 500))`)))
	if got := value(t, ctx, shot, "what Needs you shows", textOf(`#needs-list`)); !strings.Contains(got, "make install") ||
		value(t, ctx, shot, "whether Needs you is shown", chromedp.Evaluate[bool](`!document.querySelector('#needs').hidden`)) == false {
		shot("second-question-hidden")
		t.Fatalf("the stale list hid the waiting question; Needs you shows %q", got)
	}
}
