package pluginhost

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// BenchmarkDifferCall measures the per-call cost of asking a differ for names
// through its plugin process (gRPC over a local socket with mTLS) against the
// named peer, the same differ called in this process, on the same 1 KiB
// file, and reports both and the overhead per call. Goal: under 1 ms.
func BenchmarkDifferCall(b *testing.B) {
	h := newHost(b)
	install(b, h, "good")
	ctx := context.Background()
	d := h.DifferFor(ctx, "a.txt")
	if d == nil {
		b.Fatal("no differ")
	}
	var sb strings.Builder
	for i := range 40 {
		fmt.Fprintf(&sb, "w%02d another line of text\n", i)
	}
	src := []byte(sb.String())
	if _, err := d.Entities(ctx, "a.txt", src); err != nil { // start it
		b.Fatal(err)
	}
	local := fakeDiffer{mode: "good"}

	b.ResetTimer()
	var inproc, plugin time.Duration
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := local.Entities(ctx, "a.txt", src); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := d.Entities(ctx, "a.txt", src); err != nil {
			b.Fatal(err)
		}
		plugin += time.Since(t1)
		inproc += t1.Sub(t0)
	}
	n := float64(b.N)
	b.ReportMetric(float64(inproc.Nanoseconds())/n, "ns-inproc/call")
	b.ReportMetric(float64(plugin.Nanoseconds())/n, "ns-plugin/call")
	b.ReportMetric((plugin-inproc).Seconds()*1e6/n, "µs-overhead/call")
	if inproc > 0 {
		b.ReportMetric(float64(plugin)/float64(inproc), "ratio")
	}
}

// BenchmarkStart measures starting a plugin process (verify the executable's
// sha256 from a sealed copy, exec, go-plugin handshake with AutoMTLS) against
// the named peer, starting a built-in (no hashing, same handshake).
func BenchmarkStart(b *testing.B) {
	h := newHost(b, txtBuiltin("lines"))
	install(b, h, "good")
	h.opts.MaxStarts = 1 << 30
	ctx := context.Background()
	var third, builtin time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		p, err := h.get(ctx, "differ", "good", false)
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		h.drop(p)
		t2 := time.Now()
		q, err := h.get(ctx, "differ", "lines", true)
		if err != nil {
			b.Fatal(err)
		}
		builtin += time.Since(t2)
		third += t1.Sub(t0)
		h.drop(q)
	}
	n := float64(b.N)
	b.ReportMetric(third.Seconds()*1000/n, "ms-third-party/start")
	b.ReportMetric(builtin.Seconds()*1000/n, "ms-builtin/start")
}
