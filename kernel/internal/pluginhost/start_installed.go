package pluginhost

import (
	"context"
	"strings"

	goplugin "github.com/hashicorp/go-plugin"
)

// off holds the guards an attack test takes away, one at a time, to show
// the attack working without them. Kule itself never sets them.
var off struct {
	// approvedSum: the executable read at launch is not compared with the
	// approved sha256 (a binary changed after approval would run).
	approvedSum bool
}

// StartInstalledWith starts the installed third-party plugin name of kind
// as StartBuiltinWith starts a built-in: in kind's sandbox profile, with
// handshake hs, plugin set set and the options o. Its approval is checked
// at this very launch (name, kind, exact version, the sha256 of its
// manifest and of the executable as read now); a plugin that changed since
// it was approved is not executed and the error (ErrNotApproved) says what
// changed. What runs is the sealed in-memory copy whose hash was checked.
func (h *Host) StartInstalledWith(ctx context.Context, kind, name string, hs goplugin.HandshakeConfig, set goplugin.PluginSet, o StartOptions) (*Started, error) {
	spec, err := h.installedSpec(kind, name)
	if err != nil {
		return nil, err
	}
	defer spec.Exe.Close() // the child has its own reference once started
	return h.startWith(ctx, spec, hs, set, o)
}

// NetworkHosts are the hosts its network permissions name, as "host" or
// "host:port" (a transport's chat service), in the manifest's order.
func (m Manifest) NetworkHosts() []string {
	var hosts []string
	for _, p := range m.Permissions {
		if h, ok := strings.CutPrefix(p, "network:"); ok {
			hosts = append(hosts, h)
		}
	}
	return hosts
}
