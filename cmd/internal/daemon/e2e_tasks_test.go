package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kulehq/kule/kernel"
)

// TestAppTaskNamesGroupsAndMeets: a task is called after its folder, then its name; with
// groups, "Not in a group" is a heading a task can be dropped on to leave its group; two tasks
// on one folder that change the same file are marked in the list and listed under Review.
func TestAppTaskNamesGroupsAndMeets(t *testing.T) {
	ctx, shot := browser(t)
	d := startDaemon(t, Config{})
	folder := sampleFolder(t)
	var ids []string
	for _, name := range []string{"march invoices", "april invoices"} {
		rep, err := d.k.NewTask(context.Background(), folder)
		must(t, err)
		_, err = d.k.EditTask(rep.Task.ID, func(tk *kernel.Task) { tk.Name = name })
		must(t, err)
		must(t, os.WriteFile(filepath.Join(rep.Task.Paths.Copy, "README.md"), []byte("# "+name+"\n"), 0o644))
		ids = append(ids, rep.Task.ID)
	}
	step(t, ctx, shot, "open the app",
		chromedp.Navigate(d.URL()),
		chromedp.WaitVisible(chromedp.CSS(`#task-list li[data-id="`+ids[0]+`"]`)))
	if name := value(t, ctx, shot, "read the name", textOf(`#task-list li[data-id="`+ids[0]+`"] .tn`)); name != "project – march invoices" {
		t.Fatalf("the task is called %q; want its folder's name, then its own", name)
	}

	step(t, ctx, shot, "Review lists where the tasks meet",
		clickOf(`#task-list li[data-id="`+ids[0]+`"]`),
		chromedp.KeyEvent("2", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		chromedp.WaitVisible(chromedp.CSS(`#r-meets .meetbox[data-task="`+ids[1]+`"]`)))
	box := value(t, ctx, shot, "read the meeting", textOf(`#r-meets`))
	if !strings.Contains(box, "april invoices") || !strings.Contains(box, "README.md") {
		t.Fatalf("Review says of the meeting: %q", box)
	}
	for _, id := range ids {
		step(t, ctx, shot, "the list marks "+id, chromedp.WaitVisible(chromedp.CSS(`#task-list li[data-id="`+id+`"] .badge.meet`)))
	}

	step(t, ctx, shot, "a group with the first task in it", void(chromedp.Evaluate[bool](`(async () => {
		const j = { method: 'POST', headers: { 'Content-Type': 'application/json' } };
		const g = await (await fetch('/api/groups', { ...j, body: JSON.stringify({ name: 'Work', colour: 'blue' }) })).json();
		await fetch('/api/tasks/`+ids[0]+`/group', { ...j, body: JSON.stringify({ group: g.id }) });
		return true;
	})()`, chromedp.EvalAwaitPromise)),
		chromedp.WaitVisible(chromedp.CSS(`#task-list li.ghead.nogroup`)),
		chromedp.WaitVisible(chromedp.CSS(`#task-list li.ingroup[data-id="`+ids[0]+`"]`)))
	dragTo(t, ctx, shot, "drop the task on Not in a group", `#task-list li[data-id="`+ids[0]+`"]`, `#task-list li.ghead.nogroup`)
	waitFor(t, "the task leaves its group", func() bool {
		tk, err := d.k.Resolve(ids[0])
		return err == nil && tk.Group == ""
	})
}

// TestAppBudgetAndLimitsInTheTaskMenu sets a task's own budget and limits from its ⋮ menu; the
// kernel keeps them (what kule budget and kule limits read), and the daemon refuses a budget
// that is not an amount in a currency.
func TestAppBudgetAndLimitsInTheTaskMenu(t *testing.T) {
	ctx, shot := browser(t)
	d := startDaemon(t, Config{})
	rep, err := d.k.NewTask(context.Background(), sampleFolder(t))
	must(t, err)
	id := rep.Task.ID
	step(t, ctx, shot, "Budget… from the task menu",
		chromedp.Navigate(d.URL()),
		clickOf(`#task-list li[data-id="`+id+`"]`),
		chromedp.WaitVisible(chromedp.CSS(`#taskview`)),
		chromedp.Click(chromedp.CSS(`#t-menu-btn`)),
		chromedp.Click(chromedp.CSS(`#t-menu button[data-cmd="task.budget"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#prompt-input`)),
		chromedp.SendKeys(chromedp.CSS(`#prompt-input`), "five dollars"),
		chromedp.Click(chromedp.CSS(`#prompt-ok`)),
		void(chromedp.Poll[bool](`document.getElementById('prompt-error').innerText.includes('like 5.00 USD')`)),
		void(chromedp.Evaluate[bool](`(document.getElementById('prompt-input').value = '', true)`)),
		chromedp.SendKeys(chromedp.CSS(`#prompt-input`), "5.00 usd"),
		chromedp.Click(chromedp.CSS(`#prompt-ok`)),
		void(chromedp.Poll[bool](`document.getElementById('toasts').innerText.includes('5.00 USD')`)))
	tk, err := d.k.Resolve(id)
	must(t, err)
	sum, err := d.k.TaskUsage(tk, time.Now())
	must(t, err)
	if sum.Budget == nil || sum.Budget.Amount != 5 || sum.Budget.Currency != "USD" {
		t.Fatalf("the task's budget is %+v; want 5 USD", sum.Budget)
	}
	step(t, ctx, shot, "Limits… from the task menu",
		chromedp.Click(chromedp.CSS(`#t-menu-btn`)),
		chromedp.Click(chromedp.CSS(`#t-menu button[data-cmd="task.limits"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#lim-mem`)),
		void(chromedp.Evaluate[bool](`(document.getElementById('lim-mem').value = '', document.getElementById('lim-time').value = '', true)`)),
		chromedp.SendKeys(chromedp.CSS(`#lim-mem`), "512"),
		chromedp.SendKeys(chromedp.CSS(`#lim-time`), "30"),
		chromedp.Click(chromedp.CSS(`#limits-ok`)),
		void(chromedp.Poll[bool](`document.getElementById('toasts').innerText.includes('limits are kept')`)))
	tk, err = d.k.Resolve(id)
	must(t, err)
	if tk.Limits.Memory != 512<<20 || tk.Limits.Time != 30*time.Minute {
		t.Fatalf("the task's limits are %+v; want 512 MiB and 30 minutes", tk.Limits)
	}
	bad := value(t, ctx, shot, "a budget with a currency that is not one", chromedp.Evaluate[int](`(async () => (await fetch('/api/tasks/`+id+`/budget', { method: 'PUT', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ cap: { amount: 5, currency: 'usd;' } }) })).status)()`, chromedp.EvalAwaitPromise))
	if bad != 400 {
		t.Fatalf("a budget in currency usd; answered %d", bad)
	}
}
