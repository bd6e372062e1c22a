package extensions

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/kulehq/kule/sdk/extension"
)

// Pool keeps extension hosts running for a long-lived process (the
// daemon), so a command or a review's notes pay a call, not a host's start:
//
//   - one loaded host per approved extension, reused while its package
//     (sha256) and its settings stay as they were, and dropped for a fresh
//     one when either changes, when a call fails or when the extension is no
//     longer loadable (its approval taken back, disabled, removed);
//   - one spare host started ahead and not yet loaded, so the first use of
//     an extension pays only the load. A spare takes one extension's scripts
//     and is then that extension's alone: the kernel still knows which
//     extension each bridge call comes from by the host it came on, never
//     by what the host says.
//
// Calls to one extension are run one at a time (its runtime is one event
// loop anyway), so the calls it refused can be told per call.
type Pool struct {
	Runner *Runner

	// trustKept, in tests only, reuses a kept host without reading the
	// package and its approval again: the guard taken away.
	trustKept bool

	mu      sync.Mutex
	closed  bool
	loaded  map[string]*pooled
	spare   *spareHost
	warming bool
	warmed  chan struct{} // closed when a warming ends; nil when none runs
}

type pooled struct {
	mu    sync.Mutex // one call at a time
	x     *Running
	sha   string
	sets  string
	stale atomic.Bool // a call failed: the host is being dropped
}

type spareHost struct {
	client *extension.HostClient
	kill   func()
}

// Warm starts the spare host in the background if there is none; Ready
// waits for it. A failed start leaves no spare (the next use starts a host
// of its own, and reports why if that fails too).
func (p *Pool) Warm() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.warmLocked()
}

func (p *Pool) warmLocked() {
	if p.closed || p.spare != nil || p.warming || p.Runner.Launch == nil {
		return
	}
	p.warming = true
	done := make(chan struct{})
	p.warmed = done
	go func() {
		defer close(done)
		c, kill, err := p.Runner.Launch(context.Background())
		p.mu.Lock()
		defer p.mu.Unlock()
		p.warming = false
		if err != nil {
			return
		}
		if p.closed || p.spare != nil {
			kill()
			return
		}
		p.spare = &spareHost{client: c, kill: kill}
	}()
}

// Ready waits until no warming runs (or ctx ends) and says whether a spare
// host is waiting.
func (p *Pool) Ready(ctx context.Context) bool {
	p.mu.Lock()
	ch := p.warmed
	p.mu.Unlock()
	if ch != nil {
		select {
		case <-ch:
		case <-ctx.Done():
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.spare != nil
}

// Running is the number of loaded hosts.
func (p *Pool) Running() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.loaded)
}

// get returns the pooled host of id, loading it (into the spare when one
// waits) when there is none or the one there no longer matches the
// installed, approved package and its settings.
func (p *Pool) get(ctx context.Context, id string) (*pooled, error) {
	if p.trustKept {
		p.mu.Lock()
		e := p.loaded[id]
		p.mu.Unlock()
		if e != nil {
			return e, nil
		}
	}
	pkg, err := p.Runner.Store.Load(id)
	if err != nil {
		p.drop(id)
		return nil, err
	}
	sets, err := p.Runner.Store.Settings(id)
	if err != nil {
		return nil, err
	}
	setsKey := string(sets)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errors.New("extensions: the pool is closed")
	}
	if e := p.loaded[id]; e != nil && !e.stale.Load() && e.sha == pkg.SHA256 && e.sets == setsKey {
		p.mu.Unlock()
		return e, nil
	}
	old := p.loaded[id]
	delete(p.loaded, id)
	spare := p.spare
	p.spare = nil
	p.mu.Unlock()
	if old != nil {
		go func() { old.mu.Lock(); old.x.Close(); old.mu.Unlock() }()
	}
	var x *Running
	if spare != nil {
		x, err = p.Runner.load(ctx, pkg, spare.client, spare.kill)
	} else {
		x, err = p.Runner.start(ctx, pkg)
	}
	p.Warm()
	if err != nil {
		return nil, err
	}
	e := &pooled{x: x, sha: pkg.SHA256, sets: setsKey}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		x.Close()
		return nil, errors.New("extensions: the pool is closed")
	}
	if cur := p.loaded[id]; cur != nil {
		// Another caller loaded it meanwhile: keep one.
		go x.Close()
		return cur, nil
	}
	if p.loaded == nil {
		p.loaded = map[string]*pooled{}
	}
	p.loaded[id] = e
	return e, nil
}

func (p *Pool) drop(id string) {
	p.mu.Lock()
	e := p.loaded[id]
	delete(p.loaded, id)
	p.mu.Unlock()
	if e != nil {
		go func() { e.mu.Lock(); e.x.Close(); e.mu.Unlock() }()
	}
}

// Use runs f with the loaded host of id, one call at a time, and returns
// the calls the extension made that were refused during f. A failure of f
// drops the host, so the next use starts a fresh one (a runtime stopped at
// its memory ceiling is gone from its host).
func (p *Pool) Use(ctx context.Context, id string, f func(*Running) error) (denied []string, err error) {
	e, err := p.get(ctx, id)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	if e.stale.Load() {
		e.mu.Unlock()
		return p.Use(ctx, id, f)
	}
	before := len(e.x.Denied())
	err = f(e.x)
	all := e.x.Denied()
	if len(all) > before {
		denied = all[before:]
	}
	if err != nil {
		e.stale.Store(true)
	}
	e.mu.Unlock()
	if err != nil {
		p.mu.Lock()
		if p.loaded[id] == e {
			delete(p.loaded, id)
		}
		p.mu.Unlock()
		go func() { e.mu.Lock(); e.x.Close(); e.mu.Unlock() }()
	}
	return denied, err
}

// Close ends every host of the pool.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	loaded, spare := p.loaded, p.spare
	p.loaded, p.spare = nil, nil
	ch := p.warmed
	p.mu.Unlock()
	for _, e := range loaded {
		e.mu.Lock()
		e.x.Close()
		e.mu.Unlock()
	}
	if spare != nil {
		spare.kill()
	}
	if ch != nil {
		<-ch
	}
}

// String names what the pool holds, for logs.
func (p *Pool) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return fmt.Sprintf("%d loaded, spare %v", len(p.loaded), p.spare != nil)
}
