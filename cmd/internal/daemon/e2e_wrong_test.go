package daemon

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/hashicorp/go-hclog"

	"github.com/kulehq/kule/kernel"
)

// browserReserved are the combos a real browser window keeps for itself (Chromium's reserved
// accelerators: tabs, windows, quitting) or that the desktop takes before the browser sees
// them. Written here apart from the app's own list, so that a default the app thinks free is
// still caught. CDP hands every key to the page; a real window does not hand these.
var browserReserved = []string{
	"Mod+W", "Mod+Shift+W", "Mod+T", "Mod+Shift+T", "Mod+N", "Mod+Shift+N", "Mod+Q", "Mod+Shift+Q",
	"Ctrl+Tab", "Ctrl+Shift+Tab", "Mod+PageUp", "Mod+PageDown", "Alt+F4", "Alt+Tab", "F11",
	"Mod+Alt+T", "Mod+Shift+U", "Mod+Alt+ArrowUp", "Mod+Alt+ArrowDown", "Ctrl+Space",
}

// recordFetches makes the page note every request it starts, as "METHOD path", in
// window.__calls: a command that fires sends its request at once, inside the key's handler.
const recordFetches = `(() => {
	window.__calls = [];
	const real = window.fetch;
	window.fetch = (url, opt) => { window.__calls.push(((opt && opt.method) || 'GET') + ' ' + String(url)); return real(url, opt); };
	return true;
})()`

func calls(t *testing.T, ctx context.Context, shot func(string)) []string {
	t.Helper()
	return value(t, ctx, shot, "read the page's requests", chromedp.Evaluate[[]string](`window.__calls.splice(0)`))
}

