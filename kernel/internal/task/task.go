// Package task keeps Kule's tasks under $KULE_HOME/tasks: their ids, their
// task.json, the layout of each task's directory, and the locks that serialise
// two kule processes working on one task or one folder.
package task

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/kulehq/kule/kernel/internal/atomicfile"
	"github.com/kulehq/kule/kernel/internal/limits"
)

// Errors a caller can test for.
var (
	ErrNotFound  = errors.New("no such task")
	ErrAmbiguous = errors.New("task id is ambiguous")
	ErrBadID     = errors.New("not a task id")
)

// Task is what task.json holds.
type Task struct {
	ID      string    `json:"id"`
	Folder  string    `json:"folder"` // absolute, symlinks resolved
	Created time.Time `json:"created"`
	Name    string    `json:"name,omitempty"`
	Colour  string    `json:"colour,omitempty"`
	Group   string    `json:"group,omitempty"`
	Backend string    `json:"backend"` // workspace backend: "reflink" or "copy"
	Order   int       `json:"order,omitempty"`

	// DiskBase is what the copy took when the task was made: a disk limit
	// bounds growth beyond it.
	DiskBase int64 `json:"disk_base,omitempty"`

	// EnvTracked lists the settings files (.env, …) git tracked in the
	// folder when the task was made: masking cannot hide their values.
	EnvTracked []string `json:"env_tracked,omitempty"`

	// Limits are this task's own; a zero field takes the home's setting.
	Limits limits.Limits `json:"limits,omitzero"`

	// Paths is filled in when the task is loaded; it is not stored.
	Paths Paths `json:"-"`
}

// Paths is the layout of one task's directory (ARCHITECTURE.md §2).
type Paths struct {
	Dir         string // $KULE_HOME/tasks/<id>
	Copy        string // what the agent sees and changes
	Base        string // the folder as it was at the last sync
	Home        string // the task's home layer
	Tmp         string // the task's own /tmp
	Checkpoints string // checkpoints/ (store.git and records)
	History     string // history.jsonl
	Journal     string // a commit in flight
	Lock        string // flock held while a kule process works on the task
}

// LayoutOf returns the paths of the task directory dir.
func LayoutOf(dir string) Paths {
	return Paths{
		Dir:         dir,
		Copy:        filepath.Join(dir, "copy"),
		Base:        filepath.Join(dir, "base"),
		Home:        filepath.Join(dir, "home"),
		Tmp:         filepath.Join(dir, "tmp"),
		Checkpoints: filepath.Join(dir, "checkpoints"),
		History:     filepath.Join(dir, "history.jsonl"),
		Journal:     filepath.Join(dir, "journal"),
		Lock:        filepath.Join(dir, "lock"),
	}
}

// Store is $KULE_HOME.
type Store struct {
	Root string
}

// DefaultRoot is $KULE_HOME, or ~/.kule when it is not set.
func DefaultRoot() (string, error) {
	if h := os.Getenv("KULE_HOME"); h != "" {
		return filepath.Abs(h)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("kule home: set KULE_HOME or HOME: %w", err)
	}
	return filepath.Join(home, ".kule"), nil
}

// Open returns the store at root, creating its directories (0700).
func Open(root string) (*Store, error) {
	for _, d := range []string{root, filepath.Join(root, "tasks"), filepath.Join(root, "keys"), filepath.Join(root, "locks")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("kule home: %w", err)
		}
	}
	return &Store{Root: root}, nil
}

// TasksDir is $KULE_HOME/tasks.
func (s *Store) TasksDir() string { return filepath.Join(s.Root, "tasks") }

// KeysDir is $KULE_HOME/keys, hidden from every sandbox.
func (s *Store) KeysDir() string { return filepath.Join(s.Root, "keys") }

// FolderLockPath is the lock file that serialises commits to one folder from
// every task of this home. It lives in Kule's home, never in the folder.
func (s *Store) FolderLockPath(folder string) string {
	sum := sha256.Sum256([]byte(folder))
	return filepath.Join(s.Root, "locks", hex.EncodeToString(sum[:8])+".lock")
}

// NewID returns a fresh task id: 8 hex characters not used in this store.
func (s *Store) NewID() (string, error) {
	for range 100 {
		var b [4]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", err
		}
		id := hex.EncodeToString(b[:])
		if s.idFree(id) {
			return id, nil
		}
	}
	return "", errors.New("new task: could not find a free id")
}

