// Package plugintls is the mutual TLS between Kule and a plugin it starts,
// in go-plugin's AutoMTLS protocol but with P-256 keys: AutoMTLS makes a
// P-521 key on each side at every start (several milliseconds of CPU each,
// far more on a loaded machine); a P-256 key takes a fraction of one.
//
// The protocol is AutoMTLS's, so every pairing of an old and a new host and
// plugin works. The host makes its key pair and puts its certificate in
// the plugin's environment (PLUGIN_CLIENT_CERT). The plugin makes its own
// key pair and announces its certificate in the sixth field of the
// handshake line it prints on stdout, which only the process the host
// started can write. Each side then accepts from the other only that one
// certificate; no private key leaves the process that made it, so another
// process can neither call the plugin nor answer in its place.
//
// Host: NewHost, Host.Env, Host.ClientConfig. Plugin: Serve, which
// sdk/plugin's Serve helpers call instead of go-plugin's.
package plugintls

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"strings"
	"time"

	goplugin "github.com/hashicorp/go-plugin"
)

// EnvVar is go-plugin's AutoMTLS variable: the host's certificate in PEM.
const EnvVar = "PLUGIN_CLIENT_CERT"

// maxCert bounds what ParseHostCert reads; a P-521 certificate in PEM is
// under 1 KiB.
const maxCert = 16 << 10

// ErrFormat is returned for a host certificate that does not parse.
var ErrFormat = errors.New("plugintls: malformed " + EnvVar)

// Host is the host's side of one plugin start.
type Host struct {
	cert tls.Certificate
	pem  []byte
}

// NewHost makes the host's key pair for one start.
func NewHost() (*Host, error) {
	cert, err := selfSigned("kule-host", false)
	if err != nil {
		return nil, fmt.Errorf("plugintls: make the host's certificate: %w", err)
	}
	return &Host{cert: cert, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]})}, nil
}

// Env is what the host adds to the plugin's environment.
func (h *Host) Env() []string { return []string{EnvVar + "=" + string(h.pem)} }

// ClientConfig is the host's side, for go-plugin's ClientConfig.TLSConfig:
// it presents the host's certificate and accepts only the certificate the
// plugin announced on its handshake line. go-plugin reads that line and
// puts the announced certificate, alone, in the config's RootCAs before
// it dials; a plugin that announced none is refused.
func (h *Host) ClientConfig() *tls.Config {
	cfg := &tls.Config{
		Certificates: []tls.Certificate{h.cert},
		MinVersion:   tls.VersionTLS13,
		// Verification is VerifyConnection's: against the one announced
		// certificate, whatever name the connection was dialed by.
		InsecureSkipVerify: true,
	}
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		if cfg.RootCAs == nil {
			return errors.New("plugintls: the plugin announced no certificate on its handshake line, so it cannot be told from another process; the connection was refused (build the plugin with Kule's sdk, whose Serve helpers announce one)")
		}
		if len(cs.PeerCertificates) == 0 {
			return errors.New("plugintls: the plugin presented no certificate")
		}
		// The announced certificate verifies only as itself: this
		// package's are no CA. (An older plugin's AutoMTLS certificate is
		// one, but only that plugin holds its key.)
		if _, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: cfg.RootCAs, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			return errors.New("plugintls: the plugin presented a certificate other than the one it announced at its start; the connection was refused (another process may be answering in its place)")
		}
		return nil
	}
	return cfg
}

// Plugin is the plugin's side of one start.
type Plugin struct {
	cert    tls.Certificate
	hostDER []byte
}

// NewPlugin makes the plugin's key pair, pinned to the host certificate
// hostPEM (the value of EnvVar).
func NewPlugin(hostPEM string) (*Plugin, error) {
	host, err := ParseHostCert(hostPEM)
	if err != nil {
		return nil, err
	}
	cert, err := selfSigned("localhost", true)
	if err != nil {
		return nil, fmt.Errorf("plugintls: make the plugin's certificate: %w", err)
	}
	return &Plugin{cert: cert, hostDER: host.Raw}, nil
}

