package task

import (
	"errors"
)

// ErrDone is returned when a task is committed twice.
var ErrDone = errors.New("task: already committed")

// Open opens a task.
func Open(id string) *Task {
	return &Task{ID: id}
}

// Task is one task.
type Task struct {
	ID   string
	done bool
}

// Commit applies the task.
func (t *Task) Commit() error {
	if t.done {
		return ErrDone
	}
	t.done = true
	return nil
}

func (t *Task) String() string {
	return "task " + t.ID
}
