package limits

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// start runs script; one goroutine reaps it, and the test's cleanup kills
// whatever is left and waits for that reaper.
func start(t *testing.T, dir string, script string) *exec.Cmd {
	t.Helper()
	cmd, _ := startReaped(t, dir, script)
	return cmd
}

// startReaped is start, with a channel closed once the process ended (as
// a runner returns once its command did).
func startReaped(t *testing.T, dir string, script string) (*exec.Cmd, <-chan struct{}) {
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
	return cmd, reaped
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

// All of a task's runs together: the first run's time is kept with the
// task, the second is stopped when the two reach the limit, and a third is
// refused before it starts.
func TestTaskTimeCountsEveryRunOfTheTask(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	lim := Limits{TaskTime: 3 * time.Second}
	run := func(script string) error {
		r, err := Supervise(context.Background(), lim, Task{Dir: dir}, nil)
		if err != nil {
			return err
		}
		cmd, ended := startReaped(t, dir, script)
		r.Started(cmd.Process.Pid)
		<-ended // the runner returns, then the run's watch ends
		return r.Wait()
	}
	if err := run("sleep 1"); err != nil {
		t.Fatalf("a first run within the task's time was stopped: %v", err)
	}
	used, err := LoadTaskTime(TaskTimeFile(dir))
	if err != nil || used < time.Second {
		t.Fatalf("after a one-second run the task kept %s (%v)", used, err)
	}
	err = run("sleep 120")
	if !errors.Is(err, ErrStopped) || !strings.Contains(err.Error(), "task-time") {
		t.Fatalf("the second run was not stopped by the task's time: %v", err)
	}
	if used, _ := LoadTaskTime(TaskTimeFile(dir)); used < lim.TaskTime {
		t.Fatalf("the task kept %s after being stopped at %s", used, lim.TaskTime)
	}
	err = run("true")
	if !errors.Is(err, ErrTaskTimeSpent) || !strings.Contains(err.Error(), "--task-time") {
		t.Fatalf("a run started with the task's time used up: %v", err)
	}
}

func TestDamagedTaskTimeRefusesTheRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(TaskTimeFile(dir), []byte("{half"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Supervise(context.Background(), Limits{TaskTime: time.Hour}, Task{Dir: dir}, nil); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("a damaged task-time file let the run start: %v", err)
	}
	if b, _ := os.ReadFile(TaskTimeFile(dir)); string(b) != "{half" {
		t.Fatalf("the damaged file was changed: %q", b)
	}
}

func TestAQuestionWaitingIsNeverIdle(t *testing.T) {
	t.Parallel()
	c := NewClock()
	release := c.Hold()
	cmd := start(t, t.TempDir(), "sleep 2")
	r, _ := supervise(t, cmd, Limits{Idle: 300 * time.Millisecond}, Watch{Activity: c.Last})
	if r != ReasonNone {
		t.Fatalf("a run waiting on the person was stopped as %q", r)
	}
	release()
	cmd = start(t, t.TempDir(), "sleep 120")
	if r, _ := supervise(t, cmd, Limits{Idle: 300 * time.Millisecond}, Watch{Activity: c.Last}); r != ReasonIdle {
		t.Fatalf("after the answer an idle run went on (%q)", r)
	}
}

func TestTaskLimitsOverTheHomes(t *testing.T) {
	t.Parallel()
	home := Limits{CPU: 2, Memory: 1 << 30, Idle: time.Minute, GPU: GPUOff}
	task := Limits{Memory: 2 << 30, TaskTime: time.Hour, GPU: GPUOn}
	got := task.Over(home)
	want := Limits{CPU: 2, Memory: 2 << 30, Idle: time.Minute, TaskTime: time.Hour, GPU: GPUOn}
	if got != want {
		t.Fatalf("Over = %+v, want %+v", got, want)
	}
	for _, c := range []struct {
		gpu     string
		sandbox bool
		want    bool
	}{{"", false, false}, {"", true, true}, {GPUOff, false, true}, {GPUOn, true, false}} {
		if got := (Limits{GPU: c.gpu}).NoGPU(c.sandbox); got != c.want {
			t.Errorf("GPU %q with the sandbox's no_gpu %v: NoGPU = %v", c.gpu, c.sandbox, got)
		}
	}
	if (Limits{GPU: GPUOff}).Supervised() {
		t.Error("a GPU setting alone needs no supervisor")
	}
}

// A command an agent's terminal starts runs beside the agent, not under
// it: Started adds its tree to the run, so its memory counts too.
func TestATerminalBesideTheAgentCounts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r, err := Supervise(context.Background(), Limits{Memory: 64 << 20}, Task{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	agent, ended := startReaped(t, dir, "sleep 120")
	r.Started(agent.Process.Pid)
	term := start(t, dir, `python3 -c 'b = bytearray(400 << 20); import time; time.sleep(60)'`)
	r.Started(term.Process.Pid)
	<-ended
	if err := r.Wait(); !errors.Is(err, ErrStopped) || !strings.Contains(err.Error(), "memory") {
		t.Fatalf("a memory hog beside the agent: %v", err)
	}
}

// The two ways of finding a run's processes agree, threads' children and
// grandchildren included.
func TestTreeByChildrenMatchesAScan(t *testing.T) {
	t.Parallel()
	if !haveChildren() {
		t.Skip("this kernel keeps no /proc children lists (CONFIG_PROC_CHILDREN); Tree scans /proc")
	}
	cmd := start(t, t.TempDir(), "sh -c 'sleep 120 & sleep 120 & wait' & python3 -c 'import threading, subprocess; threading.Thread(target=lambda: subprocess.run([\"sleep\", \"120\"])).start()' & wait")
	var byChildren, byScan []int
	for i := 0; i < 3000; i++ { // until every process has started (30 s ends a broken run)
		byChildren, byScan = treeByChildren(cmd.Process.Pid), treeByScan(cmd.Process.Pid)
		if len(byScan) >= 6 && len(byChildren) == len(byScan) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	sort.Ints(byChildren)
	sort.Ints(byScan)
	if len(byScan) < 6 || fmt.Sprint(byChildren) != fmt.Sprint(byScan) {
		t.Fatalf("by children %v, by scan %v (want the same 6 or more)", byChildren, byScan)
	}
}

func FuzzLoadTaskTime(f *testing.F) {
	f.Add([]byte(`{"used_ns":3600000000000,"updated":"2026-12-01T09:00:00Z"}`))
	f.Add([]byte(`{"used_ns":-1}`))
	f.Add([]byte(`{"used_ns":1e30}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), TaskTimeName)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if d, err := LoadTaskTime(p); err == nil && d < 0 {
			t.Fatalf("LoadTaskTime(%q) = %s", b, d)
		}
	})
}

// The run's time is the task's as soon as its first process has ended,
// before the caller (busy with the run's effects) ends the watch: with no
// tick due for an hour and End never called, the time is written all the
// same.
func TestTaskTimeIsKeptWhenTheRootEndsBeforeEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd, ended := startReaped(t, dir, "sleep 0.2")
	s := Start(context.Background(), Limits{}, Watch{Root: cmd.Process.Pid, TaskTimeFile: TaskTimeFile(dir), Tick: time.Hour})
	t.Cleanup(func() { s.End(); s.Wait() })
	<-ended
	select {
	case <-s.done:
	case <-time.After(time.Minute):
		t.Fatal("the watch went on after its root ended, with End not called")
	}
	if used, err := LoadTaskTime(TaskTimeFile(dir)); err != nil || used < 200*time.Millisecond {
		t.Fatalf("after a 0.2 s run the task kept %s (%v)", used, err)
	}
}
