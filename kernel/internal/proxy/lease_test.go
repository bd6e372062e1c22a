package proxy

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestLeaseGivesTheValueAndFailsClosed: a leased secret's value is asked of
// its lease at each request (so a renewed token goes out), and once the
// lease gives none the request is refused and nothing reaches the host.
// With the guard off the first value goes on being sent after the lease is
// spent: a standing key.
func TestLeaseGivesTheValueAndFailsClosed(t *testing.T) {
	t.Parallel()
	for _, guardOn := range []bool{true, false} {
		w := newWorld(t)
		if !guardOn {
			w.off = guardSpentLease
		}
		var mu sync.Mutex
		value, spent := "tok-first-0001", false
		var released atomic.Int32
		w.secret.Value = value
		w.secret.Lease = func() (string, error) {
			mu.Lock()
			defer mu.Unlock()
			if spent {
				return "", errors.New("the lease of STRIPE_KEY is spent; nothing was sent")
			}
			return value, nil
		}
		w.secret.Release = func() { released.Add(1) }
		w.start(t)
		ph := w.placeholder()
		curl := func() string {
			out, _ := runTool(t, w, w.dir, "curl", "-sS", "-H", "Authorization: Bearer "+ph, "https://"+apiHost+"/echo")
			return out
		}
		curl()
		mu.Lock()
		value = "tok-renewed-0002"
		mu.Unlock()
		curl()
		reqs := w.rec.all()
		if len(reqs) != 2 || reqs[0].Header.Get("Authorization") != "Bearer tok-first-0001" || reqs[1].Header.Get("Authorization") != "Bearer tok-renewed-0002" {
			t.Fatalf("the host should see the lease's value at each request; saw %d requests", len(reqs))
		}
		mu.Lock()
		spent = true
		mu.Unlock()
		out := curl()
		reqs = w.rec.all()
		if guardOn {
			if len(reqs) != 2 || !strings.Contains(out, "spent") {
				t.Fatalf("a spent lease must refuse the request and send nothing; host saw %d, command got %q", len(reqs), out)
			}
		} else if len(reqs) != 3 || reqs[2].Header.Get("Authorization") != "Bearer tok-first-0001" {
			t.Fatalf("unguarded, the stale first value should still go out (the attack); host saw %d", len(reqs))
		}
		w.proxy.Close()
		w.proxy.Close()
		if released.Load() != 1 {
			t.Fatalf("Release called %d times at Close, want 1", released.Load())
		}
	}
}
