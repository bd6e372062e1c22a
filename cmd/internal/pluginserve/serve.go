// Package pluginserve is `__plugin <kind>/<name>`: a binary serving one of
// Kule's built-in plugins (differs, previewers, chat transports, the
// extension host) to a kernel that started it, and the confine step before
// it inside the plugin sandbox. kule-plugins is this package's binary; the
// tests of cmd/kule serve the built-ins from their own binary through it.
package pluginserve

import (
	"fmt"
	"os"
	"strings"

	exthost "github.com/kulehq/kule/extensions/host"
	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/plugins/builtin"
	"github.com/kulehq/kule/plugins/builtin/differs"
	"github.com/kulehq/kule/plugins/builtin/previewers"
	sdkplugin "github.com/kulehq/kule/sdk/plugin"
)

// Main serves the plugin args name (the arguments after `__plugin`). It
// never returns while the plugin serves; it is not a command a person runs.
func Main(args []string) int {
	if len(args) == 2 && args[0] == kernel.ConfineArg {
		return kernel.ConfineMain(args[1]) // inside the sandbox, before the plugin
	}
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "kule-plugins __plugin: want one argument, <kind>/<name>")
		return 2
	}
	if args[0] == builtin.ExtensionHost {
		return exthost.Main()
	}
	if name, ok := strings.CutPrefix(args[0], "transport/"); ok {
		return serveTransport(name)
	}
	if p, ok := previewers.New(args[0]); ok {
		sdkplugin.ServePreviewer(p)
		return 0
	}
	d, ok := differs.New(args[0])
	if !ok {
		fmt.Fprintf(os.Stderr, "kule-plugins __plugin: no built-in plugin %q\n", args[0])
		return 2
	}
	sdkplugin.ServeDiffer(d)
	return 0
}
