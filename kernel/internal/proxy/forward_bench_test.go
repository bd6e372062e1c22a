package proxy

import (
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"
)

// BenchmarkForwardPlainHTTP100MB measures a 100 MB plain-HTTP download on
// loopback direct (the peer) and through the proxy's forwarding path in the
// same run, each iteration both back to back in a rotating order, and
// reports the median of the per-iteration ratios (goal: forwarded within
// 1.2× of direct's time, so forward/direct ≥ 0.83).
//
//	go test -run XXX -bench ForwardPlainHTTP100MB -benchtime 5x ./kernel/internal/proxy/
func BenchmarkForwardPlainHTTP100MB(b *testing.B) {
	w := newWorld(b)
	w.serve(b, "direct.example.test", false, http.HandlerFunc(bigHandler))
	w.start(b)
	pu, _ := url.Parse("http://kule:" + testToken + "@" + w.proxy.Addr())
	direct := &http.Client{Transport: &http.Transport{}}
	proxied := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
	var cpu time.Duration
	get := func(c *http.Client, u string) time.Duration {
		cpu0 := cpuTime()
		defer func() { cpu = cpuTime() - cpu0 }()
		start := time.Now()
		resp, err := c.Get(u)
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || n != benchSize {
			b.Fatalf("read %d bytes: %v", n, err)
		}
		return time.Since(start)
	}
	directURL := "http://" + w.addrs["direct.example.test:80"] + "/"
	var dDirect, dForward, cDirect, cForward time.Duration
	var ratios []float64
	b.SetBytes(2 * benchSize)
	b.ResetTimer()
	for i := range b.N {
		var d [2]time.Duration
		for k := range 2 {
			switch (i + k) % 2 {
			case 0:
				d[0] = get(direct, directURL)
				cDirect += cpu
			case 1:
				d[1] = get(proxied, "http://direct.example.test/")
				cForward += cpu
			}
		}
		dDirect += d[0]
		dForward += d[1]
		ratios = append(ratios, d[0].Seconds()/d[1].Seconds())
	}
	mbps := func(d time.Duration) float64 { return float64(b.N) * benchSize / d.Seconds() / 1e6 }
	b.ReportMetric(mbps(dDirect), "direct-MB/s")
	b.ReportMetric(mbps(dForward), "forward-MB/s")
	b.ReportMetric(median(ratios), "forward/direct")
	if cForward > 0 {
		b.ReportMetric(cDirect.Seconds()/cForward.Seconds(), "cpu-forward/direct")
	}
}
