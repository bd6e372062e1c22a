package plugintls

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// handshake runs one TLS handshake between client and server over a Unix
// socket, as go-plugin's, and returns each side's error.
func handshake(t *testing.T, client, server *tls.Config) (cerr, serr error) {
	t.Helper()
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "plugin.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		s, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer s.Close()
		_ = s.SetDeadline(time.Now().Add(time.Minute))
		ts := tls.Server(s, server)
		err = ts.Handshake()
		if err == nil {
			// A TLS 1.3 server may finish before it judged the client's
			// certificate; reading the client's byte settles it.
			var b [1]byte
			_, err = ts.Read(b[:])
		}
		done <- err
	}()
	c, err := net.Dial("unix", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Minute))
	tc := tls.Client(c, client)
	cerr = tc.Handshake()
	if cerr == nil {
		_, cerr = tc.Write([]byte("x"))
	}
	serr = <-done
	return cerr, serr
}

// start is one start's two sides, with the host's config as go-plugin
// leaves it once it read the plugin's handshake line.
func start(t *testing.T) (*Host, *Plugin, *tls.Config) {
	t.Helper()
	h, err := NewHost()
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlugin(hostPEM(h))
	if err != nil {
		t.Fatal(err)
	}
	return h, p, readLine(t, h.ClientConfig(), p.Announce("1|1|unix|/run/plugin.sock|grpc|\n"))
}

func hostPEM(h *Host) string { return strings.TrimPrefix(h.Env()[0], EnvVar+"=") }

// readLine is go-plugin's client.go on a handshake line: the sixth field,
// when long enough, becomes cfg's RootCAs (loadServerCert).
func readLine(t *testing.T, cfg *tls.Config, line string) *tls.Config {
	t.Helper()
	parts := strings.Split(strings.TrimSpace(line), "|")
	if len(parts) >= 6 && len(parts[5]) > 50 {
		der, err := base64.RawStdEncoding.DecodeString(parts[5])
		if err != nil {
			t.Fatal(err)
		}
		c, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		pool := x509.NewCertPool()
		pool.AddCert(c)
		cfg.RootCAs = pool
	}
	return cfg
}

func TestHostAndPluginOfOneStartTalk(t *testing.T) {
	_, p, host := start(t)
	if cerr, serr := handshake(t, host, p.Config()); cerr != nil || serr != nil {
		t.Fatalf("host: %v; plugin: %v", cerr, serr)
	}
}

// withoutPin is cfg with its pin taken away: the guard removed, for the
// attack tests to show each attack working without it.
func withoutPin(cfg *tls.Config) *tls.Config {
	cfg = cfg.Clone()
	cfg.VerifyConnection = nil
	if cfg.ClientAuth == tls.RequireAnyClientCert {
		cfg.ClientAuth = tls.RequestClientCert
	}
	return cfg
}

// A process that is not the host (a key of its own, or none) cannot talk
// to the plugin; without the pin it could.
func TestPluginRefusesACallerWithoutTheHostsCertificate(t *testing.T) {
	_, p, _ := start(t)
	other, err := NewHost()
	if err != nil {
		t.Fatal(err)
	}
	// The attacker accepts whatever the plugin presents.
	attacker := withoutPin(other.ClientConfig())
	noCert := attacker.Clone()
	noCert.Certificates = nil
	for name, caller := range map[string]*tls.Config{"another key": attacker, "no certificate": noCert} {
		if _, serr := handshake(t, caller, p.Config()); serr == nil {
			t.Errorf("%s: the plugin accepted a caller that is not its host", name)
		}
		if _, serr := handshake(t, caller, withoutPin(p.Config())); serr != nil {
			t.Errorf("%s, pin taken away: the attack did not work, so the test proves nothing: %v", name, serr)
		}
	}
}

// A process answering in the plugin's place, with a key of its own, is
// refused by the host; without the pin it would be believed.
func TestHostRefusesAPluginWithAnotherCertificate(t *testing.T) {
	h, _, host := start(t)
	impostor, err := NewPlugin(hostPEM(h)) // even accepts the real host
	if err != nil {
		t.Fatal(err)
	}
	cerr, _ := handshake(t, host, impostor.Config())
	if cerr == nil || !strings.Contains(cerr.Error(), "other than the one it announced") {
		t.Fatalf("the host accepted an impostor's certificate (err %v)", cerr)
	}
	if cerr, _ := handshake(t, withoutPin(host), impostor.Config()); cerr != nil {
		t.Fatalf("pin taken away: the attack did not work, so the test proves nothing: %v", cerr)
	}
	// A plugin that announced nothing is refused whatever it presents.
	if cerr, _ := handshake(t, h.ClientConfig(), impostor.Config()); cerr == nil || !strings.Contains(cerr.Error(), "announced no certificate") {
		t.Fatalf("a plugin that announced no certificate: err %v", cerr)
	}
}

