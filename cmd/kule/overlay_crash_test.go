package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kulehq/kule/kernel"
)

// On the overlay backend a kule killed after the command and before its
// fold loses nothing: the command's changes wait in the upper layer, the
// next status folds them, and they commit as a whole.
func TestCrashBeforeTheFoldLosesNothing(t *testing.T) {
	if err := kernel.OverlayAvailable(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the overlay backend is unavailable on CI: %v", err)
		}
		t.Skipf("the overlay backend is unavailable here: %v", err)
	}
	t.Setenv("KULE_BACKEND", "overlay")
	c, id, folder := setup(t) // its change runs over the overlay and is folded
	copyDir := filepath.Join(c.home, "tasks", id, "copy")
	out, err := c.kule("exec.ran", "exec", id, "--", "sh", "-c", "echo late > late.txt; rm notes/plan.md")
	if !killed(err) {
		t.Fatalf("exec was not killed after the command: %v\n%s", err, out)
	}
	if _, err := os.Lstat(filepath.Join(copyDir, "late.txt")); err == nil {
		t.Fatal("the command's write reached the copy before its fold")
	}
	st := c.must("status", id)
	for _, want := range []string{"late.txt", "notes/plan.md"} {
		if !strings.Contains(st, want) {
			t.Fatalf("status after the crash does not show %s:\n%s", want, st)
		}
	}
	if names, err := os.ReadDir(filepath.Join(c.home, "tasks", id, "overlay", "upper")); err != nil || len(names) != 0 {
		t.Fatalf("the upper layer after status: %v, %v", names, err)
	}
	after := snapshot(t, copyDir)
	c.must("commit", id, "--approve")
	if d := cmp.Diff(after, snapshot(t, folder)); d != "" {
		t.Fatalf("commit after the crash (-copy +folder):\n%s", d)
	}
}
