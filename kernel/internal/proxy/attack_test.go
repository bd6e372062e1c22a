package proxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tunnel opens an intercepted TLS connection to host through the proxy, as a
// client trusting the CA bundle would.
func tunnel(t *testing.T, w *world, host string) (*tls.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", w.proxy.Addr())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "CONNECT %s:443 HTTP/1.1\r\nHost: %s:443\r\n%s\r\n", host, host, authLine())
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", err, resp)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(w.proxy.CACertPEM())
	tc := tls.Client(c, &tls.Config{ServerName: host, RootCAs: pool, NextProtos: []string{"h2", "http/1.1"}})
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	if p := tc.ConnectionState().NegotiatedProtocol; p == "h2" {
		t.Fatalf("the proxy offered h2 on an intercepted host")
	}
	t.Cleanup(func() { tc.Close() })
	return tc, bufio.NewReader(tc)
}

var smuggling = map[string]string{
	"CL and TE":             "POST /s HTTP/1.1\r\nHost: api.example.test\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: api.example.test\r\n\r\n",
	"two different CL":      "POST /s HTTP/1.1\r\nHost: api.example.test\r\nContent-Length: 0\r\nContent-Length: 44\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: api.example.test\r\n\r\n",
	"obfuscated TE":         "POST /s HTTP/1.1\r\nHost: api.example.test\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: api.example.test\r\n\r\n",
	"TE list":               "POST /s HTTP/1.1\r\nHost: api.example.test\r\nTransfer-Encoding: identity, chunked\r\n\r\n0\r\n\r\n",
	"TE space before colon": "POST /s HTTP/1.1\r\nHost: api.example.test\r\nTransfer-Encoding : chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n",
	"obs-fold":              "GET /s HTTP/1.1\r\nHost: api.example.test\r\nX: a\r\n Transfer-Encoding: chunked\r\n\r\n",
	"bare LF":               "GET /s HTTP/1.1\nHost: api.example.test\n\nGET /smuggled HTTP/1.1\r\nHost: api.example.test\r\n\r\n",
	"bare CR":               "GET /s HTTP/1.1\r\nHost: api.example.test\rX: 1\r\n\r\n",
	"chunk size overflow":   "POST /s HTTP/1.1\r\nHost: api.example.test\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff1\r\nGET /smuggled HTTP/1.1\r\n\r\n0\r\n\r\n",
	"chunk not CRLF":        "POST /s HTTP/1.1\r\nHost: api.example.test\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nabGET /smuggled HTTP/1.1\r\n\r\n0\r\n\r\n",
	"HTTP/2 preface":        "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
	"other Host":            "GET /s HTTP/1.1\r\nHost: evil.example.test\r\n\r\n",
	"absolute other host":   "GET https://evil.example.test/s HTTP/1.1\r\nHost: api.example.test\r\n\r\n",
}

// TestSmuggling sends each ambiguous request inside an intercepted tunnel and
// through plain forwarding: each must be answered with an error and the
// connection closed, and nothing smuggled may reach the server.
func TestSmuggling(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.start(t)
	for name, raw := range smuggling {
		t.Run("tls/"+name, func(t *testing.T) {
			tc, br := tunnel(t, w, apiHost)
			io.WriteString(tc, raw)
			checkRefusedAndClosed(t, tc, br)
		})
		t.Run("plain/"+name, func(t *testing.T) {
			c, err := net.Dial("tcp", w.proxy.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			raw := strings.ReplaceAll(raw, " /s ", " http://"+plainHost+"/s ")
			raw = strings.ReplaceAll(raw, " /smuggled ", " http://"+plainHost+"/smuggled ")
			raw = strings.ReplaceAll(raw, "Host: api.example.test", "Host: "+plainHost)
			raw = strings.ReplaceAll(raw, "https://evil", "http://evil")
			io.WriteString(c, withAuth(raw))
			checkRefusedAndClosed(t, c, bufio.NewReader(c))
		})
	}
	for _, s := range w.rec.all() {
		if strings.Contains(s.URI, "smuggled") {
			t.Errorf("a smuggled request reached the server: %s %s", s.Method, s.URI)
		}
	}
}

func checkRefusedAndClosed(t *testing.T, c net.Conn, br *bufio.Reader) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode < 400 || resp.StatusCode == http.StatusProxyAuthRequired {
		t.Fatalf("status %d: the ambiguous request was accepted (or refused for another reason)", resp.StatusCode)
	}
	if rest, _ := io.ReadAll(br); len(rest) != 0 {
		t.Fatalf("the connection carried more after the refusal: %q", rest)
	}
}

