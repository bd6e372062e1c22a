package limits

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// pyRun starts a python3 program that waits for a line on its standard
// input before it does anything (so the supervisor has the process before
// it forks or allocates), and returns it with its output as lines.
func pyRun(t *testing.T, prog string) (*exec.Cmd, io.WriteCloser, *bufio.Scanner) {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("python3 is needed on CI: %v", err)
		}
		t.Skip("python3 is not installed")
	}
	cmd := exec.Command(py, "-c", prog)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	reaped := make(chan struct{})
	go func() { _ = cmd.Wait(); close(reaped) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-reaped
	})
	return cmd, in, bufio.NewScanner(out)
}

// line waits for the program's next line that starts with prefix; "" when
// its output ended first.
func line(sc *bufio.Scanner, prefix string) string {
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), prefix) {
			return sc.Text()
		}
	}
	return ""
}

// ticksAfter waits until the supervisor has begun and finished n more
// looks at the run after now, or it stopped; bounded so a broken run ends.
// joined waits until the supervisor moved the run into its cgroups (it
// waits cgroupJoinAfter first), so that what the program does next is
// counted there.
func joined(t *testing.T, s *Supervisor) {
	t.Helper()
	select {
	case <-s.joined:
	case <-time.After(30 * time.Second):
		t.Fatalf("the run was not moved into its cgroups within 30 s")
	}
}

