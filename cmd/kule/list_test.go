package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kulehq/kule/kernel"
)

// TestListShowsWhereTasksMeet: kule list shows each task's changes and
// where it meets the other task and the person's edits in the folder — by
// file after kule exec, by name once kule status named them — from the
// tasks' summaries; after a commit it looks at the task again.
func TestListShowsWhereTasksMeet(t *testing.T) {
	dir := t.TempDir()
	c := cli{t: t, home: filepath.Join(dir, "home")}
	folder := filepath.Join(dir, "folder")
	os.MkdirAll(folder, 0o755)
	os.WriteFile(filepath.Join(folder, "notes.txt"), []byte("Plan\nweek\n\nLater\nparty\n"), 0o644)
	os.WriteFile(filepath.Join(folder, "todo.bin"), []byte("x\n"), 0o644)
	newTask := func() string {
		id, _, _ := strings.Cut(strings.TrimPrefix(c.must("new", folder), "task "), " ")
		return id
	}
	a, b := newTask(), newTask()
	c.must("exec", a, "--", "sh", "-c", `printf 'Plan\nmonth\n\nLater\nparty\n' > notes.txt; echo y > todo.bin`)
	c.must("exec", b, "--", "sh", "-c", `printf 'Plan\nyear\n\nLater\nparty\n' > notes.txt`)
	out := c.must("list")
	for _, want := range []string{
		a + "  -  " + folder + "  2 file changes: +0 ~2 -0  to review · as of just now\n    task " + b + " changes them too: notes.txt\n",
		b + "  -  " + folder + "  1 file change: +0 ~1 -0   to review · as of just now\n    task " + a + " changes them too: notes.txt\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("list after exec lacks %q:\n%s", want, out)
		}
	}
	// The person edits todo.bin by hand; both statuses name what changed.
	os.WriteFile(filepath.Join(folder, "todo.bin"), []byte("by hand\n"), 0o644)
	c.must("status", a)
	c.must("status", b)
	out = c.must("list")
	for _, want := range []string{
		"    task " + b + " changes them too: notes.txt · paragraph Plan\n    you changed them too, by hand in the folder: todo.bin\n",
		"    task " + a + " changes them too: notes.txt · paragraph Plan\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("list after status lacks %q:\n%s", want, out)
		}
	}
	var rows []struct {
		ID      string        `json:"id"`
		Changes int           `json:"changes"`
		Named   bool          `json:"named"`
		Meets   []kernel.Meet `json:"meets"`
	}
	if err := json.Unmarshal([]byte(c.must("list", "--json")), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("list --json: %+v", rows)
	}
	for _, r := range rows {
		if r.ID == a && (r.Changes != 2 || !r.Named || len(r.Meets) != 2 || r.Meets[0].Task != b || !r.Meets[1].ByHand) {
			t.Errorf("list --json row of %s: %+v", a, r)
		}
	}
	// b commits: its base moved, so list looks at it again (nothing left),
	// and a no longer meets it.
	c.must("commit", b)
	out = c.must("list")
	if !strings.Contains(out, b+"  -  "+folder+"  0 file changes: +0 ~0 -0  clean") || strings.Contains(out, "task "+b+" changes them too") {
		t.Errorf("list after b's commit:\n%s", out)
	}
}