// TestKeepAlive100 sends 100 requests of mixed framing on one intercepted
// connection and one plain connection; each must arrive intact, in order.
func TestKeepAlive100(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.start(t)
	ph := w.placeholder()
	check := func(t *testing.T, c io.Writer, br *bufio.Reader, prefix, path, host string) {
		auth := ""
		if prefix != "" {
			auth = authLine()
		}
		var reqs bytes.Buffer
		for i := range 100 {
			body := fmt.Sprintf("body-%03d", i)
			if i%2 == 0 {
				fmt.Fprintf(&reqs, "POST %s%s/%d HTTP/1.1\r\nHost: %s\r\n%sAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n%s", prefix, path, i, host, auth, ph, len(body), body)
			} else {
				fmt.Fprintf(&reqs, "POST %s%s/%d HTTP/1.1\r\nHost: %s\r\n%sTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", prefix, path, i, host, auth, len(body), body)
			}
		}
		go c.Write(reqs.Bytes()) // pipelined
		for i := range 100 {
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("response %d: %v", i, err)
			}
			b, _ := io.ReadAll(resp.Body)
			if want := fmt.Sprintf("uri=%s/%d\n", path, i); !strings.Contains(string(b), want) || !strings.Contains(string(b), fmt.Sprintf("body=body-%03d", i)) {
				t.Fatalf("response %d out of order or changed:\n%s", i, b)
			}
		}
		var got []string
		for _, s := range w.rec.all() {
			if strings.HasPrefix(s.URI, path+"/") {
				got = append(got, s.URI+" "+s.Body)
			}
		}
		if len(got) != 100 {
			t.Fatalf("server saw %d requests, want 100", len(got))
		}
		for i, g := range got {
			if g != fmt.Sprintf("%s/%d body-%03d", path, i, i) {
				t.Fatalf("server request %d: %q", i, g)
			}
		}
	}
	t.Run("tls", func(t *testing.T) {
		tc, br := tunnel(t, w, apiHost)
		check(t, tc, br, "", "/ka-tls", apiHost)
	})
	t.Run("plain", func(t *testing.T) {
		c, err := net.Dial("tcp", w.proxy.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		check(t, c, bufio.NewReader(c), "http://"+plainHost, "/ka-plain", plainHost)
	})
}

// TestNameConstraints makes the run authority sign for names it must not
// vouch for, and checks that clients trusting it refuse those certificates.
func TestNameConstraints(t *testing.T) {
	t.Parallel()
	ca, err := newAuthority([]string{apiHost}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	verify := func(name string, cert *tls.Certificate) error {
		_, err := cert.Leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: pool})
		return err
	}
	good, err := ca.leaf(apiHost)
	if err != nil {
		t.Fatal(err)
	}
	if err := verify(apiHost, good); err != nil {
		t.Fatalf("the authority's own host does not verify: %v", err)
	}
	if again, _ := ca.leaf(strings.ToUpper(apiHost)); again != good {
		t.Errorf("the leaf is not cached per host")
	}
	if _, err := ca.leaf("bank.example.org"); err == nil {
		t.Errorf("leaf() signed for a host outside the list")
	}
	for _, name := range []string{"bank.example.org", "example.test", "evil-api.example.test", "127.0.0.1"} {
		t.Run(name, func(t *testing.T) {
			cert, err := ca.sign(name, time.Now()) // bypasses the list on purpose
			if err != nil {
				t.Fatal(err)
			}
			if err := verify(name, cert); err == nil {
				t.Fatalf("crypto/x509 accepted a certificate for %s from the run authority", name)
			}
			curlRefuses(t, ca, cert, name)
		})
	}
}

