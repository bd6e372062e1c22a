package daemon

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/sdk/transport"
)

// events turns the bus's events into messages. The agent's words gather
// and go out in chunks (on a pause of Flush, once two chunks gathered,
// before a tool call, at the run's end); tool calls and questions go at
// once; one piece of output longer than four chunks goes as a file.
func (h *TransportHost) events(ctx context.Context, sub <-chan Event) {
	// The bus drops a subscriber that falls behind, so one goroutine only
	// moves events into a queue of our own and another turns them into
	// messages at the chat's pace.
	var (
		mu    sync.Mutex
		queue []Event
		wake  = make(chan struct{}, 1)
	)
	// The batching goroutine has ended when events returns (Close waits
	// for events): nothing is posted or written after Close.
	batched := make(chan struct{})
	defer func() { <-batched }()
	go func() {
		defer close(batched)
		tick := time.NewTicker(h.cfg.Flush)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				h.flushAll()
			case <-wake:
			}
			mu.Lock()
			batch := queue
			queue = nil
			mu.Unlock()
			for _, e := range batch {
				h.onEvent(e)
			}
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-sub:
			if !ok {
				// Dropped all the same: take a new stream (what was missed
				// is in the app and in /kule status).
				var unsub func()
				sub, unsub = h.d.Bus.Subscribe()
				defer unsub()
				continue
			}
			mu.Lock()
			queue = append(queue, e)
			mu.Unlock()
			select {
			case wake <- struct{}{}:
			default:
			}
		}
	}
}

func (h *TransportHost) bound(taskID string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.tasks[taskID]
	return ok
}

func (h *TransportHost) onEvent(e Event) {
	if e.Type == "question" {
		if q, ok := e.Data.(Question); ok {
			h.question(q)
		}
		return
	}
	if e.Task == "" || !h.bound(e.Task) {
		return
	}
	m, _ := e.Data.(map[string]any)
	switch e.Type {
	case "run":
		switch m["state"] {
		case "start":
			h.flush(e.Task)
			what := fmt.Sprint(m["agent"])
			if p, ok := m["prompt"].(string); ok {
				what += ": " + firstWords(p, 30)
			} else if c, ok := m["command"].(string); ok {
				what = "$ " + c
			}
			id := h.nextID("stop-" + e.Task)
			h.mu.Lock()
			h.stops[id] = e.Task
			h.mu.Unlock()
			h.post(transport.Event{ID: id, Task: e.Task, Question: &transport.Question{Text: "▶ " + what, Choices: []string{ChoiceStop}}})
		case "end":
			h.flush(e.Task)
			var parts []string
			if s, _ := m["stop_reason"].(string); s != "" {
				parts = append(parts, s)
			}
			if s, _ := m["summary"].(string); s != "" {
				parts = append(parts, s)
			}
			if s, _ := m["limit"].(string); s != "" {
				parts = append(parts, "stopped by the "+s+" limit")
			}
			if s, _ := m["error"].(string); s != "" {
				parts = append(parts, s)
			}
			h.say("", "", e.Task, "■ The run ended: "+strings.Join(parts, " · ")+". Reply to go on, `/kule commit` to review and commit, `/kule rollback` to discard.")
		}
	case "agent":
		switch m["type"] {
		case string(kernel.AgentEventText):
			h.gather(e.Task, fmt.Sprint(m["text"]))
		case string(kernel.AgentEventStepStart):
			h.flush(e.Task)
			if s, ok := m["step"].(map[string]any); ok {
				line := "→ " + fmt.Sprint(s["title"])
				if c, _ := s["command"].(string); c != "" {
					line += " ($ " + c + ")"
				}
				h.say("", "", e.Task, line)
			}
		case string(kernel.AgentEventStepEnd):
			if s, ok := m["step"].(map[string]any); ok && s["status"] == "failed" {
				h.flush(e.Task)
				h.say("", "", e.Task, "✗ "+fmt.Sprint(s["title"])+" failed")
			}
		case string(kernel.AgentEventNotice):
			h.flush(e.Task)
			h.say("", "", e.Task, fmt.Sprint(m["text"]))
		}
	case "output":
		h.gather(e.Task, fmt.Sprint(m["text"]))
	}
}

func (h *TransportHost) gather(taskID, s string) {
	h.mu.Lock()
	b := h.text[taskID]
	if b == nil {
		b = &strings.Builder{}
		h.text[taskID] = b
	}
	b.WriteString(s)
	big := b.Len() >= 2*h.cfg.Chunk
	h.mu.Unlock()
	if big { // streaming on without a pause: post what gathered, in chunks
		h.flush(taskID)
	}
}

func (h *TransportHost) flushAll() {
	h.mu.Lock()
	var ids []string
	for id, b := range h.text {
		if b.Len() > 0 {
			ids = append(ids, id)
		}
	}
	h.mu.Unlock()
	for _, id := range ids {
		h.flush(id)
	}
}

