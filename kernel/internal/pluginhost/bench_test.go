package pluginhost

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kulehq/kule/sdk/differ"
)

// BenchmarkDifferCall measures the per-call cost of asking a differ for names
// through its plugin process (gRPC over a Unix socket with mTLS), started
// unsandboxed and in the sandbox, against the named peer, the same differ
// called in this process, on the same 1 KiB file, all in one loop. Goal:
// under 1 ms of overhead per call.
func BenchmarkDifferCall(b *testing.B) {
	ctx := context.Background()
	direct := newHost(b)
	install(b, direct, "good")
	boxed := sandboxedHost(b, "")
	install(b, boxed, "good")
	var sb strings.Builder
	for i := range 40 {
		fmt.Fprintf(&sb, "w%02d another line of text\n", i)
	}
	src := []byte(sb.String())
	dd, db := direct.DifferFor(ctx, "a.txt"), boxed.DifferFor(ctx, "a.txt")
	if dd == nil || db == nil {
		b.Fatal("no differ")
	}
	for _, d := range []*Differ{dd, db} {
		if _, err := d.Entities(ctx, "a.txt", src); err != nil { // start it
			b.Fatal(err)
		}
	}
	local := fakeDiffer{mode: "good"}

	b.ResetTimer()
	var inproc, plain, sandboxed time.Duration
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := local.Entities(ctx, differ.EntitiesRequest{Path: "a.txt", Content: src}); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := dd.Entities(ctx, "a.txt", src); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if _, err := db.Entities(ctx, "a.txt", src); err != nil {
			b.Fatal(err)
		}
		sandboxed += time.Since(t2)
		plain += t2.Sub(t1)
		inproc += t1.Sub(t0)
	}
	n := float64(b.N)
	b.ReportMetric(float64(inproc.Nanoseconds())/n, "ns-inproc/call")
	b.ReportMetric(float64(plain.Nanoseconds())/n, "ns-plugin/call")
	b.ReportMetric(float64(sandboxed.Nanoseconds())/n, "ns-sandboxed/call")
	b.ReportMetric((sandboxed-inproc).Seconds()*1e6/n, "µs-overhead-sandboxed/call")
	if plain > 0 {
		b.ReportMetric(float64(sandboxed)/float64(plain), "ratio-sandboxed/plain")
	}
}

// BenchmarkStart measures starting a plugin process — a built-in (exec,
// go-plugin handshake with sdk/plugintls's mutual TLS) and a third-party one (sealed
// in-memory copy and sha256 first) — in the sandbox (namespaces, mounts,
// two Landlock domains, one more exec) against the named peer, the same
// starts unsandboxed, in one loop.
func BenchmarkStart(b *testing.B) {
	ctx := context.Background()
	direct := newHost(b, txtBuiltin("lines"))
	install(b, direct, "good")
	boxed := sandboxedHost(b, "", txtBuiltin("lines"))
	install(b, boxed, "good")
	var d [4]time.Duration // direct built-in, direct third, boxed built-in, boxed third
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j, h := range []*Host{direct, direct, boxed, boxed} {
			h.opts.MaxStarts = 1 << 30
			name, builtin := "lines", j%2 == 0
			if !builtin {
				name = "good"
			}
			t0 := time.Now()
			p, err := h.get(ctx, "differ", name, builtin)
			if err != nil {
				b.Fatal(err)
			}
			d[j] += time.Since(t0)
			h.drop(p)
		}
	}
	n := float64(b.N)
	b.ReportMetric(d[0].Seconds()*1000/n, "ms-builtin/start")
	b.ReportMetric(d[1].Seconds()*1000/n, "ms-third-party/start")
	b.ReportMetric(d[2].Seconds()*1000/n, "ms-builtin-sandboxed/start")
	b.ReportMetric(d[3].Seconds()*1000/n, "ms-third-party-sandboxed/start")
	if d[0] > 0 {
		b.ReportMetric(float64(d[2])/float64(d[0]), "ratio-builtin-sandboxed/plain")
	}
}

// BenchmarkStartTLS measures a built-in's start and handshake with the
// host's pinned P-256 mutual TLS (sdk/plugintls) against the named peer,
// go-plugin's AutoMTLS (a P-521 key on each side), unsandboxed and in the
// sandbox, interleaved in one loop. The CPU time of kule and the plugin
// together is reported too, since the machine is shared.
func BenchmarkStartTLS(b *testing.B) {
	ctx := context.Background()
	direct := newHost(b, txtBuiltin("lines"))
	boxed := sandboxedHost(b, "", txtBuiltin("lines"))
	var d, cpu [4]time.Duration // direct pinned, direct AutoMTLS, boxed pinned, boxed AutoMTLS
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j, h := range []*Host{direct, direct, boxed, boxed} {
			h.opts.MaxStarts = 1 << 30
			h.autoMTLS = j%2 == 1
			c0 := cpuTime(b)
			t0 := time.Now()
			p, err := h.get(ctx, "differ", "lines", true)
			if err != nil {
				b.Fatal(err)
			}
			d[j] += time.Since(t0)
			h.drop(p) // Kill waits for the process, so its CPU is counted
			cpu[j] += cpuTime(b) - c0
		}
	}
	n := float64(b.N)
	for j, name := range []string{"pinned", "automtls", "pinned-sandboxed", "automtls-sandboxed"} {
		b.ReportMetric(d[j].Seconds()*1000/n, "ms-"+name+"/start")
		b.ReportMetric(cpu[j].Seconds()*1000/n, "ms-cpu-"+name+"/start")
	}
	if d[0] > 0 && d[2] > 0 && cpu[0] > 0 && cpu[2] > 0 {
		b.ReportMetric(float64(d[1])/float64(d[0]), "ratio-automtls/pinned")
		b.ReportMetric(float64(d[3])/float64(d[2]), "ratio-automtls/pinned-sandboxed")
		b.ReportMetric(float64(cpu[1])/float64(cpu[0]), "ratio-cpu-automtls/pinned")
		b.ReportMetric(float64(cpu[3])/float64(cpu[2]), "ratio-cpu-automtls/pinned-sandboxed")
	}
}

// cpuTime is the user+system time of this process and its waited-for
// children so far.
func cpuTime(b *testing.B) time.Duration {
	var self, kids syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &self); err != nil {
		b.Fatal(err)
	}
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids); err != nil {
		b.Fatal(err)
	}
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return tv(self.Utime) + tv(self.Stime) + tv(kids.Utime) + tv(kids.Stime)
}
