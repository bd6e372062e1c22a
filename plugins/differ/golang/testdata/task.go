// Package task keeps one agent's work on a copy of a folder.
package task

import (
	"errors"
	"fmt"
	"sync"
)

// Errors of the task store.
var (
	// ErrNotRunning is returned when a task is no longer running.
	ErrNotRunning = errors.New("task: not running")
	ErrUnknown    = errors.New("task: unknown") // by id
)

// MaxFiles bounds the files one task may touch.
const MaxFiles = 10_000

const (
	Running State = iota
	Committed
	Discarded
)

// State is where a task is in its life.
type State int

type (
	// ID names a task.
	ID string

	// Store keeps tasks by id.
	Store[T any] struct {
		mu    sync.Mutex
		tasks map[ID]*T
	}
)

// Task is one task.
type Task struct {
	ID    ID
	State State
}

// Effect is what a command did.
type Effect interface {
	Path() string
}

var defaultStore = NewStore[Task]()

// NewStore makes an empty store.
func NewStore[T any]() *Store[T] {
	return &Store[T]{tasks: map[ID]*T{}}
}

// Get returns the task with id.
func (s *Store[T]) Get(id ID) (*T, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tasks[id]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknown, id)
	}
	return t, nil
}

// Commit applies the task's effects.
func (t *Task) Commit(effects []Effect) error {
	if t.State != Running {
		return ErrNotRunning
	}
	t.State = Committed
	return nil
}

func (t Task) String() string { return fmt.Sprintf("task %s", t.ID) }

func (s State) String() string {
	switch s {
	case Running:
		return "running"
	case Committed:
		return "committed"
	}
	return "discarded"
}

func init() {
	_ = defaultStore
}

func init() {
	registerDefaults()
}

var _ fmt.Stringer = Task{}