// flush posts what gathered of a task's words: in chunks of at most Chunk
// characters, cut at a line's end where one is near, or as one file when
// longer than four chunks.
func (h *TransportHost) flush(taskID string) {
	h.mu.Lock()
	b := h.text[taskID]
	var s string
	if b != nil {
		s = b.String()
		b.Reset()
	}
	h.mu.Unlock()
	s = strings.TrimSpace(s)
	if s == "" {
		return
	}
	if len(s) > 4*h.cfg.Chunk && h.info.Has(transport.CapFiles) {
		h.post(transport.Event{Task: taskID, File: &transport.File{Name: "output-" + taskID + ".txt", Content: []byte(s), Comment: firstWords(s, 20) + " …"}})
		return
	}
	for _, c := range Chunks(s, h.cfg.Chunk) {
		h.say("", "", taskID, c)
	}
}

// Chunks cuts s into pieces of at most n bytes, at a line's end (or else a
// space) where one is in the last quarter of a piece, never inside a UTF-8
// sequence.
func Chunks(s string, n int) []string {
	var out []string
	for len(s) > n {
		cut := n
		for cut > 0 && !utf8Start(s[cut]) {
			cut--
		}
		if i := strings.LastIndexByte(s[:cut], '\n'); i >= cut*3/4 {
			cut = i + 1
		} else if i := strings.LastIndexByte(s[:cut], ' '); i >= cut*3/4 {
			cut = i + 1
		}
		if cut == 0 {
			cut = n
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// question posts a waiting question with its buttons in the task's thread
// (opening one when the task has none), and says how it was settled.
func (h *TransportHost) question(q Question) {
	if q.State == Waiting {
		text := q.Title
		if q.Detail != "" {
			text += "\n" + q.Detail
		}
		text += fmt.Sprintf("\nTask %s · waits until %s UTC; unanswered, it is refused.", q.Task, q.Deadline.UTC().Format("15:04"))
		h.mu.Lock()
		h.asked[q.ID] = "" // shown (its message's ref comes once it is delivered)
		h.mu.Unlock()
		h.post(transport.Event{ID: q.ID, Task: q.Task, Question: &transport.Question{Text: text, Choices: []string{ChoiceApprove, ChoiceDeny}}})
		return
	}
	h.mu.Lock()
	ref, ok := h.asked[q.ID]
	delete(h.asked, q.ID)
	h.mu.Unlock()
	if !ok {
		return // not one this transport showed
	}
	var what string
	switch {
	case q.State == Approved && q.By == "person":
		what = "✔ Approved"
	case q.State == Approved:
		what = "✔ Approved by a remembered rule"
	case q.State == Expired:
		what = "✘ Refused: the wait ran out"
	default:
		what = "✘ Denied"
		if q.By != "person" {
			what += " (" + q.By + ")"
		}
	}
	text := what + ": " + q.Title
	if h.info.Has(transport.CapEdit) && ref != "" {
		h.postEdit(transport.Event{ID: q.ID, Task: q.Task, Notice: &transport.Notice{Text: text}}, ref)
		return
	}
	h.say("", "", q.Task, text)
}

type edit struct {
	ev       transport.Event
	replaces string
}

func (h *TransportHost) postEdit(ev transport.Event, replaces string) {
	h.mu.Lock()
	h.edits = append(h.edits, edit{ev, replaces})
	h.mu.Unlock()
	h.post(transport.Event{ID: editMarker})
}

// editMarker in the outbox says "send the next queued edit".
const editMarker = "\x00edit"

// send delivers the outbox in order. A task's event goes to its thread; a
// task's first message with no thread opens one.
func (h *TransportHost) send(ctx context.Context) {
	for {
		var ev transport.Event
		select {
		case <-ctx.Done():
			return
		case ev = <-h.out:
		}
		replaces := ""
		if ev.ID == editMarker {
			h.mu.Lock()
			if len(h.edits) == 0 {
				h.mu.Unlock()
				continue
			}
			e := h.edits[0]
			h.edits = h.edits[1:]
			h.mu.Unlock()
			ev, replaces = e.ev, e.replaces
		}
		h.mu.Lock()
		if p, ok := h.tasks[ev.Task]; ok && ev.Task != "" && ev.Thread == "" {
			ev.Thread, ev.Channel = p.Thread, p.Channel
		}
		h.mu.Unlock()
		d, err := h.tr.Deliver(ctx, ev, replaces)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			h.d.log.Warn("transport deliver failed", "transport", h.cfg.Name, "task", ev.Task, "err", err)
			continue
		}
		h.mu.Lock()
		if ev.Task != "" {
			if _, ok := h.tasks[ev.Task]; !ok && d.Thread != "" {
				h.tasks[ev.Task] = threadOf{Thread: d.Thread, Channel: ev.Channel, Agent: h.cfg.Agent}
				h.byThread[d.Thread] = ev.Task
				h.saveThreadsLocked()
			}
		}
		if _, shown := h.asked[ev.ID]; shown && ev.Question != nil && replaces == "" {
			h.asked[ev.ID] = d.Ref
		}
		h.mu.Unlock()
	}
}
