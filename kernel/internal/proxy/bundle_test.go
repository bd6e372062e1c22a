package proxy

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// The bundle a command trusts is the system's roots, then the run authority;
// the system's file is copied as it is.
func TestBundleFromSystemFile(t *testing.T) {
	dir := t.TempDir()
	roots := filepath.Join(dir, "roots.pem")
	want := []byte("-----BEGIN CERTIFICATE-----\nsystem root\n-----END CERTIFICATE-----\n")
	if err := os.WriteFile(roots, want, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSL_CERT_FILE", roots)
	bundle := filepath.Join(dir, "tmp", "kule-ca-bundle.pem")
	if err := os.MkdirAll(filepath.Dir(bundle), 0o755); err != nil {
		t.Fatal(err)
	}
	// A longer bundle from an earlier run is replaced whole.
	if err := os.WriteFile(bundle, bytes.Repeat([]byte("old run\n"), 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Start(t.Context(), Config{Decide: testDecider, Registries: []Registry{{Host: "registry.example"}}, BundlePath: bundle})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	got, err := os.ReadFile(bundle)
	if err != nil {
		t.Fatal(err)
	}
	if exp := append(append(append([]byte{}, want...), '\n'), p.CACertPEM()...); !bytes.Equal(got, exp) {
		t.Fatalf("bundle is\n%s\nwant the system's roots then the run authority:\n%s", got, exp)
	}
}

// No system bundle anywhere: the proxy does not start, and says what to
// install.
func TestBundleWithoutSystemRoots(t *testing.T) {
	old := systemBundlePaths
	systemBundlePaths = []string{filepath.Join(t.TempDir(), "none.pem")}
	defer func() { systemBundlePaths = old }()
	t.Setenv("SSL_CERT_FILE", "")
	empty := filepath.Join(t.TempDir(), "empty.pem")
	os.WriteFile(empty, nil, 0o644)
	systemBundlePaths = append(systemBundlePaths, empty) // an empty file is no bundle
	_, err := Start(t.Context(), Config{Decide: testDecider, Registries: []Registry{{Host: "registry.example"}}, BundlePath: filepath.Join(t.TempDir(), "b.pem")})
	if !errors.Is(err, ErrNoSystemRoots) {
		t.Fatalf("err = %v, want ErrNoSystemRoots", err)
	}
}

// The bundle lies where sandboxed commands write (the task's tmp): a link an
// earlier command planted there is replaced, never written through.
func TestBundleNeverWritesThroughALink(t *testing.T) {
	dir := t.TempDir()
	precious := filepath.Join(dir, "bashrc")
	if err := os.WriteFile(precious, []byte("the person's file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(dir, "tmp", "kule-ca-bundle.pem")
	os.MkdirAll(filepath.Dir(bundle), 0o755)
	if err := os.Symlink(precious, bundle); err != nil {
		t.Fatal(err)
	}
	p, err := Start(t.Context(), Config{Decide: testDecider, Registries: []Registry{{Host: "registry.example"}}, BundlePath: bundle, SystemRootsPEM: []byte("roots\n")})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if b, _ := os.ReadFile(precious); string(b) != "the person's file\n" {
		t.Fatalf("the linked file now holds %q", b)
	}
	st, err := os.Lstat(bundle)
	if err != nil || !st.Mode().IsRegular() {
		t.Fatalf("bundle: %v, %v; want a regular file", st, err)
	}
	if b, _ := os.ReadFile(bundle); !bytes.HasPrefix(b, []byte("roots\n\n-----BEGIN CERTIFICATE-----")) {
		t.Fatalf("bundle holds %q", b)
	}
}

// Begin listens at once and makes the run authority in the background: a
// connection to an intercepted host that comes before Ready waits for it and
// gets a leaf the bundle's authority vouches for.
func TestBeginInterceptsBeforeReady(t *testing.T) {
	w := newWorld(t)
	w.begin = true
	w.start(t)
	c, err := net.Dial("tcp", w.proxy.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT %s:443 HTTP/1.1\r\nHost: %s:443\r\n%s\r\n", apiHost, apiHost, authLine())
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", err, resp)
	}
	// No trust yet: the authority may not exist. The chain is checked below.
	tc := tls.Client(c, &tls.Config{ServerName: apiHost, InsecureSkipVerify: true})
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	if err := w.proxy.Ready(); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(w.proxy.CACertPEM()) {
		t.Fatal("no run authority after Ready")
	}
	leaf := tc.ConnectionState().PeerCertificates[0]
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: apiHost, Roots: pool}); err != nil {
		t.Fatalf("the leaf served before Ready: %v", err)
	}
	b, err := os.ReadFile(w.bundle)
	if err != nil || !bytes.HasSuffix(b, w.proxy.CACertPEM()) {
		t.Fatalf("bundle after Ready: %v; want it to end with the run authority", err)
	}
}
