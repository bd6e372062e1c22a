package proxy

import (
	"bytes"
	"errors"
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
