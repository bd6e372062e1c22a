package extensions

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/kulehq/kule/sdk/extension"
)

// TestPoolKeepsHostsAndChecksEachUse: the pool keeps an extension's host
// between calls (three calls, at most two hosts started: the spare and the
// one loaded), drops a host whose call failed, and reads the package and
// its approval at every use, so a package changed since approval is not
// run by the host kept for the approved one. With that check taken away
// (trustKept), the kept host runs it.
func TestPoolKeepsHostsAndChecksEachUse(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	s := New(home)
	manifest := `{"id":"me.x","name":"X","version":"1.0.0","permissions":["commands","tasks.read"],"commands":[{"id":"call","title":"Call"}]}`
	install := func(main string) {
		t.Helper()
		if _, err := s.Install(pack(t, map[string]string{"extension.json": manifest, "main.js": main})); err != nil {
			t.Fatal(err)
		}
	}
	install("1")
	if _, err := s.Approve("me.x", ""); err != nil {
		t.Fatal(err)
	}
	var launches atomic.Int32
	fake := fakeLauncher(t, home)
	r := &Runner{Store: s, Services: &services{}, Launch: func(ctx context.Context) (*extension.HostClient, func(), error) {
		launches.Add(1)
		return fake(ctx)
	}}
	ctx := context.Background()
	call := func(p *Pool) (json.RawMessage, error) {
		var v json.RawMessage
		_, err := p.Use(ctx, "me.x", func(x *Running) error {
			var err error
			v, err = x.Run(ctx, "call", json.RawMessage(`["tasks.list", []]`))
			return err
		})
		return v, err
	}
	p := &Pool{Runner: r}
	defer p.Close()
	for range 3 {
		if v, err := call(p); err != nil || string(v) != `"answered tasks.list"` {
			t.Fatalf("call: %s %v", v, err)
		}
	}
	if n := launches.Load(); n > 2 || p.Running() != 1 {
		t.Fatalf("three calls: %d hosts started, %d loaded", n, p.Running())
	}
	// A failed call drops the host.
	if _, err := p.Use(ctx, "me.x", func(x *Running) error { _, err := x.Run(ctx, "other", nil); return err }); !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("undeclared command: %v", err)
	}
	if p.Running() != 0 {
		t.Fatal("the host whose call failed is still kept")
	}
	if _, err := call(p); err != nil {
		t.Fatal(err)
	}

	install("2 // changed")
	if _, err := call(p); !errors.Is(err, ErrNotApproved) {
		t.Fatalf("a changed package through the kept host: %v; want it to wait for approval", err)
	}
	if p.Running() != 0 {
		t.Fatal("the host of the package no longer approved is still kept")
	}

	t.Run("guard off", func(t *testing.T) {
		install("1")
		if _, err := s.Approve("me.x", ""); err != nil {
			t.Fatal(err)
		}
		loose := &Pool{Runner: r, trustKept: true}
		defer loose.Close()
		if _, err := call(loose); err != nil {
			t.Fatal(err)
		}
		install("2 // changed")
		if v, err := call(loose); err != nil || string(v) != `"answered tasks.list"` {
			t.Fatalf("with the check taken away the kept host should have answered: %s %v", v, err)
		}
	})
}

// TestPoolSpareIsOneExtensionsAlone: a spare host, once loaded, belongs to
// that extension; the next extension gets a host of its own.
func TestPoolSpareIsOneExtensionsAlone(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	s := New(home)
	for _, id := range []string{"me.a", "me.b"} {
		m := `{"id":"` + id + `","name":"X","version":"1.0.0","permissions":["commands"],"commands":[{"id":"call","title":"Call"}]}`
		if _, err := s.Install(pack(t, map[string]string{"extension.json": m, "main.js": "1"})); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Approve(id, ""); err != nil {
			t.Fatal(err)
		}
	}
	p := &Pool{Runner: &Runner{Store: s, Services: &services{}, Launch: fakeLauncher(t, home)}}
	defer p.Close()
	p.Warm()
	if !p.Ready(context.Background()) {
		t.Fatal("no spare host after Warm")
	}
	seen := map[*Running]string{}
	for _, id := range []string{"me.a", "me.b", "me.a"} {
		if _, err := p.Use(context.Background(), id, func(x *Running) error {
			if x.Manifest.ID != id {
				t.Errorf("%s was handed the host of %s", id, x.Manifest.ID)
			}
			if other, ok := seen[x]; ok && other != id {
				t.Errorf("one host served %s and %s", other, id)
			}
			seen[x] = id
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if len(seen) != 2 || p.Running() != 2 {
		t.Fatalf("%d hosts for two extensions, %d kept", len(seen), p.Running())
	}
}
