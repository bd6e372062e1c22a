package extensions

import (
	"context"
	"fmt"

	goplugin "github.com/hashicorp/go-plugin"

	"github.com/kulehq/kule/kernel/internal/pluginhost"
	"github.com/kulehq/kule/sdk/extension"
)

// HostLauncher starts `kule-plugins __plugin extension/host` through the plugin
// host h: in the plugin sandbox (no network, no writes, its own PID and
// network namespaces, a Landlock domain that reads only the kule binary and
// what it links), as every plugin starts; fail closed when the sandbox
// cannot be set up.
func HostLauncher(h *pluginhost.Host) Launcher {
	return func(ctx context.Context) (*extension.HostClient, func(), error) {
		st, err := h.StartBuiltin(ctx, extension.Kind, "host", extension.Handshake(),
			goplugin.PluginSet{extension.Kind: &extension.HostPlugin{}}, nil)
		if err != nil {
			return nil, nil, err
		}
		c, ok := st.Raw.(*extension.HostClient)
		if !ok {
			st.Kill()
			return nil, nil, fmt.Errorf("%w: the extension host answered as %T", pluginhost.ErrHandshake, st.Raw)
		}
		return c, st.Kill, nil
	}
}
