package daemon

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/kulehq/kule/kernel"
)

// The app's port listens on a loopback address of the home's own,
// 127.x.y.z, picked at random once and kept in the home. A browser keeps a
// cookie by host and sends it to every port of that host: on 127.0.0.1 the
// app's cookie would reach any server another program (a dev server an
// agent starts) opens there. On Linux the whole of 127.0.0.0/8 is loopback
// and binds without any configuration.

// ownLoopback makes the daemon listen on the home's own loopback address
// when Config.HTTPAddr is empty. Tests turn it off to show what it guards.
var ownLoopback = true

// errAppAddress reports an app-address file that does not hold a loopback
// address Kule could have picked.
var errAppAddress = errors.New("app-address")

// AppAddressPath is the file that keeps the home's loopback address.
func AppAddressPath(home string) string { return filepath.Join(home, "app-address") }

// ParseAppAddress reads the kept address strictly: one IPv4 address in
// 127.0.0.0/8, other than 127.0.0.1 (which every local server shares) and
// the network and broadcast forms.
func ParseAppAddress(b []byte) (net.IP, error) {
	s := strings.TrimSuffix(string(b), "\n")
	if len(s) > 15 || strings.TrimLeft(s, "0123456789.") != "" {
		return nil, fmt.Errorf("%w: %q is not an IPv4 address", errAppAddress, s)
	}
	ip := net.ParseIP(s).To4()
	if ip == nil || ip.String() != s {
		return nil, fmt.Errorf("%w: %q is not an IPv4 address", errAppAddress, s)
	}
	if ip[0] != 127 || (ip[1] == 0 && ip[2] == 0 && ip[3] <= 1) || ip[3] == 0 || ip[3] == 255 {
		return nil, fmt.Errorf("%w: %s is not a loopback address of Kule's own (127.x.y.z, not 127.0.0.1)", errAppAddress, s)
	}
	return ip, nil
}

// pickAppAddress draws a loopback address. The second byte is never 0, so
// the pick stays clear of 127.0.0.1, 127.0.0.53 (systemd-resolved) and
// 127.0.1.1 (Debian's host name).
func pickAppAddress() net.IP {
	var b [3]byte
	rand.Read(b[:])
	return net.IPv4(127, 1+b[0]%254, b[1], 1+b[2]%254).To4()
}

// appAddress is the home's loopback address, picked and kept on first use.
func appAddress(home string) (net.IP, error) {
	p := AppAddressPath(home)
	b, err := os.ReadFile(p)
	if err == nil {
		ip, err := ParseAppAddress(b)
		if err != nil {
			return nil, fmt.Errorf("daemon: %s: %w; delete the file and Kule picks a new address", p, err)
		}
		return ip, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("daemon: read %s: %w", p, err)
	}
	ip := pickAppAddress()
	if err := kernel.WriteFileAtomic(p, []byte(ip.String()+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("daemon: keep the app's address in %s: %w", p, err)
	}
	return ip, nil
}

// listenAddr is where the app's port listens: Config.HTTPAddr when set,
// else the home's own loopback address on a free port.
func listenAddr(home, configured string) (string, error) {
	if configured != "" {
		return configured, nil
	}
	if !ownLoopback {
		return "127.0.0.1:0", nil
	}
	ip, err := appAddress(home)
	if err != nil {
		return "", err
	}
	return net.JoinHostPort(ip.String(), "0"), nil
}
