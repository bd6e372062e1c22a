// Package secrets keeps the person's secrets (API keys and the like) under
// $KULE_HOME/secrets, each sealed with AES-256-GCM. The sealing key comes from
// the system's Secret Service (D-Bus, org.freedesktop.secrets) when one runs,
// else from a key file $KULE_HOME/keys/secrets.key (0600). The choice is made
// once, when the first secret is kept, and written to secrets/sealing so a
// later run never silently switches: a keyring that does not answer is an
// error, not a reason to fall back.
//
// Values go to commands only as placeholders, through the task's proxy
// (package proxy); nothing here ever prints a value.
package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kulehq/kule/kernel/internal/atomicfile"
	"github.com/kulehq/kule/kernel/internal/lazyre"
)

// Errors a caller can test for.
var (
	ErrNotFound = errors.New("secrets: no such secret")
	ErrBadName  = errors.New("secrets: a secret's name must be a variable name (letters, digits, _)")
	ErrBadHost  = errors.New("secrets: a host is a plain DNS name such as api.example.com")
	ErrNoHost   = errors.New("secrets: a secret needs at least one host (--host)")
	// ErrAddressHost: an IP address as a secret's host. The proxy puts a
	// secret in only where it reads the request inside TLS, and the run's
	// certificate authority signs names only, so it could never be sent.
	ErrAddressHost    = errors.New("secrets: a host is a DNS name, not an address: the run's certificate authority signs no certificate for an address, so a secret kept for one could never be sent")
	ErrEmptyValue     = errors.New("secrets: the value is empty")
	ErrBadValue       = errors.New("secrets: the value holds a control character (a line break?) that no request header may carry")
	ErrKeyUnavailable = errors.New("secrets: the sealing key is not available")
	ErrDamaged        = errors.New("secrets: a sealed file is damaged or was sealed with another key")
	ErrKeyFileMode    = errors.New("secrets: the key file is readable by others")
)

// Sealings.
const (
	KeyFile       = "key-file"
	SecretService = "secret-service"
)

// Sealer seals and opens small blobs; aad binds a blob to its name.
type Sealer interface {
	Seal(plain, aad []byte) ([]byte, error)
	Open(sealed, aad []byte) ([]byte, error)
	Kind() string     // KeyFile or SecretService
	Describe() string // for `kule secrets list`
}

type aeadSealer struct {
	aead       cipher.AEAD
	kind, desc string
}

func newAEAD(key []byte, kind, desc string) (*aeadSealer, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("%w: key has %d bytes, want 32", ErrKeyUnavailable, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &aeadSealer{aead: aead, kind: kind, desc: desc}, nil
}

func (s *aeadSealer) Seal(plain, aad []byte) ([]byte, error) {
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return s.aead.Seal(nonce, nonce, plain, aad), nil
}

func (s *aeadSealer) Open(sealed, aad []byte) ([]byte, error) {
	ns := s.aead.NonceSize()
	if len(sealed) < ns {
		return nil, ErrDamaged
	}
	plain, err := s.aead.Open(nil, sealed[:ns], sealed[ns:], aad)
	if err != nil {
		return nil, ErrDamaged
	}
	return plain, nil
}

func (s *aeadSealer) Kind() string     { return s.kind }
func (s *aeadSealer) Describe() string { return s.desc }

// KeyFilePath is where the key file lives in a Kule home.
func KeyFilePath(home string) string { return filepath.Join(home, "keys", "secrets.key") }

func sealingPath(home string) string { return filepath.Join(home, "secrets", "sealing") }

// keyFileSealer reads (or makes, 0600) the key file.
func keyFileSealer(home string) (Sealer, error) {
	p := KeyFilePath(home)
	key, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return nil, fmt.Errorf("secrets: key file: %w", err)
		}
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
		// Exclusive: the key appears whole under its name or not at all,
		// and a key another kule made meanwhile is kept and read.
		err := atomicfile.WriteWith(p, atomicfile.Options{Perm: 0o600, Exclusive: true}, func(w io.Writer) error {
			_, err := w.Write(key)
			return err
		})
		if errors.Is(err, os.ErrExist) {
			return keyFileSealer(home) // made meanwhile by another kule
		}
		if err != nil {
			return nil, fmt.Errorf("secrets: key file: %w", err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrKeyUnavailable, err)
	} else if fi, err := os.Stat(p); err == nil && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s is %v; run `chmod 600 %s` (nothing was read)", ErrKeyFileMode, p, fi.Mode().Perm(), p)
	}
	return newAEAD(key, KeyFile, "key file "+p)
}

