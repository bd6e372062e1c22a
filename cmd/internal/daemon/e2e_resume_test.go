package daemon

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kulehq/kule/kernel"
)

// TestAppResumesAnInterruptedRun: in a real Chromium, an agent turn left
// interrupted (a record still running when the daemon starts) waits under
// Needs you with a Resume action; Resume runs the agent on its session with
// what memory kept, and the card goes.
func TestAppResumesAnInterruptedRun(t *testing.T) {
	ctx, shot := browser(t)
	k := newKernel(t)
	cfg := Config{Kernel: k}
	withPeerScript(t, &cfg, "resume", "")
	rep, err := k.NewTask(context.Background(), sampleFolder(t))
	must(t, err)
	tk := rep.Task
	if id := k.MemoryRunStarted(tk, kernel.MemoryRun{Agent: "peer", Session: "s1", Prompt: "write the release notes"}); id == 0 {
		t.Fatal("the run was not recorded")
	}
	must(t, k.CloseMemory())
	d := startDaemon(t, cfg)
	step(t, ctx, shot, "open the app", chromedp.Navigate(d.URL()), chromedp.WaitVisible(chromedp.CSS(`#needs li[data-interrupted] button.primary`)))
	if got := value(t, ctx, shot, "the card", textOf(`#needs li[data-interrupted]`)); !strings.Contains(got, "peer's turn was interrupted") || !strings.Contains(got, "write the release notes") {
		t.Fatalf("the interrupted run's card: %q", got)
	}
	step(t, ctx, shot, "the task's row says so", chromedp.WaitVisible(chromedp.CSS(`#task-list [data-interrupted-task]`)))
	step(t, ctx, shot, "resume", clickOf(`#needs li[data-interrupted] button.primary`))
	waitFor(t, "the resumed turn", func() bool {
		return strings.HasPrefix(readFile(filepath.Join(tk.Paths.Copy, "resumed.txt")), "loaded=s1\n")
	})
	step(t, ctx, shot, "the card goes", void(chromedp.Poll[bool](`!document.querySelector('#needs li[data-interrupted]') && !document.querySelector('#task-list [data-interrupted-task]')`)))
}
