package transport

import (
	"context"
	"strconv"
	"sync"
	"time"
)

// Inbox is the Receive side most transports need: the chat's client pushes
// what arrives, Receive hands it out by cursor. The cursor is the count of
// items handed out, so a host that calls again with an old cursor gets the
// same items again (at most max are kept).
type Inbox struct {
	mu    sync.Mutex
	items []Incoming
	first int // the cursor of items[0]
	max   int
	wake  chan struct{}
}

// NewInbox keeps at most max items waiting (older ones are dropped).
func NewInbox(max int) *Inbox {
	if max <= 0 {
		max = 1000
	}
	return &Inbox{max: max, wake: make(chan struct{})}
}

// Push adds what a person wrote.
func (b *Inbox) Push(in Incoming) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.items = append(b.items, in)
	if over := len(b.items) - b.max; over > 0 {
		b.items = append([]Incoming(nil), b.items[over:]...)
		b.first += over
	}
	close(b.wake)
	b.wake = make(chan struct{})
}

// Receive implements Transport.Receive.
func (b *Inbox) Receive(ctx context.Context, cursor string, waitMillis int64) (Batch, error) {
	at, _ := strconv.Atoi(cursor)
	var timer <-chan time.Time
	if waitMillis > 0 {
		t := time.NewTimer(time.Duration(waitMillis) * time.Millisecond)
		defer t.Stop()
		timer = t.C
	}
	for {
		b.mu.Lock()
		if at < b.first {
			at = b.first
		}
		end := b.first + len(b.items)
		if at > end {
			at = end
		}
		if at < end || waitMillis <= 0 {
			out := append([]Incoming(nil), b.items[at-b.first:]...)
			b.mu.Unlock()
			return Batch{Incoming: out, Cursor: strconv.Itoa(end)}, nil
		}
		wake := b.wake
		b.mu.Unlock()
		select {
		case <-wake:
		case <-timer:
			return Batch{Cursor: strconv.Itoa(at)}, nil
		case <-ctx.Done():
			return Batch{Cursor: strconv.Itoa(at)}, ctx.Err()
		}
	}
}