// OpenSealer returns the home's sealer: the one recorded in secrets/sealing,
// or, the first time, the Secret Service when one answers and the key file
// otherwise (and records the choice). preferKeyFile skips the Secret Service.
func OpenSealer(home string, preferKeyFile bool) (Sealer, error) {
	b, err := os.ReadFile(sealingPath(home))
	switch {
	case err == nil:
		switch kind := strings.TrimSpace(string(b)); kind {
		case KeyFile:
			return keyFileSealer(home)
		case SecretService:
			s, err := secretServiceSealer(home)
			if err != nil {
				return nil, fmt.Errorf("%w: the secrets of %s are sealed with a key kept in the Secret Service, which did not give it (%v); unlock the keyring or log in to a desktop session, then try again. Nothing was changed", ErrKeyUnavailable, home, err)
			}
			return s, nil
		default:
			return nil, fmt.Errorf("%w: %s names an unknown sealing %q", ErrDamaged, sealingPath(home), kind)
		}
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("secrets: %w", err)
	}
	var s Sealer
	if !preferKeyFile {
		if ss, err := secretServiceSealer(home); err == nil {
			s = ss
		}
	}
	if s == nil {
		if s, err = keyFileSealer(home); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(filepath.Dir(sealingPath(home)), 0o700); err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	if err := atomicfile.Write(sealingPath(home), []byte(s.Kind()+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	return s, nil
}

// Secret is one kept secret.
type Secret struct {
	Name  string    `json:"name"`
	Hosts []string  `json:"hosts"`
	Value string    `json:"value,omitempty"`
	Added time.Time `json:"added"`
	// Lease, when set, makes tasks hold the secret only as a lease (see
	// Leases); a minted secret has no Value.
	Lease *LeaseSpec `json:"lease,omitempty"`
}

// Store is $KULE_HOME/secrets.
type Store struct {
	dir    string
	sealer Sealer
}

// Open opens the store of home with its sealer (see OpenSealer).
func Open(home string) (*Store, error) {
	s, err := OpenSealer(home, os.Getenv("KULE_SECRETS_KEYFILE") == "1")
	if err != nil {
		return nil, err
	}
	return OpenWith(home, s)
}

// OpenWith opens the store of home with a given sealer.
func OpenWith(home string, s Sealer) (*Store, error) {
	dir := filepath.Join(home, "secrets")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	return &Store{dir: dir, sealer: s}, nil
}

// Sealer is the store's sealer (tasks seal their secrets.json with it).
func (s *Store) Sealer() Sealer { return s.sealer }

var (
	nameRe = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
	hostRe = lazyre.New(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$`)
)

// CheckHost normalises a host a secret is kept for and refuses anything but
// a plain DNS name (no scheme, path or wildcard) or an endpoint, host:port,
// whose host is a DNS name or this machine's loopback address (a model on
// this machine, which gets the key over plain HTTP). An IP address of its
// own is refused with ErrAddressHost, which says why.
func CheckHost(h string) (string, error) {
	h = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
	if host, port, err := net.SplitHostPort(h); err == nil {
		n, perr := strconv.Atoi(port)
		if perr != nil || n < 1 || n > 65535 {
			return "", fmt.Errorf("%w: %q", ErrBadHost, h)
		}
		if ip := net.ParseIP(host); ip != nil {
			if !ip.IsLoopback() {
				return "", fmt.Errorf("%w: %q (only this machine's loopback is reached by address)", ErrAddressHost, h)
			}
			return net.JoinHostPort(ip.String(), port), nil
		}
		name, err := CheckHost(host)
		if err != nil {
			return "", err
		}
		return net.JoinHostPort(name, port), nil
	}
	if net.ParseIP(strings.Trim(h, "[]")) != nil {
		return "", fmt.Errorf("%w: %q", ErrAddressHost, h)
	}
	if h == "" || len(h) > 253 || !hostRe.MatchString(h) {
		return "", fmt.Errorf("%w: %q", ErrBadHost, h)
	}
	return h, nil
}

type sealedFile struct {
	Version int    `json:"version"`
	Sealing string `json:"sealing"`
	Sealed  []byte `json:"sealed"`
}

func (s *Store) path(name string) string { return filepath.Join(s.dir, name+".sealed") }

func aad(name string) []byte { return []byte("kule-secret:" + name) }

// Add keeps a secret (replacing one of the same name); it reports whether one
// was replaced.
func (s *Store) Add(name, value string, hosts []string) (bool, error) {
	return s.add(Secret{Name: name, Value: value, Hosts: hosts})
}

func (s *Store) add(sec Secret) (bool, error) {
	name, value, hosts := sec.Name, sec.Value, sec.Hosts
	if !nameRe.MatchString(name) {
		return false, fmt.Errorf("%w: %q", ErrBadName, name)
	}
	if value == "" && (sec.Lease == nil || sec.Lease.Mint == "") {
		return false, ErrEmptyValue
	}
	if strings.ContainsFunc(value, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
		return false, ErrBadValue
	}
	if len(hosts) == 0 {
		return false, ErrNoHost
	}
	var hs []string
	seen := map[string]bool{}
	for _, h := range hosts {
		h, err := CheckHost(h)
		if err != nil {
			return false, err
		}
		if !seen[h] {
			seen[h] = true
			hs = append(hs, h)
		}
	}
	plain, err := json.Marshal(Secret{Name: name, Hosts: hs, Value: value, Added: time.Now().UTC(), Lease: sec.Lease})
	if err != nil {
		return false, err
	}
	sealed, err := s.sealer.Seal(plain, aad(name))
	if err != nil {
		return false, fmt.Errorf("secrets: seal %s: %w", name, err)
	}
	b, _ := json.Marshal(sealedFile{Version: 1, Sealing: s.sealer.Kind(), Sealed: sealed})
	_, statErr := os.Stat(s.path(name))
	if err := atomicfile.Write(s.path(name), b, 0o600); err != nil {
		return false, fmt.Errorf("secrets: keep %s: %w", name, err)
	}
	return statErr == nil, nil
}

// Get opens one secret, value included.
func (s *Store) Get(name string) (Secret, error) {
	if !nameRe.MatchString(name) {
		return Secret{}, fmt.Errorf("%w: %q", ErrBadName, name)
	}
	b, err := os.ReadFile(s.path(name))
	if errors.Is(err, os.ErrNotExist) {
		return Secret{}, fmt.Errorf("%w: %s (`kule secrets list` shows them)", ErrNotFound, name)
	}
	if err != nil {
		return Secret{}, fmt.Errorf("secrets: %w", err)
	}
	var f sealedFile
	if err := json.Unmarshal(b, &f); err != nil {
		return Secret{}, fmt.Errorf("%w: %s: %v", ErrDamaged, s.path(name), err)
	}
	if f.Sealing != s.sealer.Kind() {
		return Secret{}, fmt.Errorf("%w: %s is sealed with the %s, not the %s", ErrDamaged, name, f.Sealing, s.sealer.Kind())
	}
	plain, err := s.sealer.Open(f.Sealed, aad(name))
	if err != nil {
		return Secret{}, fmt.Errorf("%w: %s", err, s.path(name))
	}
	var sec Secret
	if err := json.Unmarshal(plain, &sec); err != nil || sec.Name != name {
		return Secret{}, fmt.Errorf("%w: %s", ErrDamaged, s.path(name))
	}
	return sec, nil
}

// All opens every secret, sorted by name.
func (s *Store) All() ([]Secret, error) {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	var out []Secret
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".sealed")
		if !ok || !nameRe.MatchString(name) {
			continue
		}
		sec, err := s.Get(name)
		if err != nil {
			return nil, err
		}
		out = append(out, sec)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// List is All without the values.
func (s *Store) List() ([]Secret, error) {
	all, err := s.All()
	for i := range all {
		all[i].Value = ""
	}
	return all, err
}

// Remove forgets a secret.
func (s *Store) Remove(name string) error {
	if !nameRe.MatchString(name) {
		return fmt.Errorf("%w: %q", ErrBadName, name)
	}
	err := os.Remove(s.path(name))
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: %s", ErrNotFound, name)
	}
	if err != nil {
		return fmt.Errorf("secrets: remove %s: %w", name, err)
	}
	return nil
}

// SealFile seals data for path with s (the path's base name is bound in).
func SealFile(s Sealer, path string, data []byte) error {
	sealed, err := s.Seal(data, aad("file:"+filepath.Base(path)))
	if err != nil {
		return err
	}
	b, _ := json.Marshal(sealedFile{Version: 1, Sealing: s.Kind(), Sealed: sealed})
	return atomicfile.Write(path, b, 0o600)
}

// OpenFile opens what SealFile sealed; a missing file is os.ErrNotExist.
func OpenFile(s Sealer, path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f sealedFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrDamaged, path, err)
	}
	plain, err := s.Open(f.Sealed, aad("file:"+filepath.Base(path)))
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, path)
	}
	return plain, nil
}
