//go:build linux

package sandbox

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kulehq/kule/kernel/internal/runner"
)

// attackTLS serves TLS on a unix socket in /tmp (the sandbox lets a command
// connect over TCP to the proxy alone) with the certificate and key args[0]
// and args[1] and connects to it trusting what the environment says
// (SSL_CERT_FILE, as Go, OpenSSL and most tools read it): it prints
// "tls: verified" when the handshake verifies.
func attackTLS(args []string) {
	cert, err := tls.LoadX509KeyPair(args[0], args[1])
	if err != nil {
		fmt.Println("tls: no certificate:", err)
		return
	}
	os.Remove("/tmp/tls.sock") // an earlier run's
	ln, err := tls.Listen("unix", "/tmp/tls.sock", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		fmt.Println("tls: listen:", err)
		return
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	fmt.Println("SSL_CERT_FILE=" + os.Getenv("SSL_CERT_FILE"))
	c, err := tls.Dial("unix", "/tmp/tls.sock", &tls.Config{ServerName: "registry.example"})
	if err != nil {
		fmt.Println("tls: failed:", err)
		return
	}
	c.Close()
	fmt.Println("tls: verified")
}

// newCA makes a certificate authority, and a function that writes a server
// certificate for registry.example it signed, with its key.
func newCA(t *testing.T, name string) (caPEM string, signed func(certPath, keyPath string)) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	caPEM = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	return caPEM, func(certPath, keyPath string) {
		lk, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		lt := &x509.Certificate{
			SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "registry.example"},
			DNSNames:  []string{"registry.example"},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		}
		ld, err := x509.CreateCertificate(rand.Reader, lt, ca, &lk.PublicKey, key)
		if err != nil {
			t.Fatal(err)
		}
		kd, err := x509.MarshalECPrivateKey(lk)
		if err != nil {
			t.Fatal(err)
		}
		write(t, certPath, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ld})))
		write(t, keyPath, string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd})))
	}
}

// TestKuleBundleWins: the person's own SSL_CERT_FILE (a file of their
// roots) is in the environment Kule passes, and the task's proxy puts its
// bundle in SSL_CERT_FILE among the task's variables. The command trusts
// the task's bundle, so a connection the proxy intercepts verifies; with
// the person's variable left in (the guard taken away) the same connection
// fails verification, as it did.
func TestKuleBundleWins(t *testing.T) {
	skipUnlessSandbox(t)
	w := newWorld(t)
	personCA, _ := newCA(t, "the person's own root")
	personFile := filepath.Join(w.root, "person-roots.pem")
	write(t, personFile, personCA)
	kuleCA, sign := newCA(t, "the task's proxy")
	write(t, filepath.Join(w.task.Tmp, "kule-ca-bundle.pem"), personCA+kuleCA)
	certPath, keyPath := filepath.Join(w.task.Copy, "leaf.pem"), filepath.Join(w.task.Copy, "leaf.key")
	sign(certPath, keyPath)

	spec := runner.Spec{
		Env:     append(append([]string(nil), w.env...), "SSL_CERT_FILE="+personFile),
		TaskEnv: []string{"SSL_CERT_FILE=/tmp/kule-ca-bundle.pem"},
		Network: runner.NetworkNone,
	}
	off := w.sandbox()
	off.off.caEnv = true
	r := w.attackWith(t, off, spec, "tls", certPath, keyPath)
	if !strings.Contains(r.stdout, "SSL_CERT_FILE="+personFile) || !strings.Contains(r.stdout, "tls: failed: tls: failed to verify certificate: x509: certificate signed by unknown authority") {
		t.Fatalf("with the person's SSL_CERT_FILE first, the intercepted connection should fail:\n%s\nstderr: %s", r.stdout, r.stderr)
	}
	r = w.attackWith(t, w.sandbox(), spec, "tls", certPath, keyPath)
	if !strings.Contains(r.stdout, "SSL_CERT_FILE=/tmp/kule-ca-bundle.pem") || !strings.Contains(r.stdout, "tls: verified") {
		t.Fatalf("the task's bundle does not win:\n%s\nstderr: %s", r.stdout, r.stderr)
	}
}
