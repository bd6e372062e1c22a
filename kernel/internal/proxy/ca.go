package proxy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// authority is the per-run certificate authority. Its key lives only in this
// process's memory; X.509 name constraints let it vouch for the intercepted
// hosts (and their subdomains, as dNSName constraints always do) and for
// nothing else: no other DNS name, no IP address.
type authority struct {
	cert    *x509.Certificate
	certPEM []byte
	key     *ecdsa.PrivateKey
	hosts   map[string]bool

	// leafKey is one key for every leaf of this run, made at the first
	// leaf: most runs look into no host and never need it.
	leafOnce sync.Once
	leafKey  *ecdsa.PrivateKey
	leafErr  error

	mu    sync.Mutex
	cache map[string]*tls.Certificate
}

func newAuthority(hosts []string, now time.Time) (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("proxy: make run authority: %w", err)
	}
	hs := map[string]bool{}
	var permitted []string
	for _, h := range hosts {
		h = normHost(h)
		if h == "" || hs[h] {
			continue
		}
		hs[h] = true
		permitted = append(permitted, h)
	}
	sort.Strings(permitted)
	_, all4, _ := net.ParseCIDR("0.0.0.0/0")
	_, all6, _ := net.ParseCIDR("::/0")
	tmpl := &x509.Certificate{
		SerialNumber:                serial(),
		Subject:                     pkix.Name{CommonName: "Kule run authority " + now.UTC().Format(time.RFC3339), Organization: []string{"Kule (this run only)"}},
		NotBefore:                   now.Add(-time.Hour),
		NotAfter:                    now.Add(7 * 24 * time.Hour),
		IsCA:                        true,
		BasicConstraintsValid:       true,
		MaxPathLen:                  0,
		MaxPathLenZero:              true,
		KeyUsage:                    x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage:                 []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		PermittedDNSDomainsCritical: true,
		PermittedDNSDomains:         permitted,
		ExcludedIPRanges:            []*net.IPNet{all4, all6},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("proxy: make run authority: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("proxy: make run authority: %w", err)
	}
	return &authority{
		cert:    cert,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		key:     key,
		hosts:   hs,
		cache:   map[string]*tls.Certificate{},
	}, nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}

// leaf returns the certificate for host, made once per run. Hosts outside the
// authority's own list are refused here too (the name constraints would make
// any client refuse them anyway).
func (a *authority) leaf(host string) (*tls.Certificate, error) {
	host = normHost(host)
	if !a.hosts[host] {
		return nil, fmt.Errorf("%w: %s", ErrNotIntercepted, host)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if c, ok := a.cache[host]; ok {
		return c, nil
	}
	c, err := a.sign(host, time.Now())
	if err != nil {
		return nil, err
	}
	a.cache[host] = c
	return c, nil
}

// sign issues a server certificate for name without checking the list; only
// leaf (and tests that try to make the authority overreach) call it.
func (a *authority) sign(name string, now time.Time) (*tls.Certificate, error) {
	a.leafOnce.Do(func() {
		a.leafKey, a.leafErr = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	})
	if a.leafErr != nil {
		return nil, fmt.Errorf("proxy: certificate for %s: %w", name, a.leafErr)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     a.cert.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip := net.ParseIP(name); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{name}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &a.leafKey.PublicKey, a.key)
	if err != nil {
		return nil, fmt.Errorf("proxy: certificate for %s: %w", name, err)
	}
	leaf, _ := x509.ParseCertificate(der)
	return &tls.Certificate{Certificate: [][]byte{der, a.cert.Raw}, PrivateKey: a.leafKey, Leaf: leaf}, nil
}

// systemBundlePaths are where Linux distributions keep their root bundle.
var systemBundlePaths = []string{
	"/etc/ssl/certs/ca-certificates.crt",                // Debian, Ubuntu, Arch, Alpine
	"/etc/pki/tls/certs/ca-bundle.crt",                  // Fedora, RHEL
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", // RHEL 7+
	"/etc/ssl/ca-bundle.pem",                            // openSUSE
	"/etc/ssl/cert.pem",                                 // Alpine, macOS
}

// openSystemRoots opens the system's root bundle (the first non-empty one).
func openSystemRoots() (*os.File, error) {
	paths := systemBundlePaths
	if f := os.Getenv("SSL_CERT_FILE"); f != "" {
		paths = append([]string{f}, paths...)
	}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > 0 {
			return f, nil
		}
		f.Close()
	}
	return nil, fmt.Errorf("%w (looked in %s; install ca-certificates)", ErrNoSystemRoots, strings.Join(paths, ", "))
}

// writeBundle writes the CA bundle: the system's roots (roots, or the
// system's bundle file when roots is nil), then the run authority. The
// system's file is copied by the kernel (copy_file_range): its ~200 KB never
// pass through this process's heap, which would otherwise cost every run a
// garbage collection cycle just before the sandbox forks.
//
// The bundle lies in the task's tmp, which the sandboxed command may write:
// whatever is at path (a link an earlier command planted, to a file of the
// person's) is removed, never written through, and the new file is made
// with O_EXCL. Removing it first also spares ext4 the flush it starts when a
// truncated file is closed.
func writeBundle(path string, roots []byte, caPEM []byte) (err error) {
	var src *os.File
	if roots == nil {
		if src, err = openSystemRoots(); err != nil {
			return err
		}
		defer src.Close()
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("proxy: write CA bundle: %w", err)
	}
	var f *os.File
	for try := 0; ; try++ {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("proxy: write CA bundle: %w", err)
		}
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|oNoFollow, 0o644)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || try > 0 {
			return fmt.Errorf("proxy: write CA bundle: %w", err)
		}
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("proxy: write CA bundle: %w", cerr)
		}
	}()
	if src != nil {
		_, err = io.Copy(f, src)
	} else {
		_, err = f.Write(roots)
	}
	if err == nil {
		_, err = f.Write(append([]byte{'\n'}, caPEM...))
	}
	if err != nil {
		return fmt.Errorf("proxy: write CA bundle: %w", err)
	}
	return nil
}

func normHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
}
