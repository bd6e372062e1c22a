package sandbox

import (
	"fmt"
	"os"
)

var probeHook func() Availability // tests of fail-closed paths set this

// HelperArg is the first argument of a binary re-executed as the sandbox's
// helper (`kule __sandbox <stage>`).
const HelperArg = "__sandbox"

// ServeHelper runs the sandbox's helper and exits when args (a program's
// arguments, without its name) ask for it. Every main that kule may
// re-execute as its helper calls it first: kule itself, and the test
// binaries that stand in for kule.
func ServeHelper(args []string) {
	if len(args) > 0 && args[0] == HelperArg {
		os.Exit(HelperMain())
	}
}

func usage() int {
	fmt.Fprintln(os.Stderr, "kule "+HelperArg+": the sandbox's own helper; kule starts it, people do not")
	return 2
}
