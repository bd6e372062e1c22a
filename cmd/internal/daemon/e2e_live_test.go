package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/kulehq/kule/kernel"
)

// dragTo drags the element at from onto the element at to with the mouse,
// as a person does (pointer events in the page).
func dragTo(t *testing.T, ctx context.Context, shot func(string), what, from, to string) {
	t.Helper()
	xy := value(t, ctx, shot, what+": find the ends", chromedp.Evaluate[[]float64](`(() => {
		const a = document.querySelector(`+"`"+from+"`"+`).getBoundingClientRect(), b = document.querySelector(`+"`"+to+"`"+`).getBoundingClientRect();
		return [a.x + a.width / 2, a.y + a.height / 2, b.x + b.width / 2, b.y + b.height / 2];
	})()`))
	held := func(p *input.DispatchMouseEventParams) { p.Button = input.MouseButtonLeft; p.Buttons = 1 }
	step(t, ctx, shot, what,
		chromedp.MouseEvent(chromedp.MousePressed, xy[0], xy[1], held, chromedp.ClickCount(1)),
		chromedp.MouseEvent(chromedp.MouseMoved, xy[0]+4, xy[1]+8, held),
		chromedp.MouseEvent(chromedp.MouseMoved, (xy[0]+xy[2])/2, (xy[1]+xy[3])/2, held),
		chromedp.MouseEvent(chromedp.MouseMoved, xy[2], xy[3], held),
		chromedp.MouseEvent(chromedp.MouseReleased, xy[2], xy[3], held, chromedp.ClickCount(1)))
}

