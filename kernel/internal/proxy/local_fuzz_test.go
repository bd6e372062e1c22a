package proxy

import (
	"net"
	"strings"
	"testing"
)

// FuzzSecretHostKey: a secret's host is filed either under a host name
// (any port) or one endpoint (host:port); the run's authority is asked to
// sign only for names, never for an address, and a name it signs for is
// the key's own host.
func FuzzSecretHostKey(f *testing.F) {
	for _, s := range []string{"api.example.com", "localhost:4000", "127.0.0.1:11434", "[::1]:8080", "10.0.0.1", "API.Example.com.", " x:1 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		key, name := secretHostKey(s)
		if name == "" {
			return
		}
		if net.ParseIP(name) != nil {
			t.Fatalf("secretHostKey(%q): the authority would sign for the address %q", s, name)
		}
		if key != name && !strings.HasPrefix(key, name+":") && !strings.HasPrefix(key, "["+name+"]:") {
			t.Fatalf("secretHostKey(%q) = %q, %q: the name is not the key's host", s, key, name)
		}
	})
}
