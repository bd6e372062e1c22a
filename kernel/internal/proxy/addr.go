package proxy

import (
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// nonGlobalPrefixes are the ranges of the IANA IPv4 and IPv6
// special-purpose address registries (RFC 6890 and its updates) whose
// addresses are not globally reachable, plus multicast and the reserved
// ranges: a name on the internet that resolves into one of them points
// inside the machine, its networks, or a carrier's (100.64/10 is where
// CGNAT and tailnets such as Tailscale put their peers). A range that
// embeds an IPv4 address (NAT64's 64:ff9b::/96, 6to4's 2002::/16, IPv4
// mapped ::ffff:0:0/96) is judged by the address it embeds instead, in
// nonGlobal.
var nonGlobalPrefixes = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		// IPv4
		"0.0.0.0/8",       // "this network"
		"10.0.0.0/8",      // private
		"100.64.0.0/10",   // shared address space (CGNAT)
		"127.0.0.0/8",     // loopback
		"169.254.0.0/16",  // link local
		"172.16.0.0/12",   // private
		"192.0.0.0/24",    // IETF protocol assignments
		"192.0.2.0/24",    // documentation (TEST-NET-1)
		"192.88.99.0/24",  // 6to4 relay anycast (deprecated)
		"192.168.0.0/16",  // private
		"198.18.0.0/15",   // benchmarking
		"198.51.100.0/24", // documentation (TEST-NET-2)
		"203.0.113.0/24",  // documentation (TEST-NET-3)
		"224.0.0.0/4",     // multicast
		"240.0.0.0/4",     // reserved, and 255.255.255.255 broadcast
		// IPv6
		"::/96",          // unspecified, loopback, and the deprecated IPv4-compatible
		"64:ff9b:1::/48", // local-use IPv4/IPv6 translation
		"100::/64",       // discard only
		"2001::/23",      // IETF protocol assignments (Teredo, ORCHID, benchmarking …)
		"2001:db8::/32",  // documentation
		"3fff::/20",      // documentation
		"5f00::/16",      // segment routing (SRv6) SIDs
		"fc00::/7",       // unique local
		"fe80::/10",      // link local
		"fec0::/10",      // site local (deprecated)
		"ff00::/8",       // multicast
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// nonGlobal reports whether a is not a globally reachable unicast address:
// loopback, private, CGNAT, link local, multicast, reserved, documentation,
// or an IPv6 address that carries such an IPv4 address (mapped, NAT64,
// 6to4). An invalid address counts as non-global.
func nonGlobal(a netip.Addr) bool {
	if !a.IsValid() {
		return true
	}
	a = a.WithZone("")
	if a.Is4In6() {
		return nonGlobal(a.Unmap())
	}
	if a.Is6() {
		b := a.As16()
		switch {
		case nat64.Contains(a):
			return nonGlobal(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
		case sixToFour.Contains(a):
			return nonGlobal(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}))
		}
	}
	for _, p := range nonGlobalPrefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// LoopbackName reports whether host, as a connection names it, is this
// machine's loopback: "localhost" (and names under it, which resolvers
// answer with loopback), or an address in 127/8 or ::1.
func LoopbackName(host string) bool {
	h := normHost(strings.Trim(host, "[]"))
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	a, err := netip.ParseAddr(h)
	return err == nil && a.Unmap().IsLoopback()
}

// remoteLoopback reports whether c is connected to a loopback address.
func remoteLoopback(c net.Conn) bool {
	ta, ok := c.RemoteAddr().(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// secretHostKey is where a secret's host goes in the proxy's table: an
// exact name ("api.example.com", any port, over TLS) as it is, or an
// endpoint ("localhost:4000", "127.0.0.1:11434": that port alone) as
// host:port. name is the host name the run's authority must sign for when
// the secret's requests are read inside TLS; "" for an address, which the
// authority never signs.
func secretHostKey(h string) (key, name string) {
	h = strings.TrimSpace(h)
	if host, port, err := net.SplitHostPort(h); err == nil {
		host = normHost(host)
		key = net.JoinHostPort(host, port)
		if net.ParseIP(host) == nil && !LoopbackName(host) {
			name = host // a loopback endpoint's key goes in plain HTTP (plainTunnel, forward)
		}
		return key, name
	}
	h = normHost(h)
	if net.ParseIP(h) != nil {
		return h, ""
	}
	return h, h
}

// secretsFor are the secrets that go to host:port: those kept for the
// host (any port) and those kept for that very endpoint.
func (p *Proxy) secretsFor(host string, port int) []*Secret {
	a := p.secrets[host]
	b := p.secrets[net.JoinHostPort(host, strconv.Itoa(port))]
	if len(b) == 0 {
		return a
	}
	if len(a) == 0 {
		return b
	}
	return append(append([]*Secret(nil), a...), b...)
}
