package daemon

import (
	"context"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// linkServer is where a terminal's links point: it says which paths a window opened.
type linkServer struct {
	*httptest.Server
	mu   sync.Mutex
	seen map[string]bool
}

func newLinkServer(t *testing.T) *linkServer {
	s := &linkServer{seen: map[string]bool{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen[r.URL.Path] = true
		s.mu.Unlock()
		w.Write([]byte("opened"))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *linkServer) opened(path string) bool { s.mu.Lock(); defer s.mu.Unlock(); return s.seen[path] }

// termLinks opens a terminal in a task whose folder holds links.txt (the links the test
// prints) and prints it from the top of the screen: the web URL on the first row, a
// javascript: OSC 8 hyperlink on the second, a file: one on the third.
func termLinks(t *testing.T, ctx context.Context, shot func(string), d *Daemon, srv *linkServer) {
	t.Helper()
	folder := sampleFolder(t)
	links := srv.URL + "/opened-by-ctrl-click\n" +
		"\x1b]8;;javascript:location.href='" + srv.URL + "/the-script-ran'\x1b\\JS-LINK-HERE\x1b]8;;\x1b\\\n" +
		"\x1b]8;;file:///etc/hostname\x1b\\FILE-LINK-HERE\x1b]8;;\x1b\\\n"
	must(t, os.WriteFile(filepath.Join(folder, "links.txt"), []byte(links), 0o644))
	rep, err := d.k.NewTask(context.Background(), folder)
	must(t, err)
	step(t, ctx, shot, "a terminal prints the links",
		recordOpens,
		chromedp.Navigate(d.URL()),
		clickOf(`#task-list li[data-id="`+rep.Task.ID+`"]`),
		chromedp.WaitVisible(chromedp.CSS(`#taskview`)),
		chromedp.KeyEvent("`", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		clickOf(`#btn-new-terminal`),
		void(chromedp.Poll[bool](`document.activeElement && document.activeElement.classList.contains('xterm-helper-textarea')`)),
		chromedp.SendKeys(chromedp.CSS(`#v-terminal .term:not([hidden]) .xterm-helper-textarea`), "clear; cat links.txt\r"),
		void(chromedp.Poll[bool](`(() => { const rows = document.querySelector('#v-terminal .term:not([hidden]) .xterm-accessibility-tree')?.children; return !!rows && rows[0]?.textContent.includes('opened-by-ctrl-click') && rows[1]?.textContent.includes('JS-LINK-HERE') && rows[2]?.textContent.includes('FILE-LINK-HERE') })()`)))
}

// recordOpens keeps, in window.__opened, every URL the page hands window.open: what the page
// opens, whether or not the browser then shows it.
var recordOpens chromedp.Action[chromedp.Void] = func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
	_, err := cdp.Call(ctx, t, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
		Source: `(() => { const open = window.open; window.__opened = []; window.open = function (...a) { window.__opened.push(String(a[0])); return open.apply(this, a); }; })()`,
	})
	return chromedp.Void{}, err
}

// clickRow moves the mouse onto the start of a terminal row until the link there is hovered,
// then clicks it, with Ctrl held when ctrl is set, as a person's mouse does.
func clickRow(t *testing.T, ctx context.Context, shot func(string), what string, row int, ctrl bool) {
	t.Helper()
	xy := value(t, ctx, shot, what+": where the row is", chromedp.Evaluate[[]float64](`(() => {
		const term = document.querySelector('#v-terminal .term:not([hidden])');
		const r = term.querySelector('.xterm-screen').getBoundingClientRect(), n = term.querySelector('.xterm-accessibility-tree').children.length;
		return [r.left + 20, r.top + (`+strconv.Itoa(row)+` + 0.5) * r.height / n];
	})()`))
	var mods []chromedp.Modifier
	if ctrl {
		mods = append(mods, chromedp.ModifierCtrl)
	}
	held := func(p *input.DispatchMouseEventParams) { p.Button = input.MouseButtonLeft; p.Buttons = 1 }
	step(t, ctx, shot, what,
		chromedp.MouseEvent(chromedp.MouseMoved, xy[0]-6, xy[1], chromedp.ButtonModifiers(mods...)),
		chromedp.MouseEvent(chromedp.MouseMoved, xy[0], xy[1], chromedp.ButtonModifiers(mods...)),
		void(chromedp.Poll[bool](`document.querySelector('#v-terminal .term:not([hidden])').title.includes('click to open')`)),
		chromedp.MouseEvent(chromedp.MousePressed, xy[0], xy[1], held, chromedp.ClickCount(1), chromedp.ButtonModifiers(mods...)),
		chromedp.MouseEvent(chromedp.MouseReleased, xy[0], xy[1], held, chromedp.ClickCount(1), chromedp.ButtonModifiers(mods...)))
}

const toastsText = `[...document.querySelectorAll('#toasts .toast')].map((x) => x.innerText).join('\n')`

// TestAppTerminalLinks: a URL a command prints in a terminal opens in a new window on
// Ctrl+click and not on a plain click, which says what opens it instead; a javascript: or
// file: link the command prints (an OSC 8 hyperlink) is not opened, and the page says why.
// With the http(s) check taken out of the page, the same Ctrl+clicks open both: the page
// hands them to window.open. (This Chromium then drops them itself, as it does any
// javascript: or file: URL for a window opened with noopener, so the test watches what the
// page opens rather than for the link's script to run.)
func TestAppTerminalLinks(t *testing.T) {
	t.Setenv("SHELL", "/bin/bash")
	t.Setenv("HOME", t.TempDir())
	ctx, shot := browser(t)
	srv := newLinkServer(t)
	d := startDaemon(t, Config{})
	termLinks(t, ctx, shot, d, srv)

	clickRow(t, ctx, shot, "a plain click on the web link", 0, false)
	step(t, ctx, shot, "it says Ctrl+click opens the link",
		void(chromedp.Poll[bool](toastsText+`.includes('Ctrl+click opens the link')`)))
	clickRow(t, ctx, shot, "Ctrl+click on the web link", 0, true)
	waitFor(t, "the web link opened in a new window", func() bool { return srv.opened("/opened-by-ctrl-click") })

	clickRow(t, ctx, shot, "Ctrl+click on the javascript: link", 1, true)
	step(t, ctx, shot, "the javascript: link is not opened, in words",
		void(chromedp.Poll[bool](toastsText+`.includes('Not opened') && `+toastsText+`.includes('javascript:')`)))
	clickRow(t, ctx, shot, "Ctrl+click on the file: link", 2, true)
	step(t, ctx, shot, "the file: link is not opened, in words",
		void(chromedp.Poll[bool](toastsText+`.includes('file:///etc/hostname')`)))
	if got := value(t, ctx, shot, "what the page opened", chromedp.Evaluate[[]string](`window.__opened`)); len(got) != 1 || got[0] != srv.URL+"/opened-by-ctrl-click" {
		t.Fatalf("the page opened %q, want the web link alone", got)
	}
	// Only the web link's window was opened.
	ts, err := chromedp.Targets(ctx)
	must(t, err)
	pages := 0
	for _, x := range ts {
		if x.Type == "page" {
			pages++
			if strings.HasPrefix(x.URL, "file:") || strings.HasPrefix(x.URL, "javascript:") {
				t.Fatalf("a window opened on %s", x.URL)
			}
		}
	}
	if pages != 2 {
		t.Fatalf("%d windows, want the app's and the web link's", pages)
	}

	t.Run("without the guard", func(t *testing.T) {
		js := readWeb(t, "terminal.js")
		const guard = "const url = linkToOpen(uri);"
		if !strings.Contains(js, guard) {
			t.Fatalf("terminal.js no longer has %q: this test takes it out", guard)
		}
		files := fstest.MapFS{}
		must(t, fs.WalkDir(webFiles(), ".", func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			b, err := fs.ReadFile(webFiles(), p)
			files[p] = &fstest.MapFile{Data: b, Mode: 0o644}
			return err
		}))
		files["terminal.js"] = &fstest.MapFile{Data: []byte(strings.Replace(js, guard, "const url = uri;", 1)), Mode: 0o644}
		was := webFiles
		webFiles = func() fs.FS { return files }
		t.Cleanup(func() { webFiles = was })
		ctx, shot := browser(t)
		d := startDaemon(t, Config{})
		termLinks(t, ctx, shot, d, srv)
		clickRow(t, ctx, shot, "Ctrl+click on the javascript: link", 1, true)
		clickRow(t, ctx, shot, "Ctrl+click on the file: link", 2, true)
		step(t, ctx, shot, "the page opens both (the attack works)",
			void(chromedp.Poll[bool](`window.__opened.some((u) => u.startsWith('javascript:location.href=')) && window.__opened.includes('file:///etc/hostname')`)))
	})
}
func readWeb(t *testing.T, name string) string {
	t.Helper()
	b, err := fs.ReadFile(webFiles(), name)
	must(t, err)
	return string(b)
}
