package proxy

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The test stands up its own "internet" on loopback: a root of its own (the
// stand-in for the system roots) and HTTPS servers for made-up hosts.
const (
	apiHost      = "api.example.test"
	registryHost = "registry.example.test"
	gitHost      = "git.example.test"
	plainHost    = "plain.example.test"
	secretValue  = "sk_test_REALVALUE_4242424242"
)

type testRoot struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
	pool *x509.CertPool
}

func newTestRoot(t testing.TB) *testRoot {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "test internet root"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testRoot{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pool: pool}
}

func (r *testRoot) serverCert(t testing.TB, names ...string) tls.Certificate {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, r.cert, &key.PublicKey, r.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// seen is one request a test server received.
type seen struct {
	Method, URI, Host string
	Header            http.Header
	Body              string
}

type recorder struct {
	mu   sync.Mutex
	reqs []seen
}

func (r *recorder) add(req *http.Request) seen {
	b, _ := io.ReadAll(req.Body)
	req.Body = io.NopCloser(bytes.NewReader(b)) // a handler behind may read it too
	s := seen{Method: req.Method, URI: req.RequestURI, Host: req.Host, Header: req.Header.Clone(), Body: string(b)}
	r.mu.Lock()
	r.reqs = append(r.reqs, s)
	r.mu.Unlock()
	return s
}

func (r *recorder) all() []seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]seen(nil), r.reqs...)
}

// world is the test's internet: servers by host, the proxy in front.
type world struct {
	root    *testRoot
	addrs   map[string]string // host:port → loopback address
	rec     *recorder
	proxy   *Proxy
	dir     string
	logPath string
	bundle  string
	secret  Secret
	servers []*http.Server
	begin   bool  // start with Begin: the authority is made in the background
	off     guard // checks taken away, to show the attack each stops
}

// echo answers with what it received, so the answer carries whatever the
// server saw (the real value included, for the blanking test).
func echoHandler(rec *recorder) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		s := rec.add(req)
		w.Header().Set("X-Echo-Auth", s.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "method="+s.Method+"\nuri="+s.URI+"\nauth="+s.Header.Get("Authorization")+"\nx-api-key="+s.Header.Get("X-Api-Key")+"\nbody="+s.Body+"\n")
	})
}

func (w *world) serve(t testing.TB, host string, tlsOn bool, h http.Handler) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	port := 80
	if tlsOn {
		cert := w.root.serverCert(t, host)
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
		port = 443
		go srv.ServeTLS(ln, "", "")
	} else {
		go srv.Serve(ln)
	}
	w.servers = append(w.servers, srv)
	w.addrs[net.JoinHostPort(host, itoa(port))] = ln.Addr().String()
	t.Cleanup(func() { srv.Close() })
	return port
}

func itoa(n int) string { return strconvItoa(n) }

func testDecider(_ context.Context, host string, port int) Decision {
	switch host {
	case apiHost, gitHost, plainHost, "direct.example.test", "big.example.test", gatewayHost:
		return Decision{Allow: true, Rule: "test-hosts"}
	case registryHost:
		return Decision{Allow: true, Rule: "package-registries"}
	}
	return Decision{Allow: false, Rule: "no-rule-lets-it-pass", Reason: "waits for approval"}
}

func newWorld(t testing.TB) *world {
	t.Helper()
	dir := t.TempDir()
	w := &world{root: newTestRoot(t), addrs: map[string]string{}, rec: &recorder{}, dir: dir}
	w.serve(t, apiHost, true, echoHandler(w.rec))
	w.serve(t, registryHost, true, echoHandler(w.rec))
	w.serve(t, plainHost, false, echoHandler(w.rec))
	w.logPath = filepath.Join(dir, "network.jsonl")
	w.bundle = filepath.Join(dir, "tmp", "kule-ca.pem")
	w.secret = Secret{Name: "STRIPE_KEY", Value: secretValue, Hosts: []string{apiHost}}
	return w
}

func (w *world) start(t testing.TB) {
	t.Helper()
	start := Start
	if w.begin {
		start = Begin
	}
	p, err := start(context.Background(), Config{
		Decide:         testDecider,
		LogPath:        w.logPath,
		Secrets:        []Secret{w.secret},
		Registries:     []Registry{{Host: registryHost, ReadOnlyPosts: []string{"/-/audit"}}},
		BundlePath:     w.bundle,
		Token:          testToken,
		off:            w.off,
		UpstreamRoots:  w.root.pool,
		SystemRootsPEM: w.root.pem, // the test's internet root stands in for the system's
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			real, ok := w.addrs[addr]
			if !ok {
				return nil, &net.OpError{Op: "dial", Net: network, Err: os.ErrNotExist}
			}
			var d net.Dialer
			return d.DialContext(ctx, network, real)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	w.proxy = p
	t.Cleanup(func() { p.Close() })
}

func (w *world) placeholder() string {
	for _, kv := range w.proxy.SecretEnv() {
		if v, ok := strings.CutPrefix(kv, "STRIPE_KEY="); ok {
			return v
		}
	}
	return ""
}

// env is the environment a command gets: the proxy's plus PATH and HOME.
func (w *world) env() []string {
	env := append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + w.dir, "GIT_TERMINAL_PROMPT=0"}, w.proxy.Env()...)
	return env
}

func strconvItoa(n int) string { return strconv.Itoa(n) }

const testToken = "test-token-0123"

// authLine is the Proxy-Authorization line a raw request to the proxy needs.
func authLine() string {
	return "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("kule:"+testToken)) + "\r\n"
}

// withAuth puts authLine after the first line of a raw request.
func withAuth(raw string) string {
	i := strings.IndexByte(raw, '\n')
	if i < 0 {
		return raw
	}
	return raw[:i+1] + authLine() + raw[i+1:]
}
