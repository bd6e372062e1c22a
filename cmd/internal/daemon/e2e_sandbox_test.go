package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kulehq/kule/cmd/internal/daemon/client"
)

// TestAppTimelineShowsASandboxRefusal drives the app in Chromium: the empty
// Timeline says that a command's own refused file accesses cannot be
// listed here; a command typed while the Timeline is open, run in the real
// sandbox asked to reveal ~/.ssh, is refused, and the refusal shows on the
// Timeline with why and what to do, without reloading the page.
func TestAppTimelineShowsASandboxRefusal(t *testing.T) {
	ctx, shot := browser(t)
	k := newKernel(t)
	runnerFor, ssh := revealingSSH(t, k)
	d := startDaemon(t, Config{Kernel: k, RunnerFor: runnerFor})
	rep, err := k.NewTask(context.Background(), sampleFolder(t))
	must(t, err)

	step(t, ctx, shot, "open the app on the task's Timeline",
		chromedp.Navigate(d.URL()),
		chromedp.WaitVisible(chromedp.CSS(`#task-list li`)),
		clickOf(`#task-list li`),
		chromedp.WaitVisible(chromedp.CSS(`#taskview`)),
		chromedp.KeyEvent("3", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		chromedp.WaitVisible(chromedp.CSS(`#timeline-accesses`)))
	empty := value(t, ctx, shot, "read the empty Timeline", textOf(`#timeline`))
	if !strings.Contains(empty, "No sandbox refusals") || !strings.Contains(empty, "cannot be listed on this machine") {
		t.Fatalf("empty Timeline: %q", empty)
	}

	step(t, ctx, shot, "run a command the sandbox refuses",
		chromedp.Click(chromedp.CSS(`#cmd`)),
		chromedp.SendKeys(chromedp.CSS(`#cmd`), "echo hi > ran.txt"),
		chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(chromedp.CSS(`#live li.run[data-state="ended"]`)),
		chromedp.KeyEvent("3", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		chromedp.WaitVisible(chromedp.CSS(`#timeline .mark.sandbox`)),
		chromedp.WaitNotPresent(chromedp.CSS(`#timeline-accesses`)))
	got := value(t, ctx, shot, "read the refusal", textOf(`#timeline`))
	for _, want := range []string{"Sandbox refused --reveal " + ssh, "which Kule hides from every command", "run it again without --reveal", "echo hi > ran.txt"} {
		if !strings.Contains(got, want) {
			t.Errorf("the Timeline lacks %q:\n%s", want, got)
		}
	}
	if t.Failed() {
		shot("timeline")
		return
	}
	// Live: a run started elsewhere while the Timeline is open shows its
	// refusal there, from the event stream.
	go d.Exec(context.Background(), rep.Task, []string{"true"}, "a second command")
	step(t, ctx, shot, "the second refusal arrives live",
		chromedp.WaitVisible(chromedp.CSS(`#v-timeline`)),
		void(chromedp.Poll[bool](`document.querySelectorAll('#timeline .mark.sandbox').length === 2 && document.querySelector('#timeline').innerText.includes('a second command')`)))
}

// TestAppTimelineMarksUncommittedSteps: the steps after the last commit,
// while the copy holds their changes, are marked "not committed"; a commit
// takes the mark off them, and the next run's step has it again.
func TestAppTimelineMarksUncommittedSteps(t *testing.T) {
	ctx, shot := browser(t)
	d := startDaemon(t, Config{})
	rep, err := d.k.NewTask(context.Background(), sampleFolder(t))
	must(t, err)
	c := client.New(d.home)
	if _, err := d.Exec(context.Background(), rep.Task, []string{"sh", "-c", "echo one > one.txt"}, "make one"); err != nil {
		t.Fatal(err)
	}
	marked := func() string {
		return `[...document.querySelectorAll('#timeline li')].filter((li) => li.querySelector('.chip.uncommitted')).map((li) => li.querySelector('.what').innerText).join('|')`
	}
	step(t, ctx, shot, "open the Timeline",
		chromedp.Navigate(d.URL()),
		chromedp.WaitVisible(chromedp.CSS(`#task-list li`)),
		clickOf(`#task-list li`),
		chromedp.WaitVisible(chromedp.CSS(`#taskview`)),
		chromedp.KeyEvent("3", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		chromedp.WaitVisible(chromedp.CSS(`#timeline .chip.uncommitted`)))
	if got := value(t, ctx, shot, "read the marks", chromedp.Evaluate[string](marked())); !strings.HasPrefix(got, "Ran make one") {
		t.Fatalf("marked before the commit: %q", got)
	}
	must(t, c.Do(context.Background(), "POST", "/api/tasks/"+rep.Task.ID+"/commit", map[string]any{}, nil))
	step(t, ctx, shot, "the commit takes the mark off",
		chromedp.WaitVisible(chromedp.CSS(`#v-timeline button[aria-label^="Undo checkpoint 1"]`)),
		chromedp.WaitNotPresent(chromedp.CSS(`#timeline .chip.uncommitted`)))
	if _, err := d.Exec(context.Background(), rep.Task, []string{"sh", "-c", "echo two > two.txt"}, "make two"); err != nil {
		t.Fatal(err)
	}
	step(t, ctx, shot, "the next run is marked",
		chromedp.WaitVisible(chromedp.CSS(`#timeline .chip.uncommitted`)))
	if got := value(t, ctx, shot, "read the marks again", chromedp.Evaluate[string](marked())); !strings.HasPrefix(got, "Ran make two") || strings.Contains(got, "make one") {
		t.Fatalf("marked after the second run: %q", got)
	}
}

// TestLiveDrawsARunOnceWhenOpenedAfterIt: a run that starts and ends while
// the page shows no task is heard from its events; opening the task's Live
// afterwards reads steps.jsonl, where the same run is too, and must not
// draw it a second time (the bug fixed in app.js's onRunEvent: Live's
// "since" moves back to the start of a run it heard).
func TestLiveDrawsARunOnceWhenOpenedAfterIt(t *testing.T) {
	ctx, shot := browser(t)
	k := newKernel(t)
	d := startDaemon(t, Config{Kernel: k})
	rep, err := k.NewTask(context.Background(), sampleFolder(t))
	must(t, err)
	step(t, ctx, shot, "open the app; no task is open",
		chromedp.Navigate(d.URL()),
		chromedp.WaitVisible(chromedp.CSS(`#task-list li`)))

	// The run waits for a file the test makes once the page shows it
	// running: the page has heard its start.
	done := make(chan error, 1)
	go func() {
		_, err := d.Exec(context.Background(), rep.Task, []string{"sh", "-c", "while [ ! -e go ]; do sleep 0.05; done"}, "wait for go")
		done <- err
	}()
	step(t, ctx, shot, "the list shows the run",
		chromedp.WaitVisible(chromedp.CSS(`#task-list .badge.run`)))
	must(t, os.WriteFile(filepath.Join(rep.Task.Paths.Copy, "go"), nil, 0o644))
	must(t, <-done)
	step(t, ctx, shot, "the list shows it ended",
		chromedp.WaitNotPresent(chromedp.CSS(`#task-list .badge.run`)))

	step(t, ctx, shot, "open the task's Live",
		clickOf(`#task-list li`),
		chromedp.WaitVisible(chromedp.CSS(`#live li.run[data-state="ended"]`)))
	if runs := value(t, ctx, shot, "count the runs in Live", chromedp.Evaluate[int](`document.querySelectorAll('#live li.run').length`)); runs != 1 {
		shot("live-runs")
		t.Fatalf("Live shows the one run %d times", runs)
	}
}
