package sandbox

import (
	"fmt"
	"os"
)

var probeHook func() Availability // tests of fail-closed paths set this

func usage() int {
	fmt.Fprintln(os.Stderr, "kule __sandbox: the sandbox's own helper; kule starts it, people do not")
	return 2
}
