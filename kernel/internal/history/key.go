package history

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/kulehq/kule/kernel/internal/atomicfile"
)

// KeyFile is the name of the signing key inside the keys directory.
const KeyFile = "history.ed25519"

// keyHeader starts every key file, so that a file of another kind is never
// mistaken for a key.
const keyHeader = "kule-history-ed25519-v1"

// LoadKey returns the history signing key kept in keysDir, creating it on
// first use. A new key is written to a temporary file, fsynced and then linked
// into place, so two processes racing to create it end up with the same key
// and a crash never leaves half a key. A key file that exists but cannot be
// read as a key is an error (ErrKeyDamaged); it is never replaced, because
// every entry signed by it could then no longer be verified.
func LoadKey(keysDir string) (ed25519.PrivateKey, error) {
	if err := os.MkdirAll(keysDir, 0o700); err != nil {
		return nil, fmt.Errorf("history key: create %s: %w", keysDir, err)
	}
	path := filepath.Join(keysDir, KeyFile)
	key, err := readKey(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	if err := createKey(path); err != nil {
		return nil, err
	}
	return readKey(path)
}

func readKey(path string) (ed25519.PrivateKey, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("history key: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("history key: %s: %w: not a regular file (%s); move it aside only if you have a backup of the real key",
			path, ErrKeyDamaged, fi.Mode().Type())
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("history key: %s: %w: mode %o lets others read it; run chmod 600 %s",
			path, ErrKeyExposed, fi.Mode().Perm(), path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("history key: %w", err)
	}
	return parseKey(path, b)
}

func parseKey(path string, b []byte) (ed25519.PrivateKey, error) {
	damaged := func(why string) error {
		return fmt.Errorf("history key: %s: %w: %s; the file was left as it is: restore it from a backup (a new key cannot verify the old history)",
			path, ErrKeyDamaged, why)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) != 2 || lines[0] != keyHeader {
		return nil, damaged("it does not start with " + keyHeader)
	}
	seed, err := base64.StdEncoding.DecodeString(lines[1])
	if err != nil {
		return nil, damaged("the seed is not base64")
	}
	if len(seed) != ed25519.SeedSize {
		return nil, damaged(fmt.Sprintf("the seed has %d bytes, want %d", len(seed), ed25519.SeedSize))
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

func createKey(path string) error {
	seed := make([]byte, ed25519.SeedSize)
	if _, err := rand.Read(seed); err != nil {
		return fmt.Errorf("history key: generate: %w", err)
	}
	content := keyHeader + "\n" + base64.StdEncoding.EncodeToString(seed) + "\n"
	// Exclusive fails when another process created the key first; then
	// theirs is the key and ours is dropped.
	err := atomicfile.WriteWith(path, atomicfile.Options{Perm: 0o600, Exclusive: true}, func(w io.Writer) error {
		_, err := io.WriteString(w, content)
		return err
	})
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("history key: install %s: %w", path, err)
	}
	return nil
}
