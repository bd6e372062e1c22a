package proxy

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"
)

const benchSize = 100 << 20

func bigHandler(w http.ResponseWriter, _ *http.Request) {
	chunk := make([]byte, 256<<10)
	for i := range chunk {
		chunk[i] = byte('a' + i%26)
	}
	w.Header().Set("Content-Length", strconv.Itoa(benchSize))
	for n := 0; n < benchSize; n += len(chunk) {
		w.Write(chunk)
	}
}

// BenchmarkDownload100MB measures a 100 MB HTTPS download on loopback three
// ways in the same run — direct (the peer), through the proxy's CONNECT
// tunnel, and through the secret-injecting path (TLS ended and reopened,
// response scanned for the value) — and reports each as a ratio of direct.
//
//	go test -run XXX -bench Download100MB -benchtime 5x ./kernel/proxy/
func BenchmarkDownload100MB(b *testing.B) {
	w := newWorld(b)
	w.serve(b, "direct.example.test", true, http.HandlerFunc(bigHandler))
	w.serve(b, "big.example.test", true, http.HandlerFunc(bigHandler))
	w.secret.Hosts = []string{"big.example.test"}
	w.start(b)
	ph := w.placeholder()
	pool := x509.NewCertPool()
	bundle, _ := os.ReadFile(w.bundle)
	pool.AppendCertsFromPEM(bundle)
	pu, _ := url.Parse("http://kule:" + testToken + "@" + w.proxy.Addr())
	direct := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: w.root.pool, ServerName: "direct.example.test"},
	}}
	proxied := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu), TLSClientConfig: &tls.Config{RootCAs: pool}}}
	var cpu time.Duration // the process's CPU time (client, server and proxy) of the last get
	get := func(c *http.Client, u string) time.Duration {
		req, _ := http.NewRequest("GET", u, nil)
		req.Header.Set("Authorization", "Bearer "+ph)
		cpu0 := cpuTime()
		defer func() { cpu = cpuTime() - cpu0 }()
		start := time.Now()
		resp, err := c.Do(req)
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
	directURL := "https://" + w.addrs["direct.example.test:443"] + "/"
	var dDirect, dTunnel, dInject time.Duration
	b.SetBytes(3 * benchSize)
	b.ResetTimer()
	only := os.Getenv("KULE_BENCH_ONLY") // "tunnel" or "inject" for a profile of one path
	if only != "" {
		for range b.N {
			if only == "tunnel" {
				get(proxied, "https://direct.example.test/")
			} else {
				get(proxied, "https://big.example.test/")
			}
		}
		return
	}
	// The machine's load moves during a run: each iteration measures the
	// three paths back to back, in a rotating order, and the ratios reported
	// are the medians of the per-iteration ratios.
	var tunnelR, injectR []float64
	var cpus [3]time.Duration
	for i := range b.N {
		var d [3]time.Duration
		for k := range 3 {
			j := (i + k) % 3
			switch j {
			case 0:
				d[0] = get(direct, directURL)
			case 1:
				d[1] = get(proxied, "https://direct.example.test/")
			case 2:
				d[2] = get(proxied, "https://big.example.test/")
			}
			cpus[j] += cpu
		}
		dDirect += d[0]
		dTunnel += d[1]
		dInject += d[2]
		tunnelR = append(tunnelR, d[0].Seconds()/d[1].Seconds())
		injectR = append(injectR, d[0].Seconds()/d[2].Seconds())
	}
	mbps := func(d time.Duration) float64 { return float64(b.N) * benchSize / d.Seconds() / 1e6 }
	b.ReportMetric(mbps(dDirect), "direct-MB/s")
	b.ReportMetric(mbps(dTunnel), "tunnel-MB/s")
	b.ReportMetric(mbps(dInject), "inject-MB/s")
	b.ReportMetric(median(tunnelR), "tunnel/direct")
	b.ReportMetric(median(injectR), "inject/direct")
	// CPU per download, as a ratio to direct's: what the throughput ratio
	// comes to when the machine's cores are the limit, and far steadier
	// than wall time on a machine others load too.
	if cpus[1] > 0 && cpus[2] > 0 {
		b.ReportMetric(cpus[0].Seconds()/cpus[1].Seconds(), "cpu-tunnel/direct")
		b.ReportMetric(cpus[0].Seconds()/cpus[2].Seconds(), "cpu-inject/direct")
	}
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}
