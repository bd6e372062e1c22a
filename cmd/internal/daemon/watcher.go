package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// watcher notices what kule commands in a terminal did while the daemon
// runs (the CLI works on its own; the kernel's locks keep both safe) and
// tells the app: it compares the tasks directory, each task.json, each
// history and each sandbox.jsonl every two seconds.
type watcher struct {
	d     *Daemon
	every time.Duration
	seen  map[string]string
}

func newWatcher(d *Daemon) *watcher {
	return &watcher{d: d, every: 2 * time.Second, seen: map[string]string{}}
}

func (w *watcher) run(ctx context.Context, done <-chan struct{}) {
	w.scan(false)
	t := time.NewTicker(w.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-done:
			return
		case <-t.C:
			w.scan(true)
		}
	}
}

func stamp(p string) string {
	st, err := os.Stat(p)
	if err != nil {
		return "-"
	}
	return fmt.Sprintf("%d.%d", st.Size(), st.ModTime().UnixNano())
}

func (w *watcher) scan(tell bool) {
	ids, err := w.d.k.TaskIDs()
	if err != nil {
		return
	}
	now := map[string]string{}
	for _, id := range ids {
		dir := w.d.k.TaskDir(id)
		now[id] = stamp(filepath.Join(dir, "task.json")) + "|" + stamp(filepath.Join(dir, "history.jsonl")) + "|" + stamp(filepath.Join(dir, "sandbox.jsonl"))
	}
	if tell {
		for id, s := range now {
			if w.seen[id] != s {
				w.d.Bus.Publish("task", id, map[string]any{"action": "changed"})
			}
		}
		for id := range w.seen {
			if _, ok := now[id]; !ok {
				w.d.Bus.Publish("task", id, map[string]any{"action": "delete"})
			}
		}
	}
	w.seen = now
}
