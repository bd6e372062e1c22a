package agents

import (
	"net"
	"strconv"
	"strings"
	"testing"
)

// A profile names a local or self-hosted model by host:port; an address
// without its port, a zone, a scheme or a path is refused.
func TestEndpoint(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"127.0.0.1:11434":       "127.0.0.1:11434",
		"localhost:4000":        "localhost:4000",
		"192.168.1.20:8000":     "192.168.1.20:8000",
		"[::1]:8080":            "::1:8080",
		"llm.corp.example:443":  "llm.corp.example:443",
		"127.0.0.1":             "",
		"localhost":             "",
		"::1:8080":              "",
		"[fe80::1%eth0]:80":     "",
		"127.0.0.1:0":           "",
		"127.0.0.1:65536":       "",
		"127.0.0.1:0080":        "",
		"http://localhost:4000": "",
		"localhost:4000/v1":     "",
		"*.x.com:443":           "",
		"Localhost:4000":        "",
	} {
		h, p, ok := Endpoint(in)
		got := ""
		if ok {
			got = h + ":" + strconv.Itoa(p)
		}
		if got != want {
			t.Errorf("Endpoint(%q) = %q, want %q", in, got, want)
		}
	}
	p := Profile{Name: "local", Command: []string{"agent"}, Hosts: []string{"127.0.0.1:11434", "localhost:4000"},
		Keys: map[string][]string{"OPENAI_API_KEY": {"127.0.0.1:11434"}}}
	if err := Validate(p, nil); err != nil {
		t.Fatalf("a profile naming local endpoints: %v", err)
	}
	p.Hosts = []string{"127.0.0.1"}
	if err := Validate(p, nil); err == nil || !strings.Contains(err.Error(), "needs its port") {
		t.Fatalf("an address without a port: %v", err)
	}
}

// FuzzEndpoint: whatever Endpoint accepts is a host and a port that join
// back into something it accepts as the same endpoint, with no scheme,
// path or zone in it.
func FuzzEndpoint(f *testing.F) {
	for _, s := range []string{"127.0.0.1:11434", "localhost:4000", "[::1]:8080", "a.b:1", "[::ffff:1.2.3.4]:5", "x:0", "[fe80::1%lo]:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, p, ok := Endpoint(s)
		if !ok {
			return
		}
		if p < 1 || p > 65535 || strings.ContainsAny(h, "/%@ ") {
			t.Fatalf("Endpoint(%q) = %q %d", s, h, p)
		}
		h2, p2, ok2 := Endpoint(net.JoinHostPort(h, strconv.Itoa(p)))
		if !ok2 || h2 != h || p2 != p {
			t.Fatalf("Endpoint(%q) = %q %d, which does not read back (%q %d %v)", s, h, p, h2, p2, ok2)
		}
	})
}

// FuzzEndpointOf: a base URL is taken only as an endpoint Endpoint reads,
// and plain http only for this machine's loopback.
func FuzzEndpointOf(f *testing.F) {
	for _, s := range []string{"http://localhost:4000", "https://llm.example.com/v1", "http://127.0.0.1:11434/v1", "http://[::1]:8080", "http://10.0.0.1:80", "https://u@x.io"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ep, err := EndpointOf(s)
		if err != nil {
			return
		}
		h, _, ok := Endpoint(ep)
		if !ok {
			t.Fatalf("EndpointOf(%q) = %q, which Endpoint refuses", s, ep)
		}
		if strings.HasPrefix(strings.ToLower(s), "http:") && h != "localhost" && !strings.HasSuffix(h, ".localhost") && !strings.HasPrefix(h, "127.") && h != "::1" {
			t.Fatalf("EndpointOf(%q) = %q: plain http off the loopback", s, ep)
		}
	})
}
