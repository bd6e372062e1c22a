package daemon

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kulehq/kule/kernel"
)

var screenshots = flag.String("screenshots", "", "write the app's screenshots (each panel at 1000×700 and 1920×1080) to this folder; make screenshots writes docs/screenshots")

// TestAppScreenshots draws each panel of the app at 1000×700 and 1920×1080 on a sample task —
// Live, Review with a line diff open, Timeline, Files, the Terminal in the bottom panel, the
// agent chat on the right side, Settings and its Profile section — and checks each
// picture has the window's size. With -screenshots it writes them where docs/app.md shows
// them (make screenshots); without, to a temporary folder.
func TestAppScreenshots(t *testing.T) {
	// The shells are bash with a home of their own, so no ~/.bashrc of this machine's (pyenv,
	// say) runs: it is not what these tests check, and one that hangs would hang them.
	t.Setenv("SHELL", "/bin/bash")
	t.Setenv("HOME", t.TempDir())
	ctx, shot := browser(t)
	d := startDaemon(t, Config{Reviewer: StaticReviewer{"add.go": {"~ func Add"}}})
	folder := sampleFolder(t)
	must(t, os.WriteFile(filepath.Join(folder, "add.go"), []byte("package x\n\n// Add adds.\nfunc Add(a, b int) int {\n\treturn a + b\n}\n"), 0o644))
	rep, err := d.k.NewTask(context.Background(), folder)
	must(t, err)
	_, err = d.k.EditTask(rep.Task.ID, func(tk *kernel.Task) { tk.Name = "fix the adder"; tk.Colour = "blue" })
	must(t, err)
	if _, err := d.Exec(context.Background(), rep.Task, []string{"sh", "-c", "sed -i 's/a + b/b + a/' add.go && echo '## Usage' >> README.md && printf 'module x\\n' > go.mod && echo done"}, "edit the adder"); err != nil {
		t.Fatal(err)
	}
	dir := *screenshots
	if dir == "" {
		dir = t.TempDir()
	}
	must(t, os.MkdirAll(dir, 0o755))
	id := rep.Task.ID
	step(t, ctx, shot, "open the app on the task",
		chromedp.Navigate(d.URL()),
		clickOf(`#task-list li[data-id="`+id+`"]`),
		chromedp.WaitVisible(chromedp.CSS(`#live li.run`)))
	panels := []struct {
		name string
		show []chromedp.Action[chromedp.Void]
	}{
		{"live", []chromedp.Action[chromedp.Void]{chromedp.KeyEvent("1", chromedp.KeyModifiers(chromedp.ModifierCtrl)), chromedp.WaitVisible(chromedp.CSS(`#live li.run`))}},
		{"review", []chromedp.Action[chromedp.Void]{chromedp.KeyEvent("2", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
			chromedp.WaitVisible(chromedp.CSS(`#changes li[data-path="add.go"] button.showlines`)),
			// Review redraws its rows on task events: a row drawn anew after the click is opened
			// again, until its lines show.
			void(chromedp.Poll[bool](`(() => { const b = document.querySelector('#changes li[data-path="add.go"] button.showlines'); if (!b) return false; if (b.getAttribute('aria-expanded') !== 'true') b.click(); return !!document.querySelector('#changes li[data-path="add.go"] table.hunk'); })()`)),
			chromedp.WaitVisible(chromedp.CSS(`#changes li[data-path="add.go"] table.hunk`))}},
		{"timeline", []chromedp.Action[chromedp.Void]{chromedp.KeyEvent("3", chromedp.KeyModifiers(chromedp.ModifierCtrl)), chromedp.WaitVisible(chromedp.CSS(`#timeline li .what`))}},
		{"files", []chromedp.Action[chromedp.Void]{chromedp.KeyEvent("5", chromedp.KeyModifiers(chromedp.ModifierCtrl)), chromedp.WaitVisible(chromedp.CSS(`#files li`))}},
		{"terminal", []chromedp.Action[chromedp.Void]{clickOf(`#tab-terminal`), chromedp.WaitVisible(chromedp.CSS(`#btn-new-terminal`)),
			void(chromedp.Evaluate[bool](`(() => { if (!document.querySelector('#v-terminal .ttab')) document.getElementById('btn-new-terminal').click(); return true; })()`)),
			void(chromedp.Poll[bool](`(document.querySelector('#v-terminal .term:not([hidden]) .xterm-accessibility-tree') || {}).innerText?.includes('copy')`))}},
		{"chat", []chromedp.Action[chromedp.Void]{chromedp.KeyEvent("j", chromedp.KeyModifiers(chromedp.ModifierCtrl, chromedp.ModifierShift)),
			void(chromedp.Poll[bool](`!document.getElementById('r-right').hidden && !!document.querySelector('#r-right #v-chat:not([hidden]) #chat-input')`))}},
		{"settings", []chromedp.Action[chromedp.Void]{clickOf(`#btn-settings`), chromedp.WaitVisible(chromedp.CSS(`#keys-body button`)),
			clickOf(`#settings-nav a[data-section="agents"]`),
			void(chromedp.Poll[bool](`document.querySelectorAll('#settings-body fieldset#settings-profile').length === 1`)),
			void(chromedp.Poll[bool](`!!document.querySelector('#set-agents li')`))}},
		{"settings-profile", []chromedp.Action[chromedp.Void]{clickOf(`#settings-nav a[data-section="profile"]`), chromedp.WaitVisible(chromedp.CSS(`#profile-export`))}},
	}
	for _, size := range [][2]int64{{1000, 700}, {1920, 1080}} {
		step(t, ctx, shot, fmt.Sprintf("a window of %d×%d", size[0], size[1]), chromedp.EmulateViewport(size[0], size[1]))
		// Each size starts from the default layout: the main area and the left side.
		step(t, ctx, shot, "Reset the layout",
			chromedp.KeyEvent("k", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
			chromedp.SendKeys(chromedp.CSS(`#pal-input`), "reset the layout"),
			chromedp.KeyEvent("\r"),
			void(chromedp.Poll[bool](`document.getElementById('r-right').hidden && document.getElementById('r-bottom').hidden`)))
		for _, p := range panels {
			step(t, ctx, shot, "show "+p.name, p.show...)
			if p.name == "terminal" && size[0] == 1000 {
				// The shell is started once; at the second size its tab is there already.
				step(t, ctx, shot, "type in the terminal",
					chromedp.SendKeys(chromedp.CSS(`#v-terminal .term:not([hidden]) .xterm-helper-textarea`), "ls\r"),
					void(chromedp.Poll[bool](`(document.querySelector('#v-terminal .term:not([hidden]) .xterm-accessibility-tree') || {}).innerText?.includes('README.md')`)))
			}
			// Two frames: what the last step changed is drawn.
			step(t, ctx, shot, "let it draw", void(chromedp.Poll[bool](`new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`)))
			b := value(t, ctx, shot, "screenshot "+p.name, chromedp.CaptureScreenshot())
			img, err := png.Decode(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("%s: %v", p.name, err)
			}
			if got := img.Bounds().Size(); int64(got.X) != size[0] || int64(got.Y) != size[1] {
				t.Fatalf("%s at %dx%d: the picture is %v", p.name, size[0], size[1], got)
			}
			must(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%dx%d.png", p.name, size[0], size[1])), b, 0o644))
			if p.name == "settings-profile" {
				step(t, ctx, shot, "close Settings", chromedp.KeyEvent("\x1b"), chromedp.WaitNotVisible(chromedp.CSS(`#dlg-settings`)))
			}
		}
	}
}
