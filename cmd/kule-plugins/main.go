// Command kule-plugins serves Kule's built-in plugins: the kernel of a kule
// command starts `kule-plugins __plugin <kind>/<name>` in the plugin
// sandbox, as it starts a third party's plugin. It is a binary of its own,
// beside kule, so that the libraries the plugins need (a spreadsheet
// reader, a Markdown renderer, chat clients, a JavaScript engine) are not
// loaded by every kule command. Its sandbox's first stage runs from this
// binary too (kernel/internal/sandbox's constructor).
package main

import (
	"fmt"
	"os"

	"github.com/kulehq/kule/cmd/internal/pluginserve"
	"github.com/kulehq/kule/kernel"
)

func main() {
	kernel.ServeSandboxHelper(os.Args[1:])
	if len(os.Args) > 1 && os.Args[1] == "__plugin" {
		os.Exit(pluginserve.Main(os.Args[2:]))
	}
	fmt.Fprintln(os.Stderr, "kule-plugins serves Kule's built-in plugins to kule; it is not a command to run by hand (try kule --help)")
	os.Exit(2)
}
