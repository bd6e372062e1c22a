//go:build linux

package sandbox

import (
	"fmt"
	"os"
)

// HelperMain is what is left of the sandbox helper in Go: cmd/kule and
// cmd/kule-sandbox call it when started with a helper's arguments and exit
// with what it returns. The helper itself is C (pid1_linux.c) and runs from
// a constructor before the Go runtime starts, when kule starts it with its
// exact arguments. Go code reached with a stage means either that a person
// ran it (usage), or that this binary was built without the C (with
// CGO_ENABLED=0): then the run is refused before anything is mounted.
func HelperMain() int {
	if len(os.Args) < 2 || helperInC {
		return usage()
	}
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
