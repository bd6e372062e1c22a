package memory

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func finishedT(task, cmd string, at time.Time, exit int) PendingRun {
	how, tail := EndDone, ""
	if exit != 0 {
		how, tail = EndFailed, "main.go:3: undefined: x"
	}
	return PendingRun{
		Start: Start{Task: task, Folder: "/f", Kind: KindExec, Prompt: cmd, Started: at},
		End:   &End{Ended: at.Add(2 * time.Second), Exit: &exit, How: how, ErrorTail: tail, Effects: map[string]int{"modify": 1}, Paths: []string{"main.go"}},
	}
}

// TestPendingRunsAreTakenIn: commands that recorded their runs in the
// pending log are in the memory once a store is opened — with their exit,
// their failure filed, the fix that followed linked — and the log is empty.
func TestPendingRunsAreTakenIn(t *testing.T) {
	home := t.TempDir()
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	for _, f := range []PendingRun{finishedT("t", "go build", at, 1), finishedT("t", "go build", at.Add(time.Minute), 0)} {
		if err := AppendPending(home, f); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(Path(home)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("appending opened the database: %v", err)
	}
	s, err := Open(Path(home))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n, err := s.TakePending(ctx); n != 2 || err != nil {
		t.Fatalf("took %d runs: %v", n, err)
	}
	runs, err := s.Runs(ctx, Filter{Task: "t"})
	if err != nil || len(runs) != 2 {
		t.Fatalf("runs %d: %v", len(runs), err)
	}
	failed, fixed := runs[1], runs[0] // newest first
	if failed.How != EndFailed || *failed.Exit != 1 || !failed.Started.Equal(at) || failed.Ended.Sub(failed.Started) != 2*time.Second {
		t.Fatalf("the failed run reads %+v", failed)
	}
	if fixed.How != EndDone || fixed.Paths[0] != "main.go" || fixed.Effects["modify"] != 1 {
		t.Fatalf("the fixing run reads %+v", fixed)
	}
	fs, err := s.FailuresOfRun(ctx, failed.ID)
	if err != nil || len(fs) != 1 {
		t.Fatalf("the failure was not filed: %v %v", fs, err)
	}
	if fi, err := os.Stat(PendingPath(home)); err != nil || fi.Size() != 0 {
		t.Fatalf("the log was not emptied: %v", err)
	}
}

// TestPendingRunsAreTakenInOnce: a reader that stopped after the database's
// commit and before emptying the log leaves the same lines for the next;
// they are not recorded a second time.
func TestPendingRunsAreTakenInOnce(t *testing.T) {
	home := t.TempDir()
	f := finishedT("t", "make", time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), 0)
	s, err := Open(Path(home))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for range 2 {
		if err := AppendPending(home, f); err != nil {
			t.Fatal(err)
		}
		if _, err := s.TakePending(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if runs, _ := s.Runs(ctx, Filter{Task: "t"}); len(runs) != 1 {
		t.Fatalf("the same run was recorded %d times", len(runs))
	}
}

// TestPendingStartThenEnd: a start taken in alone is a run still running
// (or one killed, which Interrupted finds); its end, taken in later, ends
// that same run, and an end taken in twice ends it once.
func TestPendingStartThenEnd(t *testing.T) {
	home := t.TempDir()
	s, err := Open(Path(home))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	whole := finishedT("t", "go test ./...", time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), 1)
	if err := AppendPending(home, PendingRun{Start: whole.Start}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TakePending(ctx); err != nil {
		t.Fatal(err)
	}
	runs, _ := s.Runs(ctx, Filter{Task: "t"})
	if len(runs) != 1 || !runs[0].Ended.IsZero() {
		t.Fatalf("after its start: %+v", runs)
	}
	for range 2 {
		if err := AppendPending(home, whole); err != nil {
			t.Fatal(err)
		}
		if _, err := s.TakePending(ctx); err != nil {
			t.Fatal(err)
		}
	}
	runs, _ = s.Runs(ctx, Filter{Task: "t"})
	if len(runs) != 1 || runs[0].How != EndFailed || runs[0].Ended.IsZero() {
		t.Fatalf("after its end: %+v", runs)
	}
	if fs, _ := s.FailuresOfRun(ctx, runs[0].ID); len(fs) != 1 {
		t.Fatalf("the end taken in twice filed %d failures", len(fs))
	}
}

// TestDamagedPendingLinesAreSaid: a damaged line is dropped and said; the
// runs around it are recorded.
func TestDamagedPendingLinesAreSaid(t *testing.T) {
	home := t.TempDir()
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	if err := AppendPending(home, finishedT("t", "a", at, 0)); err != nil {
		t.Fatal(err)
	}
	long := `{"start":{"Task":"` + strings.Repeat("x", maxPendingLine) + `"}}`
	junk := "not json\n" + `{"start":{"Task":"t"}}` + "\n" + long + "\n"
	if err := os.WriteFile(PendingPath(home), append(mustRead(t, PendingPath(home)), junk...), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := AppendPending(home, finishedT("t", "b", at.Add(time.Minute), 0)); err != nil {
		t.Fatal(err)
	}
	s, err := Open(Path(home))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n, err := s.TakePending(ctx)
	if n != 2 || err == nil || !strings.Contains(err.Error(), "3 damaged lines dropped") {
		t.Fatalf("took %d: %v", n, err)
	}
}

// TestPendingAppendsWhileTakenAreKept: lines appended by commands while
// another process takes the log in are all recorded, none lost between
// the read and the emptying.
func TestPendingAppendsWhileTakenAreKept(t *testing.T) {
	home := t.TempDir()
	s, err := Open(Path(home))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	const writers, each = 4, 25
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := AppendPending(home, finishedT("t", "cmd", at.Add(time.Duration(w*each+i)*time.Second), 0)); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for taking := true; taking; {
		select {
		case <-done:
			taking = false
		default:
		}
		if _, err := s.TakePending(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if runs, _ := s.Runs(ctx, Filter{Task: "t", Limit: 1000}); len(runs) != writers*each {
		t.Fatalf("%d of %d runs recorded", len(runs), writers*each)
	}
}

// TestPendingRefusesLink: the log is never written or read through a
// symbolic link; without the check, the append lands at the link's target.
func TestPendingRefusesLink(t *testing.T) {
	home := t.TempDir()
	target := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.WriteFile(target, []byte("the person's file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, PendingPath(home)); err != nil {
		t.Fatal(err)
	}
	f := finishedT("t", "a", time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), 0)
	if err := AppendPending(home, f); !errors.Is(err, ErrLink) {
		t.Fatalf("append through a link: %v", err)
	}
	s, err := Open(Path(home))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.TakePending(ctx); !errors.Is(err, ErrLink) {
		t.Fatalf("take through a link: %v", err)
	}
	if got := string(mustRead(t, target)); got != "the person's file\n" {
		t.Fatalf("the link's target changed: %q", got)
	}
	// The attack without the guard: a plain append follows the link.
	w, err := os.OpenFile(PendingPath(home), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.WriteString("x\n")
	w.Close()
	if got := string(mustRead(t, target)); got == "the person's file\n" {
		t.Fatal("unguarded, the append should have reached the link's target")
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzParsePending: any bytes parse without a panic, and every run they
// give is one the store can record and writes back as the same line.
func FuzzParsePending(f *testing.F) {
	good, _ := json.Marshal(finishedT("t", "go test", time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), 1))
	f.Add(append(good, '\n'))
	f.Add([]byte("not json\n\n{}\n"))
	f.Add([]byte(`{"start":{"Task":"t","Kind":"exec","Started":"2026-01-01T00:00:00Z"},"end":{"Ended":"2025-01-01T00:00:00Z"}}`))
	f.Add(append(append(good, "\r\n"...), good...))
	f.Fuzz(func(t *testing.T, b []byte) {
		runs, damaged, err := ParsePending(bytes.NewReader(b))
		if err != nil || damaged < 0 {
			t.Fatalf("%d damaged: %v", damaged, err)
		}
		for _, r := range runs {
			if !r.valid() {
				t.Fatalf("an invalid run was given: %+v", r)
			}
			line, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			again, d, _ := ParsePending(bytes.NewReader(line))
			if len(again) != 1 || d != 0 {
				t.Fatalf("%s does not read back", line)
			}
		}
	})
}
