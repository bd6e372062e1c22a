package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kulehq/kule/cmd/internal/daemon/client"
)

// BenchmarkStatusThroughDaemon compares a task's status asked of the daemon
// over its socket (JSON, policy and review hooks included) with the peer it
// wraps: kernel.Status called in process. It reports the ratio.
func BenchmarkStatusThroughDaemon(b *testing.B) {
	d := startDaemonB(b)
	folder := b.TempDir()
	for i := range 500 {
		os.WriteFile(filepath.Join(folder, fmt.Sprintf("f%03d.txt", i)), []byte("x\n"), 0o644)
	}
	rep, err := d.k.NewTask(context.Background(), folder)
	if err != nil {
		b.Fatal(err)
	}
	os.WriteFile(filepath.Join(rep.Task.Paths.Copy, "f001.txt"), []byte("changed\n"), 0o644)
	c := client.New(d.home)
	ctx := context.Background()
	measure := func(fn func()) time.Duration {
		start := time.Now()
		for range b.N {
			fn()
		}
		return time.Since(start) / time.Duration(max(b.N, 1))
	}
	for range 20 { // warm both paths' caches
		d.k.Status(context.Background(), rep.Task)
		c.Do(ctx, "GET", "/api/tasks/"+rep.Task.ID, nil, nil)
	}
	b.ResetTimer()
	direct := measure(func() {
		if _, err := d.k.Status(context.Background(), rep.Task); err != nil {
			b.Fatal(err)
		}
	})
	b.ResetTimer()
	viaDaemon := measure(func() {
		if err := c.Do(ctx, "GET", "/api/tasks/"+rep.Task.ID, nil, nil); err != nil {
			b.Fatal(err)
		}
	})
	b.ReportMetric(float64(direct.Microseconds()), "direct-µs/op")
	b.ReportMetric(float64(viaDaemon.Microseconds()), "daemon-µs/op")
	b.ReportMetric(float64(viaDaemon)/float64(direct), "ratio")
}

func startDaemonB(b *testing.B) *Daemon {
	k := newKernelB(b)
	d, err := Start(Config{Kernel: k, Idle: -1, Log: discardLog()})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go d.Serve(ctx)
	b.Cleanup(func() { cancel(); <-d.Done() })
	for deadline := time.Now().Add(30 * time.Second); !client.New(d.home).Running(ctx); {
		if time.Now().After(deadline) {
			b.Fatal("waited 30 s for the daemon to answer on its socket")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return d
}

// BenchmarkTaskListJudged lists 10 tasks, each with a change the kernel's
// policy judges (Kernel.Judge, the policy read for every task).
func BenchmarkTaskListJudged(b *testing.B) {
	d := startDaemonB(b)
	for range 10 {
		folder := b.TempDir()
		os.WriteFile(filepath.Join(folder, "a.txt"), []byte("a\n"), 0o644)
		rep, err := d.k.NewTask(context.Background(), folder)
		if err != nil {
			b.Fatal(err)
		}
		os.WriteFile(filepath.Join(rep.Task.Paths.Copy, "a.txt"), []byte("b\n"), 0o644)
	}
	c := client.New(d.home)
	ctx := context.Background()
	for range 3 {
		c.Do(ctx, "GET", "/api/tasks", nil, nil)
	}
	b.ResetTimer()
	for range b.N {
		if err := c.Do(ctx, "GET", "/api/tasks", nil, nil); err != nil {
			b.Fatal(err)
		}
	}
}
