package daemon

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestAppTimelineShowsEveryRun: runs the page never saw — a kule exec from a terminal
// (RecordStep, as cmd/kule calls it) and an earlier agent turn's tool call (a line of
// steps.jsonl, as kule run writes it) — are in Live and the Timeline of a freshly loaded
// page, the terminal's run said to be started from a terminal.
func TestAppTimelineShowsEveryRun(t *testing.T) {
	ctx, shot := browser(t)
	d := startDaemon(t, Config{})
	rep, err := d.k.NewTask(context.Background(), sampleFolder(t))
	must(t, err)
	task := rep.Task
	if _, err := RecordStep(task, "cli", "echo from-a-terminal", time.Now().Add(-time.Minute), 0, nil, nil); err != nil {
		t.Fatal(err)
	}
	line, _ := json.Marshal(map[string]any{"n": 1, "update": "tool_call", "title": "Edit notes from an earlier turn", "kind": "edit", "status": "completed", "started": time.Now().Add(-30 * time.Second).UTC()})
	f, err := os.OpenFile(stepsPath(task), os.O_WRONLY|os.O_APPEND, 0o600)
	must(t, err)
	_, err = f.Write(append(line, '\n'))
	must(t, err)
	must(t, f.Close())

	step(t, ctx, shot, "Live after a reload has both",
		chromedp.Navigate(d.URL()),
		clickOf(`#task-list li[data-id="`+task.ID+`"]`),
		void(chromedp.Poll[bool](`document.getElementById('live').innerText.includes('echo from-a-terminal') && document.getElementById('live').innerText.includes('Edit notes from an earlier turn')`)))
	step(t, ctx, shot, "so has the Timeline, the run said to come from a terminal",
		clickOf(`#tab-timeline`),
		void(chromedp.Poll[bool](`(() => { const s = document.getElementById('timeline').innerText; return s.includes('Ran echo from-a-terminal') && s.includes('started from a terminal') && s.includes('Agent: Edit notes from an earlier turn'); })()`)))
}
