package daemon

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kulehq/kule/kernel"
)

// One host serves every review until the plugins change; a host in use is
// kept until its review ends; after Close a review gets a host of its own.
func TestSharedHostOnePerDaemon(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	opened := 0
	s := NewSharedHost(home, func() *kernel.PluginHost {
		opened++
		return kernel.NewPluginHost(home, kernel.PluginHostOptions{})
	})
	h1, r1 := s.acquire()
	h2, r2 := s.acquire()
	r2()
	h3, r3 := s.acquire()
	r3()
	if h1 != h2 || h2 != h3 || opened != 1 {
		t.Fatalf("three reviews opened %d hosts, want 1", opened)
	}
	// A plugin installed: the next review gets a new host; the old one
	// stays with the review still using it.
	must(t, os.MkdirAll(filepath.Join(home, "plugins", "differ-x"), 0o755))
	h4, r4 := s.acquire()
	if h4 == h1 || opened != 2 {
		t.Fatalf("after a plugin was installed: same host %v, %d opened", h4 == h1, opened)
	}
	if s.old[h1] != true || s.users[h1] != 1 {
		t.Fatalf("the old host in use was not kept for its review: old %v users %d", s.old[h1], s.users[h1])
	}
	r1()
	if _, kept := s.users[h1]; kept {
		t.Fatal("the old host outlived its last review")
	}
	must(t, s.Close())
	if s.users[h4] != 1 || !s.old[h4] {
		t.Fatal("Close ended a host a review still uses")
	}
	r4()
	h5, r5 := s.acquire()
	r5()
	if h5 == h4 || opened != 3 {
		t.Fatalf("a review after Close: same host %v, %d opened", h5 == h4, opened)
	}
}

// The daemon closes the Reviewer's shared host as it stops.
func TestDaemonClosesTheSharedHost(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	hosts := NewSharedHost(home, func() *kernel.PluginHost { return kernel.NewPluginHost(home, kernel.PluginHostOptions{}) })
	d := startDaemon(t, Config{Reviewer: DiffReviewer{Hosts: hosts}})
	hosts.acquire()
	d.Shutdown()
	hosts.mu.Lock()
	defer hosts.mu.Unlock()
	if !hosts.closed || hosts.h != nil {
		t.Fatal("the shared plugin host is still open after the daemon stopped")
	}
}
