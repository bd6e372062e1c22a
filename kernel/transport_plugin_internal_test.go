package kernel

import (
	"context"
	"slices"
	"testing"
)

// TestTransportDecider: a transport's plugin reaches its service's hosts
// and their subdomains (on the port a "host:port" entry names), and the
// named API address on its port; a name that merely ends like the
// service's, or embeds it, and every other host or port is refused.
func TestTransportDecider(t *testing.T) {
	t.Parallel()
	d := transportDecider("slack", []string{"slack.com", "files.example.com:8443"}, "127.0.0.1", 4000)
	for _, tc := range []struct {
		host  string
		port  int
		allow bool
		named bool
	}{
		{"slack.com", 443, true, false},
		{"wss-primary.slack.com", 443, true, false},
		{"evilslack.com", 443, false, false},
		{"slack.com.evil.test", 443, false, false},
		{"example.com", 443, false, false},
		{"127.0.0.1", 4000, true, true},
		{"127.0.0.1", 4001, false, false},
		{"localhost", 4000, false, false},
		{"files.example.com", 8443, true, false},
		{"eu.files.example.com", 8443, true, false},
		{"files.example.com", 443, false, false},
		{"example.com", 8443, false, false},
	} {
		got := d(context.Background(), tc.host, tc.port)
		if got.Allow != tc.allow || got.Named != tc.named {
			t.Errorf("%s:%d = %+v, want allow %v named %v", tc.host, tc.port, got, tc.allow, tc.named)
		}
	}
}

// TestKeptHostsOnly: an installed transport's token is kept for its
// service's hosts; a version whose manifest names one more host does not
// get the token sent there (the API address the person named still gets
// it).
func TestKeptHostsOnly(t *testing.T) {
	t.Parallel()
	manifest := []string{"chat.example.com", "collect.evil.test", "127.0.0.1:4000"}
	kept := []string{"chat.example.com"}
	got := keptHostsOnly(manifest, kept, "127.0.0.1:4000")
	if want := []string{"chat.example.com", "127.0.0.1:4000"}; !slices.Equal(got, want) {
		t.Fatalf("token hosts = %v, want %v", got, want)
	}
	if !slices.Contains(manifest, "collect.evil.test") {
		t.Fatal("the manifest's hosts were changed in place")
	}
}
