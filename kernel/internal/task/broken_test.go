package task

import (
	"os"
	"path/filepath"
	"testing"
)

// A task in the making is broken only once no kule new holds its lock; ids
// of broken tasks are never handed out again.
func TestBrokenSaysWhatIsBeingMade(t *testing.T) {
	t.Parallel()
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := s.NewDir("0123abcd")
	if err := os.MkdirAll(filepath.Join(dir, "copy"), 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := LockFile(filepath.Join(dir, "lock"))
	if err != nil {
		t.Fatal(err)
	}
	bs, err := s.Broken()
	if err != nil || len(bs) != 1 || !bs[0].Busy || bs[0].ID != "0123abcd" {
		t.Fatalf("while locked: %+v, %v", bs, err)
	}
	if s.idFree("0123abcd") {
		t.Fatal("the id of a task being made is handed out again")
	}
	l.Unlock()
	if bs, _ = s.Broken(); len(bs) != 1 || bs[0].Busy {
		t.Fatalf("once unlocked: %+v", bs)
	}
	if b, err := s.ResolveBroken("0123"); err != nil || b.Dir != dir {
		t.Fatalf("ResolveBroken: %+v, %v", b, err)
	}
	if ids, _ := s.IDs(); len(ids) != 0 {
		t.Fatalf("a broken task is listed as a task: %v", ids)
	}
}