// idFree reports whether no task, task in the making or leftover of one
// holds id.
func (s *Store) idFree(id string) bool {
	for _, name := range []string{id, newPrefix + id, id + deletingSuffix} {
		if _, err := os.Lstat(filepath.Join(s.TasksDir(), name)); !errors.Is(err, os.ErrNotExist) {
			return false
		}
	}
	return true
}

// Save writes task.json atomically.
func (s *Store) Save(t *Task) error {
	if idGuard && !isID(t.ID) {
		return fmt.Errorf("%w: %q: not saved (task ids are 8 hex characters)", ErrBadID, t.ID)
	}
	return s.SaveIn(filepath.Join(s.TasksDir(), t.ID), t)
}

// SaveIn writes t's task.json atomically into dir: a task being made is
// saved in its temporary directory before that is renamed into place.
func (s *Store) SaveIn(dir string, t *Task) error {
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, "task.json"), append(b, '\n'), 0o600)
}

// idGuard turns on the checks that a task.json's id is its directory's
// and a well-formed id; only a test turns it off, to show the attack they
// stop.
var idGuard = true

// Load reads the task with exactly this id.
func (s *Store) Load(id string) (*Task, error) {
	dir := filepath.Join(s.TasksDir(), id)
	b, err := os.ReadFile(filepath.Join(dir, "task.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return nil, err
	}
	var t Task
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("task %s: task.json is damaged: %w", id, err)
	}
	// The id inside names where Save writes the task back: one that is
	// not this directory's would send that write elsewhere, even out of
	// Kule's home.
	if idGuard && t.ID != id {
		return nil, fmt.Errorf("task %s: task.json is damaged: it names task %q (nothing was changed; put %q back as its id, or kule delete %s)", id, t.ID, id, id)
	}
	t.Paths = LayoutOf(dir)
	return &t, nil
}

// Resolve finds the task whose id starts with prefix. An unknown prefix is
// ErrNotFound, a prefix that fits two tasks ErrAmbiguous (naming them).
func (s *Store) Resolve(prefix string) (*Task, error) {
	p := strings.ToLower(strings.TrimSpace(prefix))
	if p == "" || strings.Trim(p, "0123456789abcdef") != "" || len(p) > 8 {
		return nil, fmt.Errorf("%w: %q (task ids are 8 hex characters; `kule list` shows them)", ErrBadID, prefix)
	}
	ids, err := s.IDs()
	if err != nil {
		return nil, err
	}
	var hits []string
	for _, id := range ids {
		if strings.HasPrefix(id, p) {
			hits = append(hits, id)
		}
	}
	switch len(hits) {
	case 0:
		return nil, fmt.Errorf("%w: %s (`kule list` shows the tasks)", ErrNotFound, prefix)
	case 1:
		return s.Load(hits[0])
	}
	return nil, fmt.Errorf("%w: %s fits %s; type more of it", ErrAmbiguous, prefix, strings.Join(hits, ", "))
}

// IDs lists the ids of every task, sorted.
func (s *Store) IDs() ([]string, error) {
	ents, err := os.ReadDir(s.TasksDir())
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range ents {
		if e.IsDir() && len(e.Name()) == 8 && strings.Trim(e.Name(), "0123456789abcdef") == "" {
			if _, err := os.Stat(filepath.Join(s.TasksDir(), e.Name(), "task.json")); err == nil {
				ids = append(ids, e.Name())
			}
		}
	}
	sort.Strings(ids)
	return ids, nil
}

// List loads every task, in the person's order and then by creation time.
func (s *Store) List() ([]*Task, error) {
	ids, err := s.IDs()
	if err != nil {
		return nil, err
	}
	var ts []*Task
	for _, id := range ids {
		t, err := s.Load(id)
		if errors.Is(err, ErrNotFound) {
			continue // deleted since IDs looked
		}
		if err != nil {
			continue // damaged: Broken lists it, and kule delete removes it
		}
		ts = append(ts, t)
	}
	sort.SliceStable(ts, func(i, j int) bool {
		if ts[i].Order != ts[j].Order {
			return ts[i].Order < ts[j].Order
		}
		return ts[i].Created.Before(ts[j].Created)
	})
	return ts, nil
}
