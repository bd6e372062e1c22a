package agentrun

import (
	"fmt"
	"net"
	"strings"

	"github.com/kulehq/kule/kernel/internal/secrets"
)

// keptOnly, when false, lets a profile's key go to every host the profile
// names even when the key is a kept secret (the attack test's knob).
var keptOnly = true

// key is the value of one of a profile's keys and where it came from.
type key struct {
	Value string
	// Kept is true when the value is a secret kept with `kule secrets
	// add`; Hosts are then the hosts it was kept for.
	Kept  bool
	Hosts []string
}

// keyLookup finds the value of a profile's key: in Kule's secrets store
// (`kule secrets add`) first, then in the person's environment.
func (r *Run) keyLookup() func(string) key {
	store, _ := secrets.Open(r.k.Store().Root)
	return func(name string) key {
		if store != nil {
			if sec, err := store.Get(name); err == nil && sec.Lease != nil {
				// Leased: the task's proxy holds it as a lease for its
				// hosts (kernel.startProxy), never as a standing key, and
				// no value of the environment stands in for it.
				return key{Kept: true, Hosts: sec.Hosts}
			} else if err == nil && sec.Value != "" {
				return key{Value: sec.Value, Kept: true, Hosts: sec.Hosts}
			}
		}
		return key{Value: r.o.Getenv(name)}
	}
}

// keyHosts are the hosts of want (a profile's hosts for one key) the key may
// be sent to: all of them for a key from the environment, and for a kept
// secret only those it was kept for — a host the secret names covers that
// host at any port, an endpoint (host:port) that port alone. refused are
// the others.
func keyHosts(k key, want []string) (hosts, refused []string) {
	if !k.Kept || !keptOnly {
		return want, nil
	}
	for _, w := range want {
		if covered(w, k.Hosts) {
			hosts = append(hosts, w)
		} else {
			refused = append(refused, w)
		}
	}
	return hosts, refused
}

func covered(want string, kept []string) bool {
	norm := func(h string) string { return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".") }
	w := norm(want)
	wHost := w
	if h, _, err := net.SplitHostPort(w); err == nil {
		wHost = norm(h)
	}
	for _, k := range kept {
		k = norm(k)
		if k == w {
			return true
		}
		if _, _, err := net.SplitHostPort(k); err != nil && k == wHost {
			return true
		}
	}
	return false
}

// refusedKeyNote tells the person why a kept key does not go to some of
// its profile's hosts.
func refusedKeyNote(name string, k key, refused []string) string {
	return fmt.Sprintf("%s is a kept secret for %s only: it is not sent to %s, which the profile names (kule secrets add %s --host HOST keeps it for another host)",
		name, strings.Join(k.Hosts, ", "), strings.Join(refused, ", "), name)
}
