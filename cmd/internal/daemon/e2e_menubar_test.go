package daemon

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestAppMenuBar: File, Edit, View, Task and Help are there; an item runs the same command as
// its shortcut and shows the key the person set, also after a rebinding; the task's items are
// disabled while no task is picked.
func TestAppMenuBar(t *testing.T) {
	ctx, shot := browser(t)
	d := startDaemon(t, Config{})
	rep, err := d.k.NewTask(context.Background(), sampleFolder(t))
	must(t, err)
	step(t, ctx, shot, "open the app",
		chromedp.Navigate(d.URL()),
		chromedp.WaitVisible(chromedp.CSS(`#menubar .mb-top[data-menu="Task"]`)))
	tops := value(t, ctx, shot, "read the menus", chromedp.Evaluate[string](`[...document.querySelectorAll('#menubar .mb-top')].map((b) => b.textContent).join(' ')`))
	if tops != "File Edit View Task Help" {
		t.Fatalf("the menu bar reads %q", tops)
	}
	step(t, ctx, shot, "the Task menu without a task", clickOf(`#menubar .mb-top[data-menu="Task"]`),
		chromedp.WaitVisible(chromedp.CSS(`#menubar .mb-pop button[data-cmd="task.commit"]`)))
	if off := value(t, ctx, shot, "commit disabled", chromedp.Evaluate[bool](`document.querySelector('#menubar .mb-pop button[data-cmd="task.commit"]').disabled`)); !off {
		t.Fatal("Commit is enabled in the menu with no task picked")
	}
	step(t, ctx, shot, "pick the task and show Review from the View menu",
		chromedp.KeyEvent("\x1b"),
		clickOf(`#task-list li[data-id="`+rep.Task.ID+`"]`),
		chromedp.WaitVisible(chromedp.CSS(`#taskview`)),
		clickOf(`#menubar .mb-top[data-menu="View"]`),
		chromedp.WaitVisible(chromedp.CSS(`#menubar .mb-pop button[data-cmd="view.review"]`)))
	if k := value(t, ctx, shot, "its key", textOf(`#menubar .mb-pop button[data-cmd="view.review"] kbd`)); k != "Ctrl+2" {
		t.Fatalf("Show Review shows the key %q, want Ctrl+2", k)
	}
	step(t, ctx, shot, "run it", clickOf(`#menubar .mb-pop button[data-cmd="view.review"]`),
		void(chromedp.Poll[bool](`document.getElementById('tab-review').getAttribute('aria-selected') === 'true'`)))
	step(t, ctx, shot, "rebind Show Review",
		clickOf(`#btn-settings`),
		chromedp.WaitVisible(chromedp.CSS(`#keys-body button[data-cmd="view.review"]`)),
		chromedp.Click(chromedp.CSS(`#keys-body button[data-cmd="view.review"]`)),
		chromedp.KeyEvent("2", chromedp.KeyModifiers(chromedp.ModifierCtrl, chromedp.ModifierAlt)),
		void(chromedp.Poll[bool](`document.getElementById('keys-note').innerText.includes('now runs')`)),
		chromedp.Click(chromedp.CSS(`#dlg-settings button[value=close]`)),
		clickOf(`#menubar .mb-top[data-menu="View"]`),
		chromedp.WaitVisible(chromedp.CSS(`#menubar .mb-pop button[data-cmd="view.review"]`)))
	if k := value(t, ctx, shot, "its new key", textOf(`#menubar .mb-pop button[data-cmd="view.review"] kbd`)); !strings.Contains(k, "Alt") {
		t.Fatalf("after rebinding, the menu shows %q", k)
	}
	checkNames(t, ctx, shot, "the menu bar")
}
