package task

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/kulehq/kule/kernel/internal/limits"
)

// FuzzLoad: any task.json either fails to load with an error that names the
// task and its task.json, and Broken lists that task as damaged; or it loads
// to a task that Save writes back and Load reads as the same task, and
// Broken does not list it.
func FuzzLoad(f *testing.F) {
	const id = "0123abcd"
	// Files the tests write, and one SaveIn writes itself.
	f.Add([]byte(`{"id":"` + id + `","folder":"/home/p/code/proj"}`))
	f.Add([]byte("{not json"))
	f.Add([]byte(`{"id":"` + id + `","folder":"/home/p/x","created":"2026-01-02T03:04:05.123456789+01:00","backend":"copy","limits":{"cpu":1.5,"time":600000000000}}`))
	f.Add([]byte(`null`))
	root := f.TempDir()
	s, err := Open(root)
	if err != nil {
		f.Fatal(err)
	}
	t0 := &Task{
		ID: id, Folder: "/home/p/code/proj", Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Name: "fix the build", Colour: "teal", Group: "web", Backend: "reflink", Order: 2,
		DiskBase: 4096, EnvTracked: []string{".env"}, Limits: limits.Limits{Memory: 1 << 30, GPU: limits.GPUOff},
	}
	if err := os.MkdirAll(filepath.Join(s.TasksDir(), id), 0o700); err != nil {
		f.Fatal(err)
	}
	if err := s.Save(t0); err != nil {
		f.Fatal(err)
	}
	saved, err := os.ReadFile(filepath.Join(s.TasksDir(), id, "task.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(saved)

	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(s.TasksDir(), id)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "task.json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
		broken, err := s.Broken()
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Load(id)
		if err != nil {
			if errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), id) || !strings.Contains(err.Error(), "task.json") {
				t.Fatalf("error does not name the task and its task.json: %v", err)
			}
			if len(broken) != 1 || broken[0].ID != id || broken[0].Dir != dir {
				t.Fatalf("Load fails (%v) but Broken lists %+v", err, broken)
			}
			return
		}
		if len(broken) != 0 {
			t.Fatalf("Load reads the task but Broken lists %+v", broken)
		}
		if got.Paths != LayoutOf(dir) {
			t.Fatalf("Paths = %+v, want the task's own layout", got.Paths)
		}
		// Load does not check that task.json's id is its directory's name,
		// and Save writes where the id says: keep the round trip in this
		// task's directory.
		got.ID = id
		if err := s.Save(got); err != nil {
			t.Fatalf("Save of what Load read: %v", err)
		}
		back, err := s.Load(id)
		if err != nil {
			saved, _ := os.ReadFile(filepath.Join(dir, "task.json"))
			t.Fatalf("what Save wrote does not load: %v\n%s", err, saved)
		}
		if d := cmp.Diff(got, back, cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("round trip changed the task (-loaded +reloaded):\n%s", d)
		}
	})
}
