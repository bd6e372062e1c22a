package sandbox

import (
	"fmt"
	"os"
)

var probeHook func() Availability // tests of fail-closed paths set this

// HelperArg is the first argument of a binary re-executed as the sandbox's
// helper (`kule __sandbox <stage>`).
const HelperArg = "__sandbox"

// ServeHelper answers `kule __sandbox …` and exits, when args (a program's
// arguments, without its name) ask for it: cmd/kule calls it first. The
// helper itself (pid1_linux.c) runs before any main when kule starts it; a
// main that gets these arguments was started by a person, or lacks the
// helper (see HelperMain).
func ServeHelper(args []string) {
	if len(args) > 0 && args[0] == HelperArg {
		os.Exit(HelperMain())
	}
}

func usage() int {
	fmt.Fprintln(os.Stderr, "kule "+HelperArg+": the sandbox's own helper; kule starts it, people do not")
	return 2
}
