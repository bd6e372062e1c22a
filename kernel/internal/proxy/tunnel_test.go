package proxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// tunnelServer is a TCP server on loopback that reads what a tunnel sends
// up until the client's half-close, then answers with down and closes.
func tunnelServer(t *testing.T, down []byte) (port int, got func() []byte) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var mu sync.Mutex
	var up []byte
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		mu.Lock()
		up = b
		mu.Unlock()
		c.Write(down)
	}()
	return ln.Addr().(*net.TCPAddr).Port, func() []byte {
		<-done
		mu.Lock()
		defer mu.Unlock()
		return up
	}
}

// tunnelThrough opens a CONNECT tunnel to 127.0.0.1:port on c, sends up
// (its first bytes in the same write as the request, so the proxy holds
// them in its reader when the tunnel starts), half-closes, and returns the
// answer's status and what came down.
func tunnelThrough(t *testing.T, c net.Conn, port int, auth string, up []byte) (int, []byte) {
	t.Helper()
	defer c.Close()
	target := "127.0.0.1:" + strconv.Itoa(port)
	head := "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n" + auth + "\r\n"
	if _, err := c.Write(append([]byte(head), up[:len(up)/3]...)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, nil
	}
	if _, err := c.Write(up[len(up)/3:]); err != nil {
		t.Fatal(err)
	}
	c.(*net.TCPConn).CloseWrite()
	got, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, got
}

type tunnelSeen struct {
	up, down int64
	raw      bool
	n        int
}

func tunnelProxy(t *testing.T) (*Proxy, func() tunnelSeen) {
	t.Helper()
	var mu sync.Mutex
	var seen tunnelSeen
	p, err := Start(t.Context(), Config{
		Decide: func(context.Context, string, int) Decision {
			return Decision{Allow: true, Rule: "all", Named: true}
		},
		Token: testToken,
		tunneled: func(up, down int64, raw bool) {
			mu.Lock()
			defer mu.Unlock()
			seen = tunnelSeen{up: up, down: down, raw: raw, n: seen.n + 1}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, func() tunnelSeen {
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
}

func pattern(n, mod int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i % mod)
	}
	return b
}

// A plain tunnel's bytes go socket to socket both ways, and the log counts
// them exactly: the bytes the proxy held in its reader when the tunnel
// began are counted up with the rest.
func TestTunnelSplicedAndCountedExactly(t *testing.T) {
	t.Parallel()
	up, down := pattern(3<<20+11, 251), pattern(5<<20+3, 241)
	port, got := tunnelServer(t, down)
	p, seen := tunnelProxy(t)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	code, body := tunnelThrough(t, c, port, authLine(), up)
	if code != http.StatusOK || !bytes.Equal(body, down) {
		t.Fatalf("the tunnel: %d, %d bytes down, want 200 and %d", code, len(body), len(down))
	}
	if !bytes.Equal(got(), up) {
		t.Fatalf("the server got %d bytes, want %d", len(got()), len(up))
	}
	p.Close() // waits for the tunnel's end and its line in the log
	s := seen()
	if s.n != 1 || !s.raw {
		t.Fatalf("tunnels seen %d, socket to socket %v: want one, spliced both ways", s.n, s.raw)
	}
	// Up, what the proxy's reader held (at most its 32 KiB) was written
	// before the splice began.
	if held := int64(len(up)) - s.up; held < 0 || held > 32<<10 || s.down != int64(len(down)) {
		t.Fatalf("spliced %d up and %d down, want all but at most 32 KiB of %d, and %d", s.up, s.down, len(up), len(down))
	}
	var e *Entry
	for _, x := range p.Entries() {
		if x.Verdict == Tunneled {
			e = &x
		}
	}
	if e == nil || e.BytesUp != int64(len(up)) || e.BytesDown != int64(len(down)) {
		t.Fatalf("logged %+v, want a tunnel of %d bytes up and %d down", e, len(up), len(down))
	}
}

// A connection handed to Serve is served as one the listener accepted: the
// token is asked for, the tunnel is logged and still spliced (the handed
// connection is the TCP connection itself), and a closed proxy takes none.
func TestServeHandedConnection(t *testing.T) {
	t.Parallel()
	up, down := pattern(1<<20+5, 251), pattern(2<<20+9, 241)
	port, _ := tunnelServer(t, down)
	p, seen := tunnelProxy(t)

	// The handed connections come from a listener of the test's own, as
	// the sandbox's come from the helper: nothing dials p.Addr().
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	handed := make(chan error, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			handed <- p.Serve(c)
		}
	}()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	if code, _ := tunnelThrough(t, dial(), port, "", up); code != http.StatusProxyAuthRequired {
		t.Fatalf("without the token: %d, want 407", code)
	}
	if err := <-handed; err != nil {
		t.Fatal(err)
	}
	code, body := tunnelThrough(t, dial(), port, authLine(), up)
	if err := <-handed; err != nil {
		t.Fatal(err)
	}
	if code != http.StatusOK || !bytes.Equal(body, down) {
		t.Fatalf("the tunnel: %d, %d bytes down, want 200 and %d", code, len(body), len(down))
	}
	p.Close()
	if s := seen(); s.n != 1 || !s.raw || s.down != int64(len(down)) {
		t.Fatalf("tunnel seen %+v: want one, spliced both ways, %d bytes down", s, len(down))
	}
	var logged []string
	for _, e := range p.Entries() {
		logged = append(logged, string(e.Verdict)+" "+e.Host+":"+strconv.Itoa(e.Port)+" "+strconv.FormatInt(e.BytesUp, 10)+" "+strconv.FormatInt(e.BytesDown, 10))
	}
	want := string(Tunneled) + " 127.0.0.1:" + strconv.Itoa(port) + " " + strconv.Itoa(len(up)) + " " + strconv.Itoa(len(down))
	if len(logged) != 1 || logged[0] != want {
		t.Fatalf("logged %q, want [%q]", logged, want)
	}

	c := dial()
	if err := <-handed; !errors.Is(err, ErrClosed) {
		t.Fatalf("handed to a closed proxy: %v, want ErrClosed", err)
	}
	c.Write([]byte("CONNECT 127.0.0.1:1 HTTP/1.1\r\n\r\n"))
	if b, _ := io.ReadAll(c); len(b) != 0 {
		t.Fatalf("a closed proxy answered: %q", strings.TrimSpace(string(b)))
	}
	c.Close()
}
