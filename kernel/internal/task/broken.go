package task

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// A task is made in tasks/.new-<id> and renamed to tasks/<id> only once it
// is whole; a task is deleted by renaming it to tasks/<id>.deleting first.
// A crash in either leaves a directory that is no task: Broken finds them.
const (
	newPrefix      = ".new-"
	deletingSuffix = ".deleting"
)

// ErrBusy: a kule process is making that task right now.
var ErrBusy = errors.New("a kule new is making this task right now")

// NewDir is the temporary directory a task with this id is made in.
func (s *Store) NewDir(id string) string { return filepath.Join(s.TasksDir(), newPrefix+id) }

// Broken is a directory under tasks/ that holds no whole task: what an
// interrupted kule new or kule delete left, or a task whose task.json
// cannot be read. It may hold a whole copy of a folder.
type Broken struct {
	ID     string `json:"id"`     // the task id it was made for
	Dir    string `json:"dir"`    // the directory to remove
	Reason string `json:"reason"` // what left it, as a person reads it
	Busy   bool   `json:"busy"`   // a kule new is still making it
}

// Broken lists the broken tasks, by id.
func (s *Store) Broken() ([]Broken, error) {
	ents, err := os.ReadDir(s.TasksDir())
	if err != nil {
		return nil, err
	}
	var out []Broken
	for _, e := range ents {
		if !e.IsDir() { // a link or a file is nothing Kule made
			continue
		}
		name := e.Name()
		dir := filepath.Join(s.TasksDir(), name)
		switch {
		case strings.HasPrefix(name, newPrefix) && isID(strings.TrimPrefix(name, newPrefix)):
			b := Broken{ID: strings.TrimPrefix(name, newPrefix), Dir: dir, Reason: "an interrupted kule new: the task was never finished"}
			b.Busy = lockHeld(filepath.Join(dir, "lock"))
			if b.Busy {
				b.Reason = "a kule new is making it right now"
			}
			out = append(out, b)
		case strings.HasSuffix(name, deletingSuffix) && isID(strings.TrimSuffix(name, deletingSuffix)):
			out = append(out, Broken{ID: strings.TrimSuffix(name, deletingSuffix), Dir: dir, Reason: "an interrupted kule delete"})
		case isID(name):
			b, err := os.ReadFile(filepath.Join(dir, "task.json"))
			var t Task
			switch {
			case errors.Is(err, os.ErrNotExist):
				out = append(out, Broken{ID: name, Dir: dir, Reason: "no task.json: an interrupted kule new"})
			case err != nil:
				out = append(out, Broken{ID: name, Dir: dir, Reason: "task.json cannot be read: " + err.Error()})
			case json.Unmarshal(b, &t) != nil:
				out = append(out, Broken{ID: name, Dir: dir, Reason: "task.json is damaged"})
			case t.ID != name:
				out = append(out, Broken{ID: name, Dir: dir, Reason: fmt.Sprintf("task.json names another task (%q)", t.ID)})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// ResolveBroken finds the broken task whose id starts with prefix.
func (s *Store) ResolveBroken(prefix string) (*Broken, error) {
	p := strings.ToLower(strings.TrimSpace(prefix))
	bs, err := s.Broken()
	if err != nil {
		return nil, err
	}
	var hits []Broken
	for _, b := range bs {
		if p != "" && strings.HasPrefix(b.ID, p) {
			hits = append(hits, b)
		}
	}
	switch len(hits) {
	case 0:
		return nil, fmt.Errorf("%w: %s (`kule list` shows the tasks)", ErrNotFound, prefix)
	case 1:
		return &hits[0], nil
	}
	return nil, fmt.Errorf("%w: %s fits %d broken tasks; type more of it", ErrAmbiguous, prefix, len(hits))
}

func isID(s string) bool { return len(s) == 8 && strings.Trim(s, "0123456789abcdef") == "" }

// lockHeld reports whether another process holds the flock on path.
func lockHeld(path string) bool {
	l, err := TryLockFile(path)
	if err != nil {
		return false // no lock file: nothing holds it
	}
	if l == nil {
		return true
	}
	l.Unlock()
	return false
}