func ticksAfter(t *testing.T, s *Supervisor, n int) {
	t.Helper()
	looks := func() int {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.looks
	}
	// The look under way now may have read the processes before now.
	want := looks() + n + 1
	deadline := time.Now().Add(30 * time.Second)
	for looks() < want {
		select {
		case <-s.done:
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the supervisor did not look at the run within 30 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func reasonNow(s *Supervisor) Reason {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reason
}

// Memory written to a memfd and never mapped is in no process's PSS, and a
// file written to /dev/shm and closed is in no process at all: 96 MiB of
// either under a 48 MiB limit. The memfd is caught by the supervisor's sum
// of memfds and by the run's memory cgroup, each alone; the /dev/shm file
// by the cgroup. With the counts that see it taken away the run holds the
// memory unseen.
func TestHiddenMemoryCounts(t *testing.T) {
	t.Parallel()
	const memfd = `
import os, sys, time
sys.stdin.readline()
fd = os.memfd_create("hoard")
chunk = b"\1" * (1 << 20)
for _ in range(96):
    os.write(fd, chunk)
print("ready", flush=True)
time.sleep(600)
`
	shmFile := "/dev/shm/kule-limits-test-" + strconv.Itoa(os.Getpid())
	t.Cleanup(func() { os.Remove(shmFile) })
	shm := `
import os, sys, time
sys.stdin.readline()
with open(sys.argv[1], "wb") as f:
    for _ in range(96):
        f.write(b"\1" * (1 << 20))
print("ready", flush=True)
time.sleep(600)
`
	cases := []struct {
		name        string
		prog, arg   string
		w           Watch
		stopped     bool
		needsCgroup bool
	}{
		{"memfd, counted by the sum of memfds", memfd, "", Watch{noMemCgroup: true}, true, false},
		{"memfd, counted by the cgroup", memfd, "", Watch{noMemfd: true}, true, true},
		{"memfd, both taken away", memfd, "", Watch{noMemfd: true, noMemCgroup: true}, false, false},
		{"/dev/shm file, counted by the cgroup", shm, shmFile + "-a", Watch{}, true, true},
		{"/dev/shm file, cgroup taken away", shm, shmFile + "-b", Watch{noMemCgroup: true}, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.arg != "" {
				t.Cleanup(func() { os.Remove(tc.arg) })
			}
			prog := tc.prog
			if tc.arg != "" {
				prog = "import sys; sys.argv = ['', " + strconv.Quote(tc.arg) + "]\n" + prog
			}
			cmd, in, out := pyRun(t, prog)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			w := tc.w
			w.Root = cmd.Process.Pid
			s := Start(ctx, Limits{Memory: 48 << 20}, w)
			defer func() { s.End(); s.Wait() }()
			joined(t, s)
			if tc.needsCgroup && !s.Usage().MemoryCgroup {
				if os.Geteuid() == 0 && os.Getenv("CI") != "" {
					t.Fatalf("as root on CI the run must get a memory cgroup of its own")
				}
				t.Skip("no memory cgroup is delegated here")
			}
			io.WriteString(in, "go\n")
			if line(out, "ready") == "" && !tc.stopped {
				t.Fatalf("the program ended before it filled its memory")
			}
			if tc.stopped {
				if r := s.Wait(); r != ReasonMemory {
					t.Fatalf("96 MiB hidden under a 48 MiB limit: stopped by %q, want memory", r)
				}
				if err := s.Err(); err == nil || !strings.Contains(err.Error(), "memory") {
					t.Fatalf("the stop says %v", err)
				}
				return
			}
			ticksAfter(t, s, 5)
			if r := reasonNow(s); r != ReasonNone {
				t.Fatalf("with the counts taken away the run should hold its memory unseen; it was stopped by %q", r)
			}
		})
	}
}

// memfdBytes counts a memfd once, however many processes hold it, and
// counts one that is mapped and closed.
func TestMemfdCountedOnceAndWhenOnlyMapped(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("map_files needs a privileged supervisor; unprivileged, a mapped memfd counts through PSS")
	}
	const prog = `
import os, sys, mmap, time
sys.stdin.readline()
fd = os.memfd_create("mapped")
os.ftruncate(fd, 32 << 20)
os.write(fd, b"\1" * (32 << 20))
m = mmap.mmap(fd, 4096)
os.close(fd)
print("ready", flush=True)
time.sleep(600)
`
	cmd, in, out := pyRun(t, prog)
	io.WriteString(in, "go\n")
	if line(out, "ready") == "" {
		t.Fatal("the program ended early")
	}
	if n := memfdBytes([]int{cmd.Process.Pid, cmd.Process.Pid}, true); n < 32<<20 || n > 33<<20 {
		t.Fatalf("a 32 MiB memfd, mapped by one page and closed, held by the same process twice: counted %d bytes", n)
	}
}

// A fork bomb: the program forks until the kernel refuses. Under a pids
// limit of 100 the run's cgroup refuses the forks past it; where there is
// no cgroup the count stops the run; with both taken away all 300
// processes are made.
func TestPidsLimit(t *testing.T) {
	t.Parallel()
	const prog = `
import os, sys, signal
sys.stdin.readline()
n = 0
try:
    for _ in range(300):
        pid = os.fork()
        if pid == 0:
            signal.pause()
            os._exit(0)
        n += 1
except OSError as e:
    print("refused %d %d" % (n, e.errno), flush=True)
print("made %d" % n, flush=True)
signal.pause()
`
	made := func(out *bufio.Scanner) int {
		l := line(out, "")
		for strings.HasPrefix(l, "refused ") {
			t.Logf("the program: %s", l)
			l = line(out, "")
		}
		if !strings.HasPrefix(l, "made ") {
			return -1
		}
		n, _ := strconv.Atoi(strings.TrimPrefix(l, "made "))
		return n
	}
	t.Run("cgroup", func(t *testing.T) {
		t.Parallel()
		cmd, in, out := pyRun(t, prog)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		s := Start(ctx, Limits{Pids: 100}, Watch{Root: cmd.Process.Pid})
		defer func() { s.End(); s.Wait() }()
		joined(t, s)
		if !s.Usage().PidsCgroup {
			if os.Geteuid() == 0 && os.Getenv("CI") != "" {
				t.Fatalf("as root on CI the run must get a cgroup of its own for its pids limit")
			}
			t.Skip("no cgroup with the pids controller is delegated here; the count holds the limit (see count)")
		}
		io.WriteString(in, "go\n")
		n := made(out)
		if n < 0 || n >= 100 {
			t.Fatalf("under a pids limit of 100 the program made %d processes", n)
		}
		ticksAfter(t, s, 2)
		if u := s.Usage(); u.ForksRefused == 0 || u.Threads > 100 {
			t.Fatalf("usage: %+v; want refused forks and at most 100 (made %d, pids.current %s)", u, n, readFile(s.group.pidsDir+"/pids.current"))
		}
	})
	t.Run("count", func(t *testing.T) {
		t.Parallel()
		cmd, in, out := pyRun(t, prog)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		s := Start(ctx, Limits{Pids: 100}, Watch{Root: cmd.Process.Pid, noCgroup: true})
		io.WriteString(in, "go\n")
		if r := s.Wait(); r != ReasonPids {
			t.Fatalf("without a cgroup, the count must stop the fork bomb; stopped by %q", r)
		}
		if err := s.Err(); err == nil || !strings.Contains(err.Error(), "pids") || !strings.Contains(err.Error(), "--pids") {
			t.Fatalf("the stop says %v", err)
		}
		_ = out
	})
	t.Run("taken away", func(t *testing.T) {
		t.Parallel()
		cmd, in, out := pyRun(t, prog)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		s := Start(ctx, Limits{Pids: 100}, Watch{Root: cmd.Process.Pid, noCgroup: true, noPidsCount: true})
		io.WriteString(in, "go\n")
		if n := made(out); n != 300 {
			t.Fatalf("with the limit taken away the program should make all 300 processes; it made %d", n)
		}
		ticksAfter(t, s, 2)
		if r := reasonNow(s); r != ReasonNone {
			t.Fatalf("with the limit taken away the run was stopped by %q", r)
		}
		s.End()
		s.Wait()
	})
}

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return strings.TrimSpace(string(b))
}

// TestUnprivilegedLimits runs the step-around tests again as nobody, where
// no cgroup can be made: the supervisor's counts alone must stop the fork
// bomb and the memfd. (CI runs as root; this is its unprivileged half.)
func TestUnprivilegedLimits(t *testing.T) {
	if os.Getenv("KULE_UNPRIV_LIMITS") == "1" {
		t.Skip("this is the inner run")
	}
	if os.Geteuid() != 0 {
		t.Skip("already unprivileged: the other tests cover this user")
	}
	root := t.TempDir()
	for d := root; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "limits.test")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(root, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(work, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^(TestPidsLimit|TestHiddenMemoryCounts|TestMemoryHogIsKilledAtItsLimit)$", "-test.v")
	cmd.Env = []string{"KULE_UNPRIV_LIMITS=1", "PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + work, "TMPDIR=" + work}
	cmd.Dir = work
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("as nobody: %v", err)
	}
	for _, want := range []string{"--- PASS: TestPidsLimit/count", "--- PASS: TestPidsLimit/taken_away", "--- PASS: TestHiddenMemoryCounts/memfd,_counted_by_the_sum_of_memfds", "--- SKIP: TestPidsLimit/cgroup"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("as nobody the run lacks %q", want)
		}
	}
}