// curlRefuses serves cert on loopback and asks curl, trusting only the run
// authority, to fetch from it.
func curlRefuses(t *testing.T, ca *authority, cert *tls.Certificate, name string) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("curl is needed on CI")
		}
		t.Skip("curl is not installed")
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{*cert}})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "trusted") })}
	go srv.Serve(ln)
	defer srv.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(caFile, ca.certPEM, 0o644)
	url := fmt.Sprintf("https://%s:%d/", name, port)
	args := []string{"-sS", "--noproxy", "*", "--cacert", caFile}
	if net.ParseIP(name) == nil {
		args = append(args, "--resolve", fmt.Sprintf("%s:%d:127.0.0.1", name, port))
	}
	out, err := exec.Command(curl, append(args, url)...).CombinedOutput()
	if err == nil || strings.Contains(string(out), "trusted") {
		t.Fatalf("curl trusted the run authority's certificate for %s:\n%s", name, out)
	}
}

// TestPrivateAddressRefused: the default dialer will not carry a host name
// to a loopback address (DNS pointing inside the machine).
func TestPrivateAddressRefused(t *testing.T) {
	t.Parallel()
	p, err := Start(t.Context(), Config{Decide: func(_ context.Context, h string, _ int) Decision { return Decision{Allow: true, Rule: "all"} }})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT localhost:22 HTTP/1.1\r\nHost: localhost:22\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: "CONNECT"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("CONNECT localhost:22: status %d, want 502", resp.StatusCode)
	}
	// A connection is logged when its handler ends, which can be just after
	// the client has read the answer; Close waits for every handler.
	p.Close()
	if e := p.Entries(); len(e) != 1 || !strings.Contains(e[0].Error, "not a public internet address") {
		t.Fatalf("log: %+v", e)
	}
	if s := p.Summary(); len(s) != 1 || !strings.HasPrefix(s[0], "net: localhost:22 · tunneled (all) · failed: connect: ") {
		t.Fatalf("summary: %q", s)
	}
}

// TestCloseEndsTunnels: Close returns while a tunnel is open and idle, and
// the idle tunnel is logged.
func TestCloseEndsTunnels(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.start(t)
	c, err := net.Dial("tcp", w.proxy.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT %s:80 HTTP/1.1\r\nHost: %s:80\r\n%s\r\n", plainHost, plainHost, authLine())
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: "CONNECT"})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", err, resp)
	}
	done := make(chan error)
	go func() { done <- w.proxy.Close() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return while a tunnel was open")
	}
	if e := w.proxy.Entries(); len(e) != 1 || e[0].Verdict != Tunneled || e[0].Intercepted {
		t.Fatalf("log: %+v", e)
	}
}

// TestTokenRequired: a process on the host's loopback without the task's
// token cannot use the proxy.
func TestTokenRequired(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.start(t)
	for name, raw := range map[string]string{
		"CONNECT":     "CONNECT " + apiHost + ":443 HTTP/1.1\r\nHost: " + apiHost + ":443\r\n\r\n",
		"plain":       "GET http://" + plainHost + "/x HTTP/1.1\r\nHost: " + plainHost + "\r\n\r\n",
		"wrong token": "GET http://" + plainHost + "/x HTTP/1.1\r\nHost: " + plainHost + "\r\nProxy-Authorization: Basic a3VsZTp3cm9uZw==\r\n\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			c, err := net.Dial("tcp", w.proxy.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			io.WriteString(c, raw)
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusProxyAuthRequired {
				t.Fatalf("status %d, want 407", resp.StatusCode)
			}
		})
	}
	if len(w.rec.all()) != 0 || len(w.proxy.Entries()) != 0 {
		t.Fatalf("a request without the token went somewhere")
	}
}