// Older sides speak go-plugin's own AutoMTLS: a plugin trusts the host's
// certificate from PLUGIN_CLIENT_CERT and announces a P-521 CA certificate
// of its own; a host makes a P-521 certificate and dials with ServerName
// localhost. Each pairs with this package's other side.
func TestOlderSidesOfAutoMTLSStillTalk(t *testing.T) {
	h, _, _ := start(t)
	old, err := p521Pair()
	if err != nil {
		t.Fatal(err)
	}
	// An older plugin, as go-plugin's server.go configures it.
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(hostPEM(h))) {
		t.Fatal("the host's certificate in " + EnvVar + " does not parse as PEM")
	}
	oldPlugin := &tls.Config{Certificates: []tls.Certificate{old}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool, MinVersion: tls.VersionTLS12}
	line := announce("1|1|unix|/run/plugin.sock|grpc|", base64.RawStdEncoding.EncodeToString(old.Certificate[0]))
	host := readLine(t, h.ClientConfig(), line)
	if cerr, serr := handshake(t, host, oldPlugin); cerr != nil || serr != nil {
		t.Fatalf("an older plugin: host: %v; plugin: %v", cerr, serr)
	}

	// An older host, as go-plugin's client.go configures it, with this
	// package's plugin pinned to its certificate.
	oldHostPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: old.Certificate[0]})
	np, err := NewPlugin(string(oldHostPEM))
	if err != nil {
		t.Fatal(err)
	}
	oldHost := readLine(t, &tls.Config{Certificates: []tls.Certificate{old}, MinVersion: tls.VersionTLS12, ServerName: "localhost"},
		np.Announce("1|1|unix|/run/plugin.sock|grpc|"))
	if cerr, serr := handshake(t, oldHost, np.Config()); cerr != nil || serr != nil {
		t.Fatalf("an older host: host: %v; plugin: %v", cerr, serr)
	}
}

func TestAnnounce(t *testing.T) {
	for in, want := range map[string]string{
		"1|1|unix|/s|grpc|\n":      "1|1|unix|/s|grpc|CERT\n",
		"1|1|unix|/s|grpc|":        "1|1|unix|/s|grpc|CERT",
		"1|1|unix|/s|grpc||true\n": "1|1|unix|/s|grpc|CERT|true\n",
		"1|1|unix|/s|grpc|OTHER\n": "1|1|unix|/s|grpc|OTHER\n", // a certificate already
		"1|1|unix|/s|grpc\n":       "1|1|unix|/s|grpc\n",       // no sixth field
		"not a line":               "not a line",
	} {
		if got := announce(in, "CERT"); got != want {
			t.Errorf("announce(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseHostCertRefusesWhatIsNotOne(t *testing.T) {
	h, err := NewHost()
	if err != nil {
		t.Fatal(err)
	}
	good := hostPEM(h)
	block, _ := pem.Decode([]byte(good))
	for name, v := range map[string]string{
		"empty":       "",
		"not PEM":     "MIIB...",
		"a key":       string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: block.Bytes})),
		"truncated":   string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: block.Bytes[:len(block.Bytes)/2]})),
		"two":         good + good,
		"too long":    good + strings.Repeat(" ", maxCert),
		"PEM of junk": string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("junk")})),
	} {
		if _, err := ParseHostCert(v); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: ParseHostCert = %v, want ErrFormat", name, err)
		}
		if _, err := NewPlugin(v); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: NewPlugin = %v, want ErrFormat", name, err)
		}
	}
	if _, err := ParseHostCert(good); err != nil {
		t.Fatal(err)
	}
}

func FuzzParseHostCert(f *testing.F) {
	h, err := NewHost()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(hostPEM(h))
	f.Add("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, v string) {
		c, err := ParseHostCert(v)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v is not ErrFormat", err)
			}
			return
		}
		if len(c.Raw) == 0 {
			t.Fatal("a parsed certificate without its bytes")
		}
	})
}

// FuzzAnnounce: the line comes back as it was, or with only its sixth
// field, then empty, filled.
func FuzzAnnounce(f *testing.F) {
	f.Add("1|1|unix|/s|grpc|\n")
	f.Add("1|1|unix|/s|grpc||true")
	f.Add("|||||")
	f.Fuzz(func(t *testing.T, line string) {
		got := announce(line, "CERT")
		if got == line {
			return
		}
		a := strings.Split(strings.TrimSuffix(line, "\n"), "|")
		b := strings.Split(strings.TrimSuffix(got, "\n"), "|")
		if len(a) != len(b) || a[5] != "" || b[5] != "CERT" || strings.HasSuffix(line, "\n") != strings.HasSuffix(got, "\n") {
			t.Fatalf("announce(%q) = %q", line, got)
		}
		for i := range a {
			if i != 5 && a[i] != b[i] {
				t.Fatalf("announce(%q) = %q: field %d changed", line, got, i)
			}
		}
	})
}

// BenchmarkKeys measures what one start's keys cost now (the host's and
// the plugin's P-256 pairs and certificates) against the named peer,
// go-plugin's AutoMTLS (a P-521 pair and certificate on each side, made as
// its mtls.go makes them), interleaved in one loop.
func BenchmarkKeys(b *testing.B) {
	var pinned, autoMTLS time.Duration
	for b.Loop() {
		t0 := time.Now()
		h, err := NewHost()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := NewPlugin(string(h.pem)); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		for range 2 {
			if _, err := p521Pair(); err != nil {
				b.Fatal(err)
			}
		}
		autoMTLS += time.Since(t1)
		pinned += t1.Sub(t0)
	}
	n := float64(b.N)
	b.ReportMetric(float64(pinned.Microseconds())/n, "µs-p256/start")
	b.ReportMetric(float64(autoMTLS.Microseconds())/n, "µs-automtls/start")
	b.ReportMetric(float64(autoMTLS)/float64(pinned), "ratio-automtls/p256")
}

// p521Pair is go-plugin's generateCert (mtls.go): a P-521 key and a
// self-signed CA certificate for it.
func p521Pair() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost", Organization: []string{"HashiCorp"}}, DNSNames: []string{"localhost"},
		NotBefore: time.Now().Add(-30 * time.Second), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageKeyAgreement | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