// TestAppKeysInTextFieldsDefaultsAndReservedCombos: inside the command line, Ctrl+Shift+Z
// (Redo there), Ctrl+Shift+Enter and Alt+↓ do nothing to the task; outside it Ctrl+Shift+Z asks
// before it undoes a commit and lists what goes back; no default shortcut is a combo a browser
// keeps; the shortcut editor refuses Ctrl+W and says which command a key is taken from.
func TestAppKeysInTextFieldsDefaultsAndReservedCombos(t *testing.T) {
	ctx, shot := browser(t)
	d := startDaemon(t, Config{})
	folder := sampleFolder(t)
	rep, err := d.k.NewTask(context.Background(), folder)
	must(t, err)
	id := rep.Task.ID
	must(t, os.WriteFile(filepath.Join(rep.Task.Paths.Copy, "README.md"), []byte("# Project\n\nCommitted.\n"), 0o644))
	_, err = d.k.Commit(context.Background(), rep.Task, kernel.CommitOptions{})
	must(t, err)
	must(t, os.WriteFile(filepath.Join(rep.Task.Paths.Copy, "notes", "plan.md"), []byte("# Plan\n\nMore.\n"), 0o644))

	step(t, ctx, shot, "open the app on the task",
		chromedp.Navigate(d.URL()),
		clickOf(`#task-list li[data-id="`+id+`"]`),
		chromedp.WaitVisible(chromedp.CSS(`#taskview`)),
		void(chromedp.Evaluate[bool](recordFetches)))

	step(t, ctx, shot, "task keys typed in the command line",
		chromedp.Click(chromedp.CSS(`#cmd`)),
		chromedp.SendKeys(chromedp.CSS(`#cmd`), "echo hi"),
		chromedp.KeyEvent("z", chromedp.KeyModifiers(chromedp.ModifierCtrl, chromedp.ModifierShift)),
		chromedp.KeyEvent("\r", chromedp.KeyModifiers(chromedp.ModifierCtrl, chromedp.ModifierShift)),
		chromedp.KeyEvent(kb.ArrowDown, chromedp.KeyModifiers(chromedp.ModifierAlt)))
	for _, c := range calls(t, ctx, shot) {
		if strings.Contains(c, "/undo") || strings.Contains(c, "/commit") || strings.Contains(c, "/move") || strings.Contains(c, "/history") {
			t.Fatalf("a key pressed in the command line reached the task: %s", c)
		}
	}
	if open := value(t, ctx, shot, "no dialog", chromedp.Evaluate[bool](`document.querySelector('dialog[open]') !== null`)); open {
		t.Fatal("a key pressed in the command line opened a dialog")
	}
	if !strings.Contains(readFile(filepath.Join(folder, "README.md")), "Committed.") {
		t.Fatal("the commit was undone from inside a text field")
	}

	step(t, ctx, shot, "Ctrl+Shift+Z outside a field asks first",
		chromedp.Click(chromedp.CSS(`#t-name`)),
		chromedp.KeyEvent("z", chromedp.KeyModifiers(chromedp.ModifierCtrl, chromedp.ModifierShift)),
		chromedp.WaitVisible(chromedp.CSS(`#dlg-confirm #confirm-ok`)))
	asked := value(t, ctx, shot, "read the question", textOf(`#dlg-confirm`))
	if !strings.Contains(asked, "Undo checkpoint 1") || !strings.Contains(asked, "README.md (changed)") {
		t.Fatalf("the undo asks %q; want the checkpoint and README.md (changed)", asked)
	}
	step(t, ctx, shot, "cancel keeps the commit",
		chromedp.Click(chromedp.CSS(`#dlg-confirm button[value=cancel]`)),
		chromedp.WaitNotVisible(chromedp.CSS(`#dlg-confirm`)))
	for _, c := range calls(t, ctx, shot) {
		if strings.HasPrefix(c, "POST") && strings.Contains(c, "/undo") {
			t.Fatalf("Cancel undid the commit: %s", c)
		}
	}
	step(t, ctx, shot, "confirm undoes it",
		chromedp.KeyEvent("z", chromedp.KeyModifiers(chromedp.ModifierCtrl, chromedp.ModifierShift)),
		chromedp.WaitVisible(chromedp.CSS(`#dlg-confirm #confirm-ok`)),
		chromedp.Click(chromedp.CSS(`#confirm-ok`)),
		void(chromedp.Poll[bool](`document.getElementById('toasts').innerText.includes('Undid checkpoint 1')`)))
	if strings.Contains(readFile(filepath.Join(folder, "README.md")), "Committed.") {
		t.Fatal("the confirmed undo left the commit in the folder")
	}

	// Every default: none is a combo the browser keeps.
	step(t, ctx, shot, "open Settings",
		chromedp.Click(chromedp.CSS(`#btn-settings`)),
		chromedp.WaitVisible(chromedp.CSS(`#keys-body button[data-cmd="palette.open"]`)))
	labels := value(t, ctx, shot, "read the shortcuts", chromedp.Evaluate[[]string](`[...document.querySelectorAll('#keys-body button')].map((b) => b.dataset.cmd + '=' + b.getAttribute('aria-label'))`))
	keyRe := regexp.MustCompile(`: ([^ ]+)\. Press to change`)
	seen := 0
	for _, l := range labels {
		m := keyRe.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("shortcut row %q does not say its key", l)
		}
		for _, r := range browserReserved {
			if m[1] == r {
				t.Errorf("the default of %s is %s, which a browser keeps for itself", strings.SplitN(l, "=", 2)[0], r)
			}
		}
		seen++
	}
	if seen < 10 {
		t.Fatalf("only %d shortcuts listed", seen)
	}
	if strings.Contains(strings.Join(labels, "\n"), "question.deny=Shortcut for Deny the waiting question: none") {
		t.Fatal("Deny has no key")
	}

	before := readFile(filepath.Join(d.home, "shortcuts.json"))
	step(t, ctx, shot, "Ctrl+W is refused",
		chromedp.Click(chromedp.CSS(`#keys-body button[data-cmd="palette.open"]`)),
		chromedp.KeyEvent("w", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		void(chromedp.Poll[bool](`document.getElementById('keys-note').innerText.includes('not free')`)))
	note := value(t, ctx, shot, "read the note", textOf(`#keys-note`))
	if !strings.Contains(note, "closes the tab") {
		t.Fatalf("the refusal says %q; want why (it closes the tab)", note)
	}
	for _, c := range calls(t, ctx, shot) {
		if strings.HasPrefix(c, "PUT /api/shortcuts") {
			t.Fatal("a reserved combo was saved")
		}
	}
	if readFile(filepath.Join(d.home, "shortcuts.json")) != before {
		t.Fatal("shortcuts.json changed for a reserved combo")
	}
	step(t, ctx, shot, "taking Mod+K for Settings says whose it was",
		chromedp.Click(chromedp.CSS(`#keys-body button[data-cmd="settings.open"]`)),
		chromedp.KeyEvent("k", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		void(chromedp.Poll[bool](`document.getElementById('keys-note').innerText.includes('now runs')`)))
	note = value(t, ctx, shot, "read the note", textOf(`#keys-note`))
	if !strings.Contains(note, "Settings") || !strings.Contains(note, "It was the key of Find a command") {
		t.Fatalf("rebinding says %q; want what it took from which command", note)
	}
}

// TestAppSaysItLostTheDaemon stops the daemon under an open page: the page says so, every
// action is disabled, another task does not open under a stale Review, and when a daemon
// answers again at the address with a new token the page says to run `kule app` instead of
// retrying forever.
func TestAppSaysItLostTheDaemon(t *testing.T) {
	ctx, shot := browser(t)
	k := newKernel(t)
	var ids []string
	for range 2 {
		rep, err := k.NewTask(context.Background(), sampleFolder(t))
		must(t, err)
		ids = append(ids, rep.Task.ID)
		must(t, os.WriteFile(filepath.Join(rep.Task.Paths.Copy, "new.txt"), []byte("new\n"), 0o644))
	}
	d, err := Start(Config{Kernel: k, Log: hclog.NewNullLogger(), Idle: -1})
	must(t, err)
	sctx, stop := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { d.Serve(sctx); close(served) }()
	defer func() { stop(); <-served }()

	step(t, ctx, shot, "open the Review of the first task",
		chromedp.Navigate(d.URL()),
		clickOf(`#task-list li[data-id="`+ids[0]+`"]`),
		chromedp.KeyEvent("2", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		chromedp.WaitVisible(chromedp.CSS(`#changes li[data-path="new.txt"]`)),
		void(chromedp.Poll[bool](`!document.getElementById('btn-commit').disabled`)))
	addr := d.Addr()
	stop()
	<-served

	step(t, ctx, shot, "the page says it lost the daemon",
		chromedp.WaitVisible(chromedp.CSS(`#offline`)))
	said := value(t, ctx, shot, "read the notice", textOf(`#offline`))
	if !strings.Contains(said, "lost the daemon") {
		t.Fatalf("the notice says %q", said)
	}
	enabled := value(t, ctx, shot, "enabled controls", chromedp.Evaluate[[]string](`[...document.querySelectorAll('#app button, #app input, #app textarea, #app select')].filter((e) => !e.disabled && e.offsetParent !== null).map((e) => e.id || e.outerHTML.slice(0, 60))`))
	if len(enabled) > 0 {
		t.Fatalf("controls still enabled without the daemon: %v", enabled)
	}
	step(t, ctx, shot, "click the other task", void(chromedp.Evaluate[bool](`(document.querySelector('#task-list li[data-id="`+ids[1]+`"]').click(), true)`)))
	header := value(t, ctx, shot, "read the header", textOf(`#t-folder`))
	commitOn := value(t, ctx, shot, "commit state", chromedp.Evaluate[bool](`!document.getElementById('btn-commit').disabled`))
	if strings.Contains(header, ids[1]) || commitOn {
		t.Fatalf("without the daemon the page opened %q with Commit enabled=%v", header, commitOn)
	}

	// A daemon again at the same address: its token is new, the page's cookie is not.
	k2, err := kernel.New(kernel.Config{Home: k.Home()})
	must(t, err)
	d2, err := Start(Config{Kernel: k2, Log: hclog.NewNullLogger(), Idle: -1, HTTPAddr: addr})
	must(t, err)
	s2ctx, stop2 := context.WithCancel(context.Background())
	served2 := make(chan struct{})
	go func() { d2.Serve(s2ctx); close(served2) }()
	defer func() { stop2(); <-served2 }()
	step(t, ctx, shot, "the page says to run kule app",
		void(chromedp.Poll[bool](`document.getElementById('offline-text').innerText.includes('started again')`)))
	said = value(t, ctx, shot, "read the notice", textOf(`#offline`))
	if !strings.Contains(said, "kule app") {
		t.Fatalf("the notice says %q; want it to say to run kule app", said)
	}
}

// TestAppRowsTimelineAndLiveSayWhatIs: a running task's row counts its changes; a connection
// whose DNS lookup failed is not "Connected"; a step that changed nothing is not "not
// committed"; an output card whose run's start this page missed ends with the run; "Approve
// and remember" shows only on rows that can be remembered.
func TestAppRowsTimelineAndLiveSayWhatIs(t *testing.T) {
	ctx, shot := browser(t)
	d := startDaemon(t, Config{})
	rep, err := d.k.NewTask(context.Background(), sampleFolder(t))
	must(t, err)
	tk := rep.Task
	if _, err := d.Exec(context.Background(), tk, []string{"sh", "-c", "echo a > a.txt"}, "make a"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Exec(context.Background(), tk, []string{"true"}, "look around"); err != nil {
		t.Fatal(err)
	}
	must(t, os.WriteFile(filepath.Join(tk.Paths.Dir, "network.jsonl"),
		[]byte(`{"time":"`+time.Now().UTC().Format(time.RFC3339Nano)+`","host":"nowhere.invalid","port":443,"verdict":"pass","rule":"","bytes_up":0,"bytes_down":0,"error":"dial tcp: lookup nowhere.invalid: no such host"}`+"\n"), 0o600))

	step(t, ctx, shot, "open the Timeline",
		chromedp.Navigate(d.URL()),
		clickOf(`#task-list li[data-id="`+tk.ID+`"]`),
		chromedp.KeyEvent("3", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		void(chromedp.Poll[bool](`document.getElementById('timeline').innerText.includes('nowhere.invalid')`)))
	tl := value(t, ctx, shot, "read the Timeline", textOf(`#timeline`))
	if strings.Contains(tl, "Connected to nowhere.invalid") || !strings.Contains(tl, "Could not connect to nowhere.invalid:443") || !strings.Contains(tl, "DNS") {
		t.Fatalf("the failed lookup reads:\n%s", tl)
	}
	marks := value(t, ctx, shot, "read the marks", chromedp.Evaluate[[]string](`[...document.querySelectorAll('#timeline li')].filter((li) => li.querySelector('.uncommitted')).map((li) => li.querySelector('.what').innerText)`))
	if len(marks) != 1 || !strings.HasPrefix(marks[0], "Ran make a") {
		t.Fatalf("marked not committed: %q; want only the step that changed something", marks)
	}

	// A run the page did not see start: its output, then its end.
	step(t, ctx, shot, "show Live", chromedp.KeyEvent("1", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		chromedp.WaitVisible(chromedp.CSS(`#live li.run.past`)))
	d.Bus.Publish("output", tk.ID, map[string]any{"text": "hello from a run\n"})
	step(t, ctx, shot, "the output shows", chromedp.WaitVisible(chromedp.CSS(`#live li.run[data-state="running"]`)))
	d.Bus.Publish("run", tk.ID, map[string]any{"state": "end", "command": "make b", "code": 0})
	step(t, ctx, shot, "the card ends", chromedp.WaitNotPresent(chromedp.CSS(`#live li.run[data-state="running"]`)))

	// A running task's row counts what it changed so far.
	_, cancel := context.WithCancel(context.Background())
	defer cancel()
	if !d.runs.start(tk.ID, cancel) {
		t.Fatal("the task is busy")
	}
	must(t, os.WriteFile(filepath.Join(tk.Paths.Copy, "b.txt"), []byte("b\n"), 0o644))
	d.Bus.Publish("task", tk.ID, map[string]any{"action": "edit"})
	step(t, ctx, shot, "the running row counts its changes",
		void(chromedp.Poll[bool](`(document.querySelector('#task-list li[data-id="`+tk.ID+`"] .ts') || {}).innerText.includes('2 added')`)))
	d.runs.end(tk.ID)

	// A link asks and is never remembered; go.mod asks and may be.
	must(t, os.WriteFile(filepath.Join(tk.Paths.Copy, "go.mod"), []byte("module x\n"), 0o644))
	must(t, os.Symlink("README.md", filepath.Join(tk.Paths.Copy, "readme-link")))
	d.Bus.Publish("task", tk.ID, map[string]any{"action": "edit"})
	step(t, ctx, shot, "Review shows both",
		chromedp.KeyEvent("2", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		chromedp.WaitVisible(chromedp.CSS(`#changes li[data-path="readme-link"] .verdict.ask`)),
		chromedp.WaitVisible(chromedp.CSS(`#changes li[data-path="go.mod"] .verdict.ask`)))
	both := value(t, ctx, shot, "remember buttons", chromedp.Evaluate[[]bool](`['go.mod', 'readme-link'].map((p) => !!document.querySelector('#changes li[data-path="' + p + '"] button[aria-label$="and remember"]'))`))
	if !both[0] || both[1] {
		t.Fatalf("Approve and remember on go.mod=%v, on the link=%v; want only on go.mod", both[0], both[1])
	}
	if cls := value(t, ctx, shot, "row class", chromedp.Evaluate[string](`document.querySelector('#changes li[data-path="go.mod"]').className`)); cls != "waits" {
		t.Fatalf("a row waiting for a decision has class %q; want waits (not held)", cls)
	}
}
