package sandbox

import (
	"fmt"
	"sort"
	"strings"
)

// seatbeltMachServices are the Mach services a command may look up on macOS:
// name resolution, logging, notifications and certificate trust. The
// keychain (com.apple.SecurityServer, securityd) is not among them.
var seatbeltMachServices = []string{
	"com.apple.system.opendirectoryd.libinfo",
	"com.apple.system.DirectoryService.libinfo_v1",
	"com.apple.system.logger",
	"com.apple.system.notification_center",
	"com.apple.trustd.agent",
	"com.apple.diagnosticd",
	"com.apple.analyticsd",
	"com.apple.coreservices.launchservicesd",
	"com.apple.lsd.mapdb",
	"com.apple.dnssd.service",
	"com.apple.mDNSResponder",
}

// seatbeltProfile writes the macOS Seatbelt (SBPL) profile for a plan. In
// SBPL a later rule wins over an earlier one, so the profile reads top to
// bottom as: deny everything; read everywhere; hide (personal, the
// workspace's parent); keep PATH/SDK folders and revealed projects; hide
// credentials, Kule's home and --hide again (nothing reopens those); write
// only to the copy, the task's tmp and home, --allow-write and named devices;
// the network as the plan says.
//
// It is generated and unit-tested on Linux; running it needs a Mac and has
// not been tried on one.
func seatbeltProfile(p *plan, strong, soft []string) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	paths := func(kind string, ps []string) string {
		ps = append([]string(nil), ps...)
		sort.Strings(ps)
		var parts []string
		for _, x := range ps {
			parts = append(parts, fmt.Sprintf("(%s %s)", kind, sbplString(x)))
		}
		return strings.Join(parts, " ")
	}
	w("(version 1)")
	w("(deny default)")
	w(";; processes: its own, no debugging of others")
	w("(allow process-fork)")
	w("(allow process-exec)")
	w("(allow signal (target same-sandbox))")
	w("(allow process-info* (target same-sandbox))")
	w("(allow sysctl-read)")
	w("(allow ipc-posix-shm)")
	w("(allow ipc-posix-sem)")
	w("(allow mach-lookup %s)", paths("global-name", seatbeltMachServices))
	w(";; read: everything but what is hidden")
	w("(allow file-read*)")
	if len(soft) > 0 {
		w("(deny file-read* %s)", paths("subpath", soft))
	}
	if keep := append(append([]string(nil), p.Keep...), p.ReadOnly...); len(keep) > 0 {
		w("(allow file-read* %s)", paths("subpath", keep))
	}
	rw := append([]string{p.Copy, p.Tmp, p.Home, p.Cache}, p.Writable...)
	w("(allow file-read* %s)", paths("subpath", rw))
	if len(strong) > 0 {
		w(";; credentials, Kule's home, other tasks: never")
		w("(deny file-read* file-write* %s)", paths("subpath", strong))
		w("(allow file-read* %s)", paths("subpath", rw))
	}
	w(";; write: the copy, its tmp and home, --allow-write, named devices")
	w("(allow file-write* %s)", paths("subpath", rw))
	var devs []string
	for _, d := range p.Devices {
		devs = append(devs, "/dev/"+d)
	}
	devs = append(devs, "/dev/ptmx", "/dev/dtracehelper")
	w("(allow file-write* file-ioctl %s (regex #\"^/dev/ttys[0-9]+$\"))", paths("literal", devs))
	w(";; network")
	switch {
	case !p.NetNS:
		w("(allow network*)")
		w("(allow system-socket)")
	case p.ProxyPort > 0 && !p.NoTCP:
		w("(allow network-outbound (remote tcp %s))", sbplString(fmt.Sprintf("localhost:%d", p.ProxyPort)))
		w("(allow system-socket)")
	default:
		w(";; none")
	}
	return b.String()
}

// sbplString quotes s as an SBPL string literal.
func sbplString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(s) + `"`
}