// TestAppLiveConnectionsAgentAndGroups drives the wired daemon (the Cedar
// policy, rules.cedar) in Chromium: the first-run screen names the agents
// and makes the first task; a real command connects through the task's
// proxy to a loopback server the policy asks about, and the connection is
// held until it is approved under Needs you; an agent prompt from the
// command line streams its words and its tool call, whose permission is
// approved on the Live tab, with what it changed; a group with a policy of
// its own is made, and dropping the task on it asks first because a pending
// verdict changes; dragging reorders tasks (kept in task.json).
func TestAppLiveConnectionsAgentAndGroups(t *testing.T) {
	ctx, shot := browser(t)
	needCurl(t)
	_, hp := loopbackServer(t, "hello from the server")
	cfg := Config{Kernel: newKernel(t)}
	cfg.Rules = &CedarRules{K: cfg.Kernel}
	withPeerAgent(t, &cfg)
	d := startDaemon(t, cfg)
	folder := sampleFolder(t)

	step(t, ctx, shot, "the first-run screen names the agents",
		chromedp.Navigate(d.URL()),
		chromedp.WaitVisible(chromedp.CSS(`#firstrun #fr-agents li.agent.ok`)))
	checkNames(t, ctx, shot, "the first-run screen")
	agentsText := value(t, ctx, shot, "read the agents", chromedp.Text(chromedp.CSS(`#fr-agents`)))
	if !strings.Contains(agentsText, "peer") || !strings.Contains(agentsText, "can start here") {
		t.Fatalf("first run lists agents %q", agentsText)
	}
	step(t, ctx, shot, "choose careful",
		chromedp.Click(chromedp.CSS(`input[name=fr-policy][value=careful]`)))
	waitFor(t, "config.toml says careful", func() bool { return strings.Contains(readFile(filepath.Join(d.home, "config.toml")), "careful") })
	step(t, ctx, shot, "back to balanced, then a folder",
		chromedp.Click(chromedp.CSS(`input[name=fr-policy][value=balanced]`)),
		chromedp.SendKeys(chromedp.CSS(`#fr-folder`), folder),
		chromedp.Click(chromedp.CSS(`#fr-ok`)),
		chromedp.WaitVisible(chromedp.CSS(`#taskview #v-live`)))
	waitFor(t, "config.toml says balanced", func() bool { return strings.Contains(readFile(filepath.Join(d.home, "config.toml")), "balanced") })
	ts, err := d.k.Tasks()
	must(t, err)
	if len(ts) != 1 {
		t.Fatalf("tasks after the first-run screen: %d", len(ts))
	}
	id := ts[0].ID
	// A budget, so the header shows the agent's cost against it.
	must(t, d.k.SetTaskCap(ts[0], &kernel.Money{Amount: 1, Currency: "USD"}))

	windowBehind(t, ctx, shot)

	// A real command connects through the proxy; the policy asks about the host.
	step(t, ctx, shot, "run curl from the command line",
		chromedp.Click(chromedp.CSS(`#cmd`)),
		chromedp.SendKeys(chromedp.CSS(`#cmd`), "curl -f -s -S --max-time 60 http://"+hp+"/"),
		chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(chromedp.CSS(`#needs li[data-question] button.primary`)),
		chromedp.WaitVisible(chromedp.CSS(`#live li.qcard[data-question]`)))
	title := value(t, ctx, shot, "read the question", chromedp.Text(chromedp.CSS(`#needs li[data-question] .qt`)))
	if !strings.Contains(title, hp) {
		t.Fatalf("the question reads %q, want the host %s", title, hp)
	}
	if r := value(t, ctx, shot, "the run still waits", chromedp.Evaluate[string](`document.querySelector('#live li.run').dataset.state`)); r != "running" {
		t.Fatalf("the command is %s while its connection waits", r)
	}
	step(t, ctx, shot, "approve it under Needs you",
		clickOf(`#needs li[data-question] button.primary`),
		chromedp.WaitVisible(chromedp.CSS(`#live li.run[data-state="ended"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#live li.netconn.ok`)))
	out := value(t, ctx, shot, "read the run", textOf(`#live li.run .out`))
	if !strings.Contains(out, "hello from the server") {
		t.Fatalf("after approval the command got %q", out)
	}

	// Two more tasks, so the list has something to order.
	var more []string
	for i, name := range []string{"Website", "Release notes"} {
		rep, err := d.k.NewTask(context.Background(), sampleFolder(t))
		must(t, err)
		tk := rep.Task
		tk.Name, tk.Colour, tk.Order = name, []string{"violet", "amber"}[i], 10+i
		must(t, d.k.SaveTask(tk))
		more = append(more, tk.ID)
	}
	own := `@id("markdown-waits") @verdict("ask") @reason("notes are read by people: a person looks first")
forbid (principal, action in [Kule::Action::"file.create", Kule::Action::"file.modify"], resource is Kule::Path) when { resource.ext == "md" };
permit (principal, action, resource);
`
	step(t, ctx, shot, "a group with a policy that does not validate is refused",
		chromedp.Click(chromedp.CSS(`#btn-group`)),
		chromedp.WaitVisible(chromedp.CSS(`#group-name`)),
		chromedp.SendKeys(chromedp.CSS(`#group-name`), "Docs"),
		chromedp.Click(chromedp.CSS(`#group-colours button[aria-label="Colour teal"]`)),
		chromedp.Click(chromedp.CSS(`input[name=group-policy][value=own]`)),
		chromedp.SetValue(chromedp.CSS(`#group-own`), "permit (principal, action, resource) when { resource.nope };"),
		chromedp.Click(chromedp.CSS(`#group-ok`)),
		chromedp.WaitVisible(chromedp.CSS(`#group-error`)))
	checkNames(t, ctx, shot, "the group dialog")
	if e := value(t, ctx, shot, "read the error", chromedp.Text(chromedp.CSS(`#group-error`))); !strings.Contains(e, "does not validate") {
		t.Fatalf("group error %q", e)
	}
	step(t, ctx, shot, "the group with its own policy is kept",
		chromedp.SetValue(chromedp.CSS(`#group-own`), own),
		chromedp.Click(chromedp.CSS(`#group-ok`)),
		chromedp.WaitNotVisible(chromedp.CSS(`#dlg-group`)),
		chromedp.WaitVisible(chromedp.CSS(`#task-list li.ghead`)))
	gs, err := d.k.Groups().List()
	must(t, err)
	if len(gs) != 1 || gs[0].Name != "Docs" || gs[0].Colour != "teal" || gs[0].Policy != kernel.GroupOwnPolicy {
		t.Fatalf("groups: %+v", gs)
	}

	// Names and a task in the group, for the picture.
	main, err := d.k.LoadTask(id)
	must(t, err)
	main.Name, main.Colour = "Notes for 2.0", "blue"
	must(t, d.k.SaveTask(main))
	rep, err := d.k.NewTask(context.Background(), sampleFolder(t))
	must(t, err)
	rep.Task.Name, rep.Task.Colour, rep.Task.Group = "User guide", "teal", gs[0].ID
	must(t, d.k.SaveTask(rep.Task))

	// The agent writes a note; the permission waits on the Live tab.
	step(t, ctx, shot, "ask the agent from the command line",
		clickOf(`#task-list li[data-id="`+id+`"]`),
		chromedp.SetValue(chromedp.CSS(`#agent`), "peer"),
		void(chromedp.Evaluate[bool](`document.querySelector('#agent').dispatchEvent(new Event('change')), true`)),
		chromedp.Click(chromedp.CSS(`#cmd`)),
		chromedp.SendKeys(chromedp.CSS(`#cmd`), "Write the notes for the release"),
		chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(chromedp.CSS(`#live li.qcard[data-question] button.primary`)),
		chromedp.WaitVisible(chromedp.CSS(`#live li.tool`)))
	if *docShot != "" {
		step(t, ctx, shot, "settle (the toasts go)", chromedp.Sleep(4*time.Second))
		b := value(t, ctx, shot, "screenshot for docs", chromedp.FullScreenshot(100))
		must(t, os.WriteFile(*docShot, b, 0o644))
	}
	step(t, ctx, shot, "approve the permission on the Live tab",
		clickOf(`#live li.qcard[data-question] button.primary`),
		chromedp.WaitVisible(chromedp.CSS(`#live li.end`)))
	live := value(t, ctx, shot, "read Live", textOf(`#live`))
	for _, want := range []string{"I will write the notes.", "Wrote it.", "Write notes/release.md", "notes/release.md", "completed", "Plan", "Write the release notes", "0.25 USD"} {
		if !strings.Contains(live, want) {
			t.Fatalf("Live lacks %q:\n%s", want, live)
		}
	}
	notes := value(t, ctx, shot, "read the notifications", chromedp.Evaluate[[]string](`window.__notes`))
	joined := strings.Join(notes, "\n")
	for _, want := range []string{"Kule needs you: Connect to " + hp + "?", "Run over: project: curl", "Kule needs you: peer asks: Write notes/release.md", "Run over: project – Notes for 2.0: peer"} {
		if !strings.Contains(joined, want) {
			t.Fatalf("notifications lack %q:\n%s", want, joined)
		}
	}
	if got := readFile(filepath.Join(d.k.TaskDir(id), "copy", "notes", "release.md")); got != "# From the agent\n" {
		t.Fatalf("the agent's note in the copy: %q", got)
	}

	// Dropping the task on the group: its policy makes notes/release.md wait, so it asks first.
	dragTo(t, ctx, shot, "drop the task on the group", `#task-list li[data-id="`+id+`"]`, `#task-list li.ghead:not(.nogroup)`)
	step(t, ctx, shot, "the move asks first", chromedp.WaitVisible(chromedp.CSS(`#dlg-confirm #confirm-list li`)))
	checkNames(t, ctx, shot, "the move's question")
	lines := value(t, ctx, shot, "read what changes", chromedp.Text(chromedp.CSS(`#confirm-list`)))
	if !strings.Contains(lines, "notes/release.md: pass → ask") {
		t.Fatalf("the move's question lists %q", lines)
	}
	if tk, _ := d.k.LoadTask(id); tk.Group != "" {
		t.Fatal("the task moved before the person confirmed")
	}
	step(t, ctx, shot, "confirm the move",
		chromedp.Click(chromedp.CSS(`#confirm-ok`)),
		chromedp.WaitVisible(chromedp.CSS(`#task-list li.ingroup[data-id="`+id+`"]`)))
	if tk, _ := d.k.LoadTask(id); tk.Group != gs[0].ID {
		t.Fatalf("after confirming the task is in group %q", tk.Group)
	}

	// In the group notes/release.md waits: Approve and remember from Review
	// commits it and keeps a rule, so the next change to it passes.
	step(t, ctx, shot, "approve and remember in Review, then commit",
		clickOf(`#task-list li[data-id="`+id+`"]`),
		chromedp.KeyEvent("2", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		void(chromedp.Poll[bool](`!!document.querySelector('#changes li[data-path="notes/release.md"] .verdict.ask')`)),
		clickOf(`#changes li[data-path="notes/release.md"] button[aria-label$="and remember"]`),
		clickOf(`#btn-commit`),
		chromedp.WaitVisible(chromedp.CSS(`#no-changes`)))
	if got := readFile(filepath.Join(folder, "notes", "release.md")); got != "# From the agent\n" {
		t.Fatalf("Approve and remember did not commit the note: %q", got)
	}
	if rules := readFile(filepath.Join(d.home, "rules.cedar")); !strings.Contains(rules, "markdown-waits") || !strings.Contains(rules, "notes/release.md") {
		t.Fatalf("rules.cedar after Approve and remember:\n%s", rules)
	}

	// Drag reorders: Release notes above Website.
	dragTo(t, ctx, shot, "drag Release notes above Website", `#task-list li[data-id="`+more[1]+`"]`, `#task-list li[data-id="`+more[0]+`"]`)
	waitFor(t, "the new order in task.json", func() bool {
		ts, err := d.k.Tasks()
		if err != nil {
			return false
		}
		var order []string
		for _, x := range ts {
			if x.Group == "" {
				order = append(order, x.ID)
			}
		}
		return strings.Join(order, ",") == more[1]+","+more[0]
	})
	step(t, ctx, shot, "the list shows it",
		chromedp.WaitVisible(chromedp.CSS(`#task-list li[data-id="`+more[1]+`"] + li[data-id="`+more[0]+`"]`)),
		chromedp.KeyEvent(kb.Escape))

	checkNames(t, ctx, shot, "groups and Live")
}
