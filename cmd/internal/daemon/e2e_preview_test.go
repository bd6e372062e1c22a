package daemon

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kulehq/kule/kernel"
)

// previewHost is a plugin host whose built-in previewers are a kule-plugins
// binary built for the test, each run out of process in its sandbox as
// kule daemon runs them (the daemon's tests cannot import plugins/).
func previewHost(t *testing.T, home string) Previews {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "kule-plugins")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/kulehq/kule/cmd/kule-plugins")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build kule: %v\n%s", err, out)
	}
	ext := func(exts ...string) func(string) bool {
		return func(p string) bool {
			for _, e := range exts {
				if strings.HasSuffix(p, e) {
					return true
				}
			}
			return false
		}
	}
	h := kernel.NewPluginHost(home, kernel.PluginHostOptions{Self: bin, Sandbox: &kernel.Sandbox{Exe: bin}, Builtins: []kernel.BuiltinPlugin{
		{Kind: "previewer", Name: "markdown", Accepts: ext(".md")},
		{Kind: "previewer", Name: "csv", Accepts: ext(".csv")},
		{Kind: "previewer", Name: "text", Accepts: ext(".txt")},
		{Kind: "previewer", Name: "image", Accepts: ext(".png")},
	}})
	t.Cleanup(h.Close)
	return func() (*kernel.PluginHost, func()) { return h, func() {} }
}

