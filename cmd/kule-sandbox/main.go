// Command kule-sandbox is the sandbox's helper: kule starts it as PID 1 of
// each sandbox (see kernel/sandbox). It is `kule __sandbox` in a binary of
// its own, which starts in a fraction of kule's time because it holds
// nothing else — no CLI, plugins, parsers or policy engine to initialise.
// kule looks for it beside its own executable and re-executes itself when
// it is not there. People do not run it.
package main

import (
	"os"

	"github.com/kulehq/kule/kernel/sandbox"
)

func main() { os.Exit(sandbox.HelperMain()) }
