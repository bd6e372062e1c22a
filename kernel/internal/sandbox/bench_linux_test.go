//go:build linux

package sandbox

import (
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"sort"
	"testing"
	"time"

	"github.com/kulehq/kule/kernel/internal/runner"
)

// BenchmarkSetup measures the sandbox's own cost — `true` run through the
// runner — against bubblewrap with the same namespaces
// (`bwrap --unshare-all --ro-bind / / true`) and against `true` alone, in
// the same run, interleaved, and reports the medians and the ratios. The
// helper is cmd/kule-sandbox, built for the run (as `make build` builds it
// beside kule); KULE_SANDBOX_HELPER_BIN names one already built, and
// KULE_SANDBOX_HELPER_BIN=self measures the test binary re-executed instead.
// kule-proxy-ms is the same run with the proxy bridge (a listener inside the
// namespace, a TCP connect rule) to a stand-in proxy on the host's loopback.
func BenchmarkSetup(b *testing.B) {
	if m := Probe().Missing(); len(m) > 0 {
		b.Skipf("sandbox unavailable: %v", m)
	}
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		b.Skip("bwrap (bubblewrap) not installed: apt-get install -y bubblewrap")
	}
	w := newWorldB(b)
	s := w.sandbox()
	switch helper := os.Getenv("KULE_SANDBOX_HELPER_BIN"); helper {
	case "self":
	case "":
		s.Exe = buildHelper(b, staticHelper, "CGO_ENABLED=1") // as the Makefile builds it
	default:
		s.Exe = helper
	}
	spec := runner.Spec{Task: w.task, Dir: w.task.Copy, Env: w.env, Args: []string{"true"}, Stdout: io.Discard, Stderr: io.Discard}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	withProxy := spec
	withProxy.Network, withProxy.ProxyAddr = runner.NetworkProxy, ln.Addr().String()
	var sb, sp, bw, plain []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if code, err := s.Run(context.Background(), spec); err != nil || code != 0 {
			b.Fatalf("sandbox: %d %v", code, err)
		}
		tp := time.Now()
		if code, err := s.Run(context.Background(), withProxy); err != nil || code != 0 {
			b.Fatalf("sandbox with the proxy bridge: %d %v", code, err)
		}
		sp = append(sp, time.Since(tp))
		t1 := time.Now()
		if err := exec.Command(bwrap, "--unshare-all", "--ro-bind", "/", "/", "true").Run(); err != nil {
			b.Fatalf("bwrap: %v", err)
		}
		t2 := time.Now()
		if err := exec.Command("true").Run(); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		sb, bw, plain = append(sb, tp.Sub(t0)), append(bw, t2.Sub(t1)), append(plain, t3.Sub(t2))
	}
	ms := func(d []time.Duration) float64 {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return float64(d[len(d)/2]) / 1e6
	}
	ks, kb, kp := ms(sb), ms(bw), ms(plain)
	b.ReportMetric(ks, "kule-ms")
	b.ReportMetric(ms(sp), "kule-proxy-ms")
	b.ReportMetric(kb, "bwrap-ms")
	b.ReportMetric(kp, "true-ms")
	b.ReportMetric(ks/kb, "kule/bwrap")
	b.ReportMetric(ks/kp, "kule/true")
}
