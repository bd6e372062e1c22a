//go:build !linux

package pluginhost

import (
	"fmt"
	"os"
)

// ConfineMain is the plugin's own confinement inside the sandbox; only Linux
// has it, so elsewhere no plugin starts sandboxed.
func ConfineMain(string) int {
	fmt.Fprintf(os.Stderr, "%s no plugin confinement on this system; the plugin did not run\n", confineSays)
	return 125
}
