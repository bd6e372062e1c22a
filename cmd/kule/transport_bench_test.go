package main

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/plugins/transport/slack"
	"github.com/kulehq/kule/sdk/transport"
)

// cpuNow is the CPU time (user+sys) of this process and of its children
// that ended, so far.
func cpuNow(b *testing.B) time.Duration {
	b.Helper()
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

// BenchmarkTransportTest measures `kule transport test slack` against a
// local stand-in of Slack as it runs now — the plugin started in its
// sandbox behind its own proxy, the post, the end of both — against its
// peer, what the command did before: the transport built in this process
// with the real tokens and the same post. Each round runs both, turn
// about. It reports the wall and CPU time (user+sys, this process and its
// ended children) of each, in ms, and their ratios.
func BenchmarkTransportTest(b *testing.B) {
	home, tc, srv := slackHome(b)
	cfg, err := kernel.LoadSettings(home)
	if err != nil {
		b.Fatal(err)
	}
	cfg.SetTransport(tc)
	if err := kernel.SaveSettings(home, cfg); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var wallIn, cpuIn, wallOut, cpuOut time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0, c0 := time.Now(), cpuNow(b)
		s, err := slack.New(slack.Config{APIURL: tc.API, BotToken: pluginBotToken, AppToken: pluginAppToken, Channel: tc.Channel})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Deliver(ctx, transport.Event{ID: "kule-test", Notice: &transport.Notice{Text: "Kule is connected."}}, ""); err != nil {
			b.Fatal(err)
		}
		wallIn += time.Since(t0)
		cpuIn += cpuNow(b) - c0

		t0, c0 = time.Now(), cpuNow(b)
		out, err := runKule(b, "", "transport", "test", "slack")
		if err != nil || !strings.Contains(out, "posted") {
			b.Fatalf("transport test: %v\n%s", err, out)
		}
		wallOut += time.Since(t0)
		cpuOut += cpuNow(b) - c0
	}
	b.StopTimer()
	if n := len(srv.Posts()); n != 2*b.N {
		b.Fatalf("the stand-in got %d posts, want %d", n, 2*b.N)
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(b.N) / 1e6 }
	b.ReportMetric(ms(wallIn), "inproc-wall-ms")
	b.ReportMetric(ms(cpuIn), "inproc-cpu-ms")
	b.ReportMetric(ms(wallOut), "plugin-wall-ms")
	b.ReportMetric(ms(cpuOut), "plugin-cpu-ms")
	b.ReportMetric(float64(wallOut)/float64(wallIn), "wall-ratio")
	b.ReportMetric(float64(cpuOut)/float64(cpuIn), "cpu-ratio")
}
