package daemon

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestAppTerminalPanel opens the Terminal panel with Ctrl+`, starts a shell in the task's copy
// (a pty in the daemon, drawn by xterm.js), types a command whose output shows and whose file
// lands in the copy (not the folder), finds text in the scrollback, keeps Ctrl+L for the shell,
// opens a second tab and closes it, and finds the shell again after a reload.
func TestAppTerminalPanel(t *testing.T) {
	// The shells are bash with a home of their own, so no ~/.bashrc of this machine's (pyenv,
	// say) runs: it is not what these tests check, and one that hangs would hang them.
	t.Setenv("SHELL", "/bin/bash")
	t.Setenv("HOME", t.TempDir())
	ctx, shot := browser(t)
	d := startDaemon(t, Config{})
	folder := sampleFolder(t)
	rep, err := d.k.NewTask(context.Background(), folder)
	must(t, err)
	id := rep.Task.ID

	step(t, ctx, shot, "open the Terminal panel",
		chromedp.Navigate(d.URL()),
		clickOf(`#task-list li[data-id="`+id+`"]`),
		chromedp.WaitVisible(chromedp.CSS(`#taskview`)),
		chromedp.KeyEvent("`", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		chromedp.WaitVisible(chromedp.CSS(`#btn-new-terminal`)),
		chromedp.Click(chromedp.CSS(`#btn-new-terminal`)),
		chromedp.WaitVisible(chromedp.CSS(`#v-terminal .term:not([hidden]) .xterm`)),
		void(chromedp.Poll[bool](`document.activeElement && document.activeElement.classList.contains('xterm-helper-textarea')`)))
	step(t, ctx, shot, "type a command",
		chromedp.SendKeys(chromedp.CSS(`#v-terminal .term:not([hidden]) .xterm-helper-textarea`), "echo kule-$((6*7)) | tee from-term.txt\r"),
		void(chromedp.Poll[bool](`(document.querySelector('#v-terminal .term:not([hidden]) .xterm-accessibility-tree') || {}).innerText?.split('\n').some((l) => l.trim() === 'kule-42')`)))
	waitFor(t, "the file the shell wrote", func() bool {
		return strings.TrimSpace(readFile(filepath.Join(rep.Task.Paths.Copy, "from-term.txt"))) == "kule-42"
	})
	if _, err := os.Stat(filepath.Join(folder, "from-term.txt")); err == nil {
		t.Fatal("the terminal wrote into the folder, not the copy")
	}
	step(t, ctx, shot, "find in the terminal",
		chromedp.KeyEvent("f", chromedp.KeyModifiers(chromedp.ModifierCtrl, chromedp.ModifierShift)),
		void(chromedp.Poll[bool](`document.activeElement && document.activeElement.classList.contains('tfind-input')`)),
		chromedp.SendKeys(chromedp.CSS(`.tfind-input`), "kule-"))
	// A task event redraws the panels while the person types in Find: the
	// terminal does not take the focus from the field (it once did, and the
	// rest of what was typed went to the shell).
	d.Bus.Publish("task", id, map[string]any{"action": "changed"})
	if got := value(t, ctx, shot, "a task event while Find has the focus", chromedp.Evaluate[string](`new Promise((r) => setTimeout(() => requestAnimationFrame(() => requestAnimationFrame(() => r(document.activeElement.className))), 1000))`, chromedp.EvalAwaitPromise)); !strings.Contains(got, "tfind-input") {
		t.Fatalf("after a task event the focus is on %q, not Find", got)
	}
	step(t, ctx, shot, "find it",
		chromedp.KeyEvent("\r"),
		void(chromedp.Poll[bool](`document.getElementById('tfind-state').innerText === 'found'`)),
		chromedp.SendKeys(chromedp.CSS(`.tfind-input`), "nowhere-to-be-seen"),
		chromedp.KeyEvent("\r"),
		void(chromedp.Poll[bool](`document.getElementById('tfind-state').innerText === 'not found'`)))

	step(t, ctx, shot, "Ctrl+L stays the shell's",
		chromedp.KeyEvent("\x1b"),
		void(chromedp.Poll[bool](`document.activeElement && document.activeElement.classList.contains('xterm-helper-textarea')`)),
		chromedp.KeyEvent("l", chromedp.KeyModifiers(chromedp.ModifierCtrl)))
	if in := value(t, ctx, shot, "focus stays in the terminal", chromedp.Evaluate[bool](`!!document.activeElement.closest('.xterm')`)); !in {
		t.Fatal("Ctrl+L in the terminal moved the focus to the command line")
	}
	step(t, ctx, shot, "type after the screen was cleared",
		chromedp.SendKeys(chromedp.CSS(`#v-terminal .term:not([hidden]) .xterm-helper-textarea`), "echo after-clear-$((1+1))\r"),
		void(chromedp.Poll[bool](`(document.querySelector('#v-terminal .term:not([hidden]) .xterm-accessibility-tree') || {}).innerText?.split('\n').some((l) => l.trim() === 'after-clear-2')`)))
	step(t, ctx, shot, "a second terminal, then close it",
		chromedp.Click(chromedp.CSS(`#btn-new-terminal`)),
		void(chromedp.Poll[bool](`document.querySelectorAll('#v-terminal .ttab').length === 2`)),
		clickOf(`#v-terminal .ttabwrap:nth-child(2) .tclose`),
		void(chromedp.Poll[bool](`document.querySelectorAll('#v-terminal .ttab').length === 1`)))
	d.terms().mu.Lock()
	open := len(d.terms().m)
	d.terms().mu.Unlock()
	if open != 1 {
		t.Fatalf("%d shells run after closing one of two", open)
	}

	step(t, ctx, shot, "after a reload the shell is there with what it wrote",
		chromedp.Navigate("http://"+d.Addr()+"/"),
		clickOf(`#task-list li[data-id="`+id+`"]`),
		chromedp.WaitVisible(chromedp.CSS(`#taskview`)),
		// The bottom panel was showing the Terminal when the page went: layout.json keeps it so.
		void(chromedp.Poll[bool](`!document.getElementById('r-bottom').hidden && document.querySelectorAll('#r-bottom #v-terminal:not([hidden]) .ttab').length === 1`)),
		void(chromedp.Poll[bool](`(document.querySelector('#v-terminal .term:not([hidden]) .xterm-accessibility-tree') || {}).innerText?.includes('after-clear-2')`)))
	checkNames(t, ctx, shot, "the Terminal panel")
}

