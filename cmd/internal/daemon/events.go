package daemon

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// Event is one thing that happened, sent to every open event stream.
type Event struct {
	Seq  uint64    `json:"seq"`
	Type string    `json:"type"` // task, run, output, step, commit, undo, rollback, question, connection, limits, budget, …
	Task string    `json:"task,omitempty"`
	Time time.Time `json:"time"`
	Data any       `json:"data,omitempty"`
}

// Bus fans events out to subscribers. A subscriber that falls behind by more
// than its buffer is dropped (its stream ends; the app reconnects and reloads).
type Bus struct {
	mu   sync.Mutex
	seq  uint64
	subs map[chan Event]struct{}
}

// NewBus returns an empty bus.
func NewBus() *Bus { return &Bus{subs: map[chan Event]struct{}{}} }

// Publish sends an event. It never blocks.
func (b *Bus) Publish(typ, taskID string, data any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	ev := Event{Seq: b.seq, Type: typ, Task: taskID, Time: time.Now().UTC(), Data: data}
	for c := range b.subs {
		select {
		case c <- ev:
		default:
			delete(b.subs, c)
			close(c)
		}
	}
}

// Listening says whether any stream is subscribed (what only a watcher
// reads need not be measured).
func (b *Bus) Listening() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs) > 0
}

// Subscribe returns a channel of events and a function that ends it.
func (b *Bus) Subscribe() (<-chan Event, func()) {
	c := make(chan Event, 256)
	b.mu.Lock()
	b.subs[c] = struct{}{}
	b.mu.Unlock()
	return c, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if _, ok := b.subs[c]; ok {
			delete(b.subs, c)
			close(c)
		}
	}
}

// closeStreams ends every subscription: the event streams return, so a
// server shutting down does not wait on pages that would listen for ever
// (a page hears the stream end and says it lost the daemon).
func (b *Bus) closeStreams() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for c := range b.subs {
		delete(b.subs, c)
		close(c)
	}
}

// serveSSE streams the bus as Server-Sent Events until the client goes.
func (b *Bus) serveSSE(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "events: streaming unsupported", http.StatusInternalServerError)
		return
	}
	c, stop := b.Subscribe()
	defer stop()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	fmt.Fprintf(w, "retry: 2000\n: kule events\n\n")
	fl.Flush()
	ping := time.NewTicker(25 * time.Second)
	defer ping.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-ping.C:
			fmt.Fprint(w, ": ping\n\n")
			fl.Flush()
		case ev, ok := <-c:
			if !ok {
				return
			}
			b, err := json.Marshal(ev)
			if err != nil {
				continue
			}
			fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", ev.Seq, ev.Type, b)
			fl.Flush()
		}
	}
}