// TestAppPreviewAndAsk: picking a file in Files opens it in the Preview
// panel, drawn from its previewer's model; dragging over cells names them,
// Mod+Shift+A opens Ask with that place as a chip, and Ask now composes the
// prompt the agent gets, with the cells' values; a binary named .txt says
// it cannot be previewed and the app goes on.
func TestAppPreviewAndAsk(t *testing.T) {
	ctx, shot := browser(t)
	k := newKernel(t)
	d := startDaemon(t, Config{Kernel: k, Previews: previewHost(t, k.Home())})
	folder := filepath.Join(t.TempDir(), "folder")
	must(t, os.MkdirAll(folder, 0o755))
	must(t, os.WriteFile(filepath.Join(folder, "budget.csv"), []byte("item,cost\nrent,1200\nfood,300\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(folder, "plan.md"), []byte("# Plan\n\nweek <script>document.title='owned'</script>\n\n## Later\n\nparty\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(folder, "binary.txt"), []byte("\x7fELF\x02\x01\x01\x00\x00\x00"), 0o644))
	step(t, ctx, shot, "open the app and make a task",
		chromedp.Navigate(d.URL()),
		chromedp.WaitVisible(chromedp.CSS(`#btn-new`)),
		chromedp.Click(chromedp.CSS(`#btn-new`)),
		chromedp.WaitVisible(chromedp.CSS(`#new-folder`)),
		chromedp.SendKeys(chromedp.CSS(`#new-folder`), folder),
		chromedp.Click(chromedp.CSS(`#new-ok`)),
		chromedp.WaitVisible(chromedp.CSS(`#taskview`)))
	step(t, ctx, shot, "pick the sheet in Files",
		chromedp.KeyEvent("5", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		clickOf(`#files li[aria-label="budget.csv"] .row`),
		chromedp.WaitVisible(chromedp.CSS(`#v-preview .pv-table`)))
	if got := value(t, ctx, shot, "read the sheet", textOf(`#v-preview .pv-table`)); !strings.Contains(got, "1200") || !strings.Contains(got, "B") {
		t.Fatalf("the sheet shows %q", got)
	}
	step(t, ctx, shot, "drag over A2:B3",
		void(chromedp.Evaluate[bool](`(() => {
			const td = (c, r) => document.querySelector('#v-preview td[data-col="' + c + '"][data-row="' + r + '"]');
			td(1, 2).dispatchEvent(new MouseEvent('mousedown', { bubbles: true }));
			td(2, 3).dispatchEvent(new MouseEvent('mouseover', { bubbles: true }));
			window.dispatchEvent(new MouseEvent('mouseup', { bubbles: true }));
			return true })()`)),
		void(chromedp.Poll[bool](`document.getElementById('pv-ask').innerText.includes('budget.csv:A2:B3')`)))
	step(t, ctx, shot, "Mod+Shift+A asks about it",
		chromedp.KeyEvent("A", chromedp.KeyModifiers(chromedp.ModifierCtrl|chromedp.ModifierShift)),
		chromedp.WaitVisible(chromedp.CSS(`#pv-askbox`)),
		void(chromedp.Poll[bool](`document.getElementById('pv-chips').innerText.includes('budget.csv:A2:B3')`)),
		chromedp.SendKeys(chromedp.CSS(`#pv-prompt`), "Is the "),
		void(chromedp.Evaluate[bool](`document.getElementById('pv-body').dataset.old = '1', true`)))
	// The panel is drawn again on each event of the task; one comes while the person types,
	// and the rest of their words still reach the box (KeyEvent types where the focus is).
	ts, err := k.Tasks()
	must(t, err)
	if code, body := call(t, d, "PATCH", "/api/tasks/"+ts[0].ID, `{"name":"the budget"}`); code != 200 {
		t.Fatalf("rename: %d %s", code, body)
	}
	step(t, ctx, shot, "a redraw while typing loses nothing",
		void(chromedp.Poll[bool](`!!document.getElementById('pv-body') && !document.getElementById('pv-body').dataset.old`)),
		chromedp.KeyEvent("rent right?"),
		clickOf(`#pv-asknow`),
		chromedp.WaitVisible(chromedp.CSS(`#pv-composed`)))
	got := value(t, ctx, shot, "read the prompt", textOf(`#pv-composed`))
	for _, want := range []string{"Is the rent right?", "1. budget.csv A2:B3:", "B2 = 1200", "A3 = food"} {
		if !strings.Contains(got, want) {
			t.Errorf("the composed prompt lacks %q:\n%s", want, got)
		}
	}
	step(t, ctx, shot, "Markdown is laid out, its HTML inert",
		chromedp.KeyEvent("5", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		clickOf(`#files li[aria-label="plan.md"] .row`),
		chromedp.WaitVisible(chromedp.CSS(`#v-preview .pv-heading`)),
		void(chromedp.Poll[bool](`(() => { const e = [...document.querySelectorAll('#v-preview .pv-heading')].find((x) => x.innerText === 'Later'); if (!e) return false; e.click(); return true })()`)),
		void(chromedp.Poll[bool](`document.getElementById('pv-ask').innerText.includes('plan.md:#Plan › Later')`)))
	if title := value(t, ctx, shot, "the script did not run", chromedp.Evaluate[string](`document.title`)); title == "owned" {
		t.Fatal("a script in the Markdown ran")
	}
	if n := value(t, ctx, shot, "no script element", chromedp.Evaluate[int](`document.querySelectorAll('#v-preview script').length`)); n != 0 {
		t.Fatalf("%d script elements in the preview", n)
	}
	copies, _ := filepath.Glob(filepath.Join(k.Home(), "tasks", "*", "copy", "budget.csv"))
	if len(copies) != 1 {
		t.Fatalf("the task's copy of budget.csv: %v", copies)
	}
	must(t, os.WriteFile(copies[0], []byte("item,cost\nrent,1350\nfood,300\n"), 0o644))
	step(t, ctx, shot, "Review opens a changed file's preview, before and now",
		chromedp.KeyEvent("2", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		clickOf(`#changes button[aria-label="Preview budget.csv"]`),
		void(chromedp.Poll[bool](`(() => { const b = document.querySelector('#pv-before .pv-table'), n = document.querySelector('#v-preview .pv-compare > .pv-col:last-child .pv-table'); return !!b && !!n && b.innerText.includes('1200') && !b.innerText.includes('1350') && n.innerText.includes('1350') && !n.innerText.includes('1200') })()`)))
	// The before column takes no picks: a place names the file as it is now.
	if inert := value(t, ctx, shot, "the before column is inert", chromedp.Evaluate[bool](`document.getElementById('pv-before').inert`)); !inert {
		t.Fatal("the before column takes picks")
	}
	marked := value(t, ctx, shot, "the changed cell is marked", chromedp.Evaluate[string](`[...document.querySelectorAll('#v-preview .pv-changed')].map((x) => x.textContent).join(',')`))
	if marked != "1350" {
		t.Fatalf("marked as changed: %q, want the one changed cell", marked)
	}
	if os.Getenv("KULE_LOOK") != "" {
		shot("side-by-side")
	}
	step(t, ctx, shot, "one side at a time",
		clickOf(`#pv-compare`),
		void(chromedp.Poll[bool](`!document.querySelector('#v-preview .pv-compare') && (document.querySelector('#v-preview .pv-table') || {}).innerText?.includes('1350')`)),
		clickOf(`#pv-side`),
		void(chromedp.Poll[bool](`(document.querySelector('#v-preview .pv-table') || {}).innerText?.includes('1200') && document.getElementById('pv-side').innerText === 'Show now'`)))
	step(t, ctx, shot, "a binary named .txt is refused",
		chromedp.KeyEvent("5", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		clickOf(`#files li[aria-label="binary.txt"] .row`),
		chromedp.WaitVisible(chromedp.CSS(`#pv-error`)))
	if got := value(t, ctx, shot, "read the refusal", textOf(`#pv-error`)); !strings.Contains(got, "cannot preview binary.txt") || !strings.Contains(got, "binary content") {
		t.Fatalf("the refusal says %q", got)
	}
}