// TestTerminalNeedsTheToken: a shell runs outside the sandbox, so only the page that holds
// this daemon's token may open one. Without it, or from another origin, the request is
// refused and no shell starts; the same request with the token and the daemon's own origin
// starts one (the attack works where the guard is not in the way).
func TestTerminalNeedsTheToken(t *testing.T) {
	d := startDaemon(t, Config{})
	rep, err := d.k.NewTask(context.Background(), sampleFolder(t))
	must(t, err)
	post := func(origin, token string) int {
		req, err := http.NewRequest("POST", "http://"+d.Addr()+"/api/tasks/"+rep.Task.ID+"/terminals", strings.NewReader(`{"cols":80,"rows":24}`))
		must(t, err)
		req.Header.Set("Content-Type", "application/json")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if token != "" {
			req.AddCookie(&http.Cookie{Name: cookieName, Value: token})
		}
		res, err := http.DefaultClient.Do(req)
		must(t, err)
		res.Body.Close()
		return res.StatusCode
	}
	shells := func() int { d.terms().mu.Lock(); defer d.terms().mu.Unlock(); return len(d.terms().m) }
	if code := post("", ""); code != http.StatusUnauthorized || shells() != 0 {
		t.Fatalf("without the token: %d, %d shells", code, shells())
	}
	if code := post("http://evil.example", d.Token()); code != http.StatusForbidden || shells() != 0 {
		t.Fatalf("from another origin: %d, %d shells", code, shells())
	}
	if code := post("http://"+d.Addr(), d.Token()); code != http.StatusCreated || shells() != 1 {
		t.Fatalf("with the token from the app's origin: %d, %d shells; the guard is what refused the others", code, shells())
	}
}
