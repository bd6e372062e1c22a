// Command kule-sandbox is the sandbox's helper: kule starts it as PID 1 of
// each sandbox (see kernel/sandbox). It is `kule __sandbox` in a binary of
// its own: the helper is C that runs before the Go runtime starts
// (kernel/sandbox/pid1_linux.c), and this small static binary is found and
// mapped faster than kule's. kule looks for it beside its own executable and
// re-executes itself when it is not there. People do not run it; build it
// with cgo (`make build`).
package main

import (
	"os"

	"github.com/kulehq/kule/kernel/sandbox"
)

func main() { os.Exit(sandbox.HelperMain()) }
