package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/kulehq/kule/kernel"
)

// SharedHost keeps one plugin host for the daemon's life, so that a Review
// refresh reuses the differ processes the last one started instead of
// starting each plugin again (a handshake, and a sandbox, a plugin). The
// host is made again when Stamp changes (a plugin installed, approved or
// removed) and closed when the daemon stops; a review still using the old
// one keeps it until it ends. The zero value is not usable: set Open.
type SharedHost struct {
	Open  func() *kernel.PluginHost
	Stamp func() string // nil: the host is never made again

	mu     sync.Mutex
	h      *kernel.PluginHost
	stamp  string
	users  map[*kernel.PluginHost]int
	old    map[*kernel.PluginHost]bool // replaced: closed once its last user is done
	closed bool
}

// NewSharedHost keeps one host made by open, made again when the plugins
// installed under kuleHome or their approvals change.
func NewSharedHost(kuleHome string, open func() *kernel.PluginHost) *SharedHost {
	return &SharedHost{Open: open, Stamp: func() string { return PluginsStamp(kuleHome) }}
}

// PluginsStamp changes when a plugin is installed, approved or removed under
// kuleHome: it is the size, time and inode of plugins/ and of its approvals.
func PluginsStamp(kuleHome string) string {
	dir := filepath.Join(kuleHome, "plugins")
	return stampOf(dir) + "|" + stampOf(kernel.PluginApprovalsPath(kuleHome))
}

func stampOf(p string) string {
	fi, err := os.Stat(p)
	if err != nil {
		return "-"
	}
	ino := uint64(0)
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ino = st.Ino
	}
	return fmt.Sprintf("%d.%d.%d", fi.Size(), fi.ModTime().UnixNano(), ino)
}

// acquire returns the current host and a release to call when done with
// it. After Close it returns a host of the call's own, closed on release.
func (s *SharedHost) acquire() (*kernel.PluginHost, func()) {
	stamp := ""
	if s.Stamp != nil {
		stamp = s.Stamp()
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		h := s.Open()
		return h, h.Close
	}
	if s.users == nil {
		s.users, s.old = map[*kernel.PluginHost]int{}, map[*kernel.PluginHost]bool{}
	}
	if s.h != nil && stamp != s.stamp {
		s.retire(s.h)
		s.h = nil
	}
	if s.h == nil {
		s.h, s.stamp = s.Open(), stamp
	}
	h := s.h
	s.users[h]++
	s.mu.Unlock()
	return h, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.users[h]--
		if s.users[h] == 0 && s.old[h] {
			delete(s.users, h)
			delete(s.old, h)
			h.Close()
		}
	}
}

// retire closes h now if no review uses it, else when the last one ends.
// s.mu is held.
func (s *SharedHost) retire(h *kernel.PluginHost) {
	if s.users[h] == 0 {
		delete(s.users, h)
		h.Close()
		return
	}
	s.old[h] = true
}

// Close ends the host's plugin processes (a review still running keeps its
// host until it ends). Later reviews get a host of their own.
func (s *SharedHost) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.h != nil {
		if s.users == nil {
			s.users, s.old = map[*kernel.PluginHost]int{}, map[*kernel.PluginHost]bool{}
		}
		s.retire(s.h)
		s.h = nil
	}
	return nil
}
