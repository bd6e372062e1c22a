//go:build linux && !cgo

package sandbox

import (
	"fmt"
	"os"
)

// HelperMain answers a binary started with a helper's arguments (cmd/kule
// and cmd/kule-sandbox call it, through ServeHelper). The helper is C
// (pid1_linux.c), and this binary was built without cgo, so it has none:
// a run kule started it for is refused before anything is mounted, and
// says how to build.
func HelperMain() int {
	switch os.Args[len(os.Args)-1] {
	case HelperStageInit, HelperStageExec:
		exe, _ := os.Executable()
		msg := fmt.Sprintf("the sandbox helper %s was built without cgo, and the helper is C (build kule and kule-sandbox with cgo: `make build`)", exe)
		if _, err := os.NewFile(fdStatus, "status").WriteString(msg); err != nil {
			fmt.Fprintln(os.Stderr, msg)
		}
		return 125
	}
	return usage()
}
