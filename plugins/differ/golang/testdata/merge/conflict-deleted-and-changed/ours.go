package task

import (
	"errors"
)

// ErrDone is returned when a task is committed twice.
var ErrDone = errors.New("task: already committed")

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

// Open opens a task.
func Open(id string) *Task {
	return &Task{ID: id}
}
