package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"

	"github.com/kulehq/kule/kernel"
)

// Which thread is which task's is kept in $KULE_HOME/transports/<name>.json,
// so that replies in a task's thread still reach it after the daemon
// restarts. It is Kule's own file, in a place no task writes.

type threadsFile struct {
	Threads map[string]threadOf `json:"threads"` // task id → its thread
}

var taskIDPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{8}$`) })

func (h *TransportHost) statePath() string {
	return filepath.Join(h.d.home, "transports", h.cfg.Name+".json")
}

// DecodeThreads reads a transports/<name>.json strictly: task ids of 8 hex
// characters, each with a thread; a damaged file is an error.
func DecodeThreads(b []byte) (map[string]threadOf, error) {
	var f threadsFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("transport threads: %w", err)
	}
	seen := map[string]bool{}
	for id, p := range f.Threads {
		if !taskIDPattern().MatchString(id) || p.Thread == "" || seen[p.Thread] {
			return nil, fmt.Errorf("transport threads: task %q with thread %q", id, p.Thread)
		}
		seen[p.Thread] = true
	}
	if f.Threads == nil {
		f.Threads = map[string]threadOf{}
	}
	return f.Threads, nil
}

// loadThreads reads the kept threads; a missing file is none, a damaged
// one is logged and set aside (replies in old threads are then not read).
func (h *TransportHost) loadThreads() {
	b, err := os.ReadFile(h.statePath())
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	var ts map[string]threadOf
	if err == nil {
		ts, err = DecodeThreads(b)
	}
	if err != nil {
		h.d.log.Warn("transport threads not read; old threads are not followed", "file", h.statePath(), "err", err)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, p := range ts {
		h.tasks[id] = p
		h.byThread[p.Thread] = id
	}
}

// saveThreadsLocked writes the threads; h.mu is held.
func (h *TransportHost) saveThreadsLocked() {
	b, err := json.MarshalIndent(threadsFile{Threads: h.tasks}, "", "  ")
	if err == nil {
		if err = os.MkdirAll(filepath.Dir(h.statePath()), 0o700); err == nil {
			err = kernel.WriteFileAtomic(h.statePath(), append(b, '\n'), 0o600)
		}
	}
	if err != nil {
		h.d.log.Warn("transport threads not saved", "file", h.statePath(), "err", err)
	}
}
