package proxy

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
)

func TestNonGlobalTable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		addr      string
		nonGlobal bool
	}{
		// IPv4 special-purpose registry
		{"0.0.0.0", true}, {"0.1.2.3", true},
		{"10.1.2.3", true},
		{"100.64.0.1", true}, {"100.100.100.100", true}, {"100.127.255.254", true},
		{"100.63.255.255", false}, {"100.128.0.1", false},
		{"127.0.0.1", true}, {"127.9.9.9", true},
		{"169.254.169.254", true},
		{"172.16.0.1", true}, {"172.31.255.255", true}, {"172.32.0.1", false},
		{"192.0.0.1", true}, {"192.0.0.170", true},
		{"192.0.2.7", true}, {"198.51.100.7", true}, {"203.0.113.7", true},
		{"192.88.99.1", true},
		{"192.168.1.1", true},
		{"198.18.0.1", true}, {"198.19.255.255", true}, {"198.20.0.1", false},
		{"224.0.0.251", true}, {"239.255.255.250", true},
		{"240.0.0.1", true}, {"255.255.255.255", true},
		{"8.8.8.8", false}, {"1.1.1.1", false}, {"93.184.216.34", false},
		// IPv6 special-purpose registry
		{"::", true}, {"::1", true}, {"::10.0.0.1", true},
		{"::ffff:10.0.0.1", true}, {"::ffff:100.64.0.1", true}, {"::ffff:127.0.0.1", true}, {"::ffff:8.8.8.8", false},
		{"64:ff9b::a00:1", true}, {"64:ff9b::6440:1", true}, {"64:ff9b::7f00:1", true}, {"64:ff9b::808:808", false},
		{"64:ff9b:1::1", true},
		{"100::1", true},
		{"2001::1", true}, {"2001:2::1", true}, {"2001:db8::1", true}, {"3fff::1", true},
		{"2002:a00:1::1", true}, {"2002:808:808::1", false},
		{"5f00::1", true},
		{"fc00::1", true}, {"fd12:3456::1", true},
		{"fe80::1", true}, {"fe80::1%eth0", true}, {"febf::1", true},
		{"fec0::1", true},
		{"ff02::1", true}, {"ff05::2", true},
		{"2606:4700:4700::1111", false}, {"2a00:1450:4001::1", false}, {"2001:4860:4860::8888", false},
	} {
		a, err := netip.ParseAddr(tc.addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := nonGlobal(a); got != tc.nonGlobal {
			t.Errorf("nonGlobal(%s) = %v, want %v", tc.addr, got, tc.nonGlobal)
		}
	}
	if !nonGlobal(netip.Addr{}) {
		t.Errorf("the zero address must count as non-global")
	}
}

// fakeDNS answers A and AAAA questions on loopback from names, the way a
// resolver an attacker controls would answer for a name it owns.
func fakeDNS(t *testing.T, names map[string]netip.Addr) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			q := buf[:n]
			if len(q) < 12 {
				continue
			}
			// The question: labels to a zero byte, then type and class.
			i := 12
			var labels []string
			for i < len(q) && q[i] != 0 {
				l := int(q[i])
				if i+1+l > len(q) {
					break
				}
				labels = append(labels, string(q[i+1:i+1+l]))
				i += 1 + l
			}
			i++
			if i+4 > len(q) {
				continue
			}
			qtype := binary.BigEndian.Uint16(q[i:])
			question := q[12 : i+4]
			name := strings.ToLower(strings.Join(labels, "."))
			var rdata []byte
			if a, ok := names[name]; ok {
				if qtype == 1 && a.Is4() {
					b := a.As4()
					rdata = b[:]
				} else if qtype == 28 && a.Is6() {
					b := a.As16()
					rdata = b[:]
				}
			}
			resp := []byte{q[0], q[1], 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0}
			if _, ok := names[name]; !ok {
				resp[3] = 0x83 // NXDOMAIN
			}
			resp = append(resp, question...)
			if rdata != nil {
				resp[7] = 1
				resp = append(resp, 0xc0, 0x0c)
				resp = binary.BigEndian.AppendUint16(resp, qtype)
				resp = append(resp, 0, 1, 0, 0, 0, 60)
				resp = binary.BigEndian.AppendUint16(resp, uint16(len(rdata)))
				resp = append(resp, rdata...)
			}
			pc.WriteTo(resp, from)
		}
	}()
	return pc.LocalAddr().String()
}

// TestNonGlobalAddressRefused: a name the policy lets through, whose DNS
// answer (from a resolver on loopback, as an attacker's domain would give
// it) points at a carrier-grade NAT, benchmarking, reserved or NAT64-mapped
// private address, is never connected to. With the wider check taken away
// the proxy goes on to connect (the test's hook stops it right there, so
// nothing leaves the machine), which shows the old narrower check let it.
func TestNonGlobalAddressRefused(t *testing.T) {
	t.Parallel()
	names := map[string]netip.Addr{
		"cgnat.example.test":     netip.MustParseAddr("100.64.0.1"),
		"tailnet.example.test":   netip.MustParseAddr("100.100.100.100"),
		"bench.example.test":     netip.MustParseAddr("198.18.0.1"),
		"ietf.example.test":      netip.MustParseAddr("192.0.0.8"),
		"thisnet.example.test":   netip.MustParseAddr("0.1.2.3"),
		"reserved.example.test":  netip.MustParseAddr("240.0.0.1"),
		"nat64.example.test":     netip.MustParseAddr("64:ff9b::a00:1"),
		"nat64lo.example.test":   netip.MustParseAddr("64:ff9b::7f00:1"),
		"sixtofour.example.test": netip.MustParseAddr("2002:c0a8:101::1"),
	}
	dns := fakeDNS(t, names)
	resolver := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", dns)
	}}
	errStopped := errors.New("test: stopped before connecting")
	for _, guardOn := range []bool{false, true} {
		var mu sync.Mutex
		var dialed []string
		cfg := Config{
			Decide:   func(context.Context, string, int) Decision { return Decision{Allow: true, Rule: "all"} },
			resolver: resolver,
			dialing: func(address string) error {
				mu.Lock()
				dialed = append(dialed, address)
				mu.Unlock()
				return errStopped
			},
		}
		if !guardOn {
			cfg.off = guardNonGlobal
		}
		p, err := Start(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		for name, addr := range names {
			c, err := net.Dial("tcp", p.Addr())
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(c, "CONNECT %s:443 HTTP/1.1\r\nHost: %s:443\r\n\r\n", name, name)
			resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: "CONNECT"})
			c.Close()
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusBadGateway {
				t.Fatalf("CONNECT %s (%s): status %d, want 502", name, addr, resp.StatusCode)
			}
			mu.Lock()
			reached := strings.Join(dialed, " ")
			dialed = nil
			mu.Unlock()
			want := net.JoinHostPort(addr.String(), "443")
			if !guardOn {
				if !strings.Contains(reached, want) {
					t.Fatalf("with the check taken away the proxy should go on to dial %s for %s; it dialled %q", want, name, reached)
				}
				continue
			}
			if reached != "" {
				t.Fatalf("%s resolves to %s: the proxy went on to dial %q", name, addr, reached)
			}
		}
		p.Close() // every handler has logged its connection
		if guardOn {
			for _, e := range p.Entries() {
				if !strings.Contains(e.Error, "not a public internet address") {
					t.Errorf("log entry for %s: %q, want it to say the address is not public", e.Host, e.Error)
				}
			}
		}
	}
}