// ParseHostCert reads the host's certificate from a value of EnvVar.
func ParseHostCert(value string) (*x509.Certificate, error) {
	if len(value) > maxCert {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrFormat, len(value), maxCert)
	}
	block, rest := pem.Decode([]byte(value))
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("%w: no PEM certificate", ErrFormat)
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return nil, fmt.Errorf("%w: more than one certificate", ErrFormat)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	return cert, nil
}

// Config is the plugin's side: it presents the plugin's certificate and
// accepts a caller only with the host's exact certificate.
func (p *Plugin) Config() *tls.Config {
	return &tls.Config{
		Certificates:           []tls.Certificate{p.cert},
		ClientAuth:             tls.RequireAnyClientCert,
		MinVersion:             tls.VersionTLS13,
		SessionTicketsDisabled: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 || !bytes.Equal(cs.PeerCertificates[0].Raw, p.hostDER) {
				return errors.New("plugintls: a caller without the certificate of the host that started this plugin was refused")
			}
			return nil
		},
	}
}

// Announce puts the plugin's certificate into go-plugin's handshake line
// (CORE|APP|NETWORK|ADDR|PROTOCOL|CERT[|MUX]), whose sixth field a
// TLSProvider leaves empty. A line that is not one, or that carries a
// certificate already, is returned as it is.
func (p *Plugin) Announce(line string) string {
	return announce(line, base64.RawStdEncoding.EncodeToString(p.cert.Certificate[0]))
}

func announce(line, cert string) string {
	body, nl := strings.CutSuffix(line, "\n")
	parts := strings.Split(body, "|")
	if len(parts) < 6 || parts[5] != "" {
		return line
	}
	parts[5] = cert
	out := strings.Join(parts, "|")
	if nl {
		out += "\n"
	}
	return out
}

// Serve is go-plugin's Serve with this package's TLS, when the host asked
// for TLS (EnvVar is set) and cfg has no TLSProvider of its own; otherwise
// it is go-plugin's Serve as it is. It does not return until the host ends
// the plugin. A host certificate that does not parse stops the plugin with
// an error on stderr that says so.
func Serve(cfg *goplugin.ServeConfig) {
	hostPEM := os.Getenv(EnvVar)
	if hostPEM == "" {
		goplugin.Serve(cfg)
		return
	}
	p, err := NewPlugin(hostPEM)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kule plugin: %v; the plugin did not start (the host that started it is not Kule, or it and this plugin's sdk disagree)\n", err)
		os.Exit(1)
	}
	p.Serve(cfg)
}

// Serve serves cfg with p's certificate announced on the handshake line.
// A TLSProvider cfg already has is kept, so a test can serve with another
// certificate than the announced one.
func (p *Plugin) Serve(cfg *goplugin.ServeConfig) {
	if cfg.TLSProvider == nil {
		c := p.Config()
		cfg.TLSProvider = func() (*tls.Config, error) { return c, nil }
	}
	// go-plugin prints its handshake line on os.Stdout and then points
	// os.Stdout at a pipe of its own; the line passes through here on its
	// way to the real stdout, where the certificate goes into it.
	stdout := os.Stdout
	r, w, err := os.Pipe()
	if err != nil {
		fmt.Fprintf(os.Stderr, "kule plugin: %v; the plugin did not start\n", err)
		os.Exit(1)
	}
	os.Stdout = w
	go func() {
		br := bufio.NewReader(r)
		for {
			line, err := br.ReadString('\n')
			out := p.Announce(line)
			if _, werr := io.WriteString(stdout, out); werr != nil || err != nil {
				return
			}
			if out != line { // the handshake line; what follows is not go-plugin's
				_, _ = io.Copy(stdout, br)
				return
			}
		}
	}()
	goplugin.Serve(cfg)
}

// selfSigned makes a P-256 key and a self-signed certificate for it. The
// pin gives it meaning, not a chain: it is no CA, so nothing verifies
// through it but itself. localhost and the long validity are for an older
// host's AutoMTLS, which checks both; a certificate lives only as long as
// the process it was made for.
func selfSigned(name string, server bool) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	sn, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return tls.Certificate{}, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(20 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
	}
	if server {
		tmpl.DNSNames = []string{"localhost"}
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
