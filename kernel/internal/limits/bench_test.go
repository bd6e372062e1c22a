package limits

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// cpuOf is the processor time used so far by who (RUSAGE_SELF or
// RUSAGE_CHILDREN): on a loaded machine wall time says little.
func cpuOf(who int) time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(who, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportCPU(b *testing.B, who int, before time.Duration) {
	b.ReportMetric(float64((cpuOf(who)-before).Microseconds())/float64(b.N), "cpu-µs/op")
}

// BenchmarkOneLook is what the supervisor does every tick: find the run's
// tree in /proc, add up its processor time and its PSS. Its peer,
// BenchmarkPsEveryProcess, is procps's `ps -e -o pid,ppid,time,rss` reading
// the same /proc (its process start included: that is what using it costs).
func BenchmarkOneLook(b *testing.B) {
	cmd := exec.Command("sh", "-c", "sleep 600 & sleep 600 & wait")
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	s := &Supervisor{w: Watch{Root: cmd.Process.Pid}}
	b.ResetTimer()
	before := cpuOf(syscall.RUSAGE_SELF)
	for i := 0; i < b.N; i++ {
		p := s.pids()
		_ = cpuSeconds(p)
		_ = pss(p)
	}
	reportCPU(b, syscall.RUSAGE_SELF, before)
}

func BenchmarkPsEveryProcess(b *testing.B) {
	before := cpuOf(syscall.RUSAGE_CHILDREN)
	defer func() { reportCPU(b, syscall.RUSAGE_CHILDREN, before) }()
	for i := 0; i < b.N; i++ {
		c := exec.Command("ps", "-e", "-o", "pid,ppid,time,rss")
		c.Stdout, c.Stderr = nil, os.Stderr
		if err := c.Run(); err != nil {
			b.Fatal(err)
		}
	}
}
