package limits

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// start runs script; one goroutine reaps it, and the test's cleanup kills
// whatever is left and waits for that reaper.
func start(t *testing.T, dir string, script string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // so cleanup ends its children too
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	reaped := make(chan struct{})
	go func() { _ = cmd.Wait(); close(reaped) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-reaped
	})
	return cmd
}

func supervise(t *testing.T, cmd *exec.Cmd, lim Limits, w Watch) (Reason, Usage) {
	t.Helper()
	w.Root = cmd.Process.Pid
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := Start(ctx, lim, w)
	r := s.Wait()
	return r, s.Usage()
}

// A processor hog is slowed to its share, not stopped: measured from /proc,
// it used no more than its share of the wall time it ran.
func TestCPUHogIsHeldToItsShare(t *testing.T) {
	t.Parallel()
	cmd := start(t, t.TempDir(), "while :; do :; done & while :; do :; done & wait")
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	s := Start(ctx, Limits{CPU: 0.25}, Watch{Root: cmd.Process.Pid})
	if r := s.Wait(); r != ReasonNone {
		t.Fatalf("a CPU limit stopped the run (%s); it must only slow it", r)
	}
	u := s.Usage()
	wall := time.Since(began).Seconds()
	// The share is 0.25 core; allow for the tick it takes to notice.
	if u.CPUSeconds > 0.25*wall+0.5 {
		t.Fatalf("the hog used %.2f CPU-seconds in %.1f s: more than its 0.25-core share", u.CPUSeconds, wall)
	}
	if u.Processes < 3 {
		t.Fatalf("saw %d processes; the hog's children must count too", u.Processes)
	}
}

func TestMemoryHogIsKilledAtItsLimit(t *testing.T) {
	t.Parallel()
	cmd := start(t, t.TempDir(), `python3 -c 'b = bytearray(400 << 20); import time; time.sleep(60)'`)
	r, u := supervise(t, cmd, Limits{Memory: 64 << 20}, Watch{})
	if r != ReasonMemory {
		t.Fatalf("reason = %q, want memory (usage %+v)", r, u)
	}
}

func TestDiskFillerIsStoppedAndNoFileExceedsTheLimit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// The runner sets RLIMIT_FSIZE before it execs the command (Spec.FileSizeLimit);
	// prlimit(1) does the same here.
	cmd := start(t, dir, "prlimit --fsize=8388608 sh -c 'head -c 50000000 /dev/zero > big'; head -c 50000000 /dev/zero > other; sleep 60")
	r, _ := supervise(t, cmd, Limits{Disk: 8 << 20}, Watch{DiskPaths: []string{dir}, DiskBase: DiskUsage(dir)})
	if r != ReasonDisk {
		t.Fatalf("reason = %q, want disk", r)
	}
	st, err := os.Stat(filepath.Join(dir, "big"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() > 8<<20 {
		t.Fatalf("a file grew to %d bytes past the %d-byte limit", st.Size(), 8<<20)
	}
}

func TestIdleRunStops(t *testing.T) {
	t.Parallel()
	cmd := start(t, t.TempDir(), "sleep 120")
	if r, _ := supervise(t, cmd, Limits{Idle: 500 * time.Millisecond}, Watch{}); r != ReasonIdle {
		t.Fatalf("reason = %q, want idle", r)
	}
}

func TestWaitingOnThePersonIsNotIdle(t *testing.T) {
	t.Parallel()
	cmd := start(t, t.TempDir(), "sleep 2")
	r, _ := supervise(t, cmd, Limits{Idle: 300 * time.Millisecond}, Watch{Activity: time.Now})
	if r != ReasonNone {
		t.Fatalf("a run waiting on a question was stopped as %q", r)
	}
}

func TestTimeLimitStopsARun(t *testing.T) {
	t.Parallel()
	cmd := start(t, t.TempDir(), "while :; do :; done")
	if r, _ := supervise(t, cmd, Limits{Time: 500 * time.Millisecond}, Watch{}); r != ReasonTime {
		t.Fatalf("reason = %q, want time", r)
	}
}

func TestParseBytes(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{"2048": 2048, "4G": 4 << 30, "512M": 512 << 20, "10GiB": 10 << 30, "1.5k": 1536} {
		if got, err := ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "x", "-1G", "G"} {
		if _, err := ParseBytes(in); err == nil {
			t.Errorf("ParseBytes(%q) accepted it", in)
		}
	}
}

func FuzzParseBytes(f *testing.F) {
	f.Add("4G")
	f.Add("1.5kib")
	f.Fuzz(func(t *testing.T, s string) {
		if n, err := ParseBytes(s); err == nil && n < 0 {
			t.Fatalf("ParseBytes(%q) = %d", s, n)
		}
	})
}
