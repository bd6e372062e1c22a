package sandbox

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kulehq/kule/kernel/internal/runner"
)

// requestLines is a stand-in for the task's proxy: it answers every
// request with 200 and records its request line.
func requestLines(t *testing.T) (string, func() []string) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var mu sync.Mutex
	var lines []string
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(20 * time.Second))
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				mu.Lock()
				lines = append(lines, req.Method+" "+req.RequestURI)
				mu.Unlock()
				c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 7\r\nConnection: close\r\n\r\nproxied"))
			}()
		}
	}()
	return ln.Addr().String(), func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), lines...)
	}
}

// TestLoopbackGoesThroughTheProxy: a local model's URL
// (http://127.0.0.1:11434, http://localhost:4000) reaches the task's proxy
// from inside the sandbox, which dials it on the host if the person named
// it, and logs it either way. With loopback in NO_PROXY (the way the
// sandbox once set it, put back here by hand) the client goes around the
// proxy into the sandbox's own loopback, where nothing listens: the agent
// hangs or fails, and the proxy never hears of it.
func TestLoopbackGoesThroughTheProxy(t *testing.T) {
	skipUnlessSandbox(t)
	t.Parallel()
	w := newWorld(t)
	addr, seen := requestLines(t)
	script := `echo "[$NO_PROXY][$no_proxy]"
curl -s --max-time 10 http://127.0.0.1:11434/api/tags; echo
curl -s --max-time 10 http://localhost:4000/v1/models; echo
NO_PROXY=localhost,127.0.0.1,::1 curl -s --max-time 10 http://127.0.0.1:11434/bypassed || echo bypass-failed`
	r := w.run(t, w.sandbox(), runner.Spec{Network: runner.NetworkProxy, ProxyAddr: addr, Args: []string{"bash", "-c", script}})
	want := "[][]\nproxied\nproxied\nbypass-failed\n"
	if r.stdout != want {
		t.Fatalf("stdout %q, want %q (stderr %s)", r.stdout, want, r.stderr)
	}
	got := strings.Join(seen(), "\n")
	if got != "GET http://127.0.0.1:11434/api/tags\nGET http://localhost:4000/v1/models" {
		t.Fatalf("the proxy saw %q; want both local endpoints and not the bypassed request", got)
	}
}
