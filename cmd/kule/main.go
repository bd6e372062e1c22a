// Command kule is Kule's CLI: it makes tasks on a folder, runs commands in
// their copies, shows and commits what they changed, and undoes commits.
package main

import (
	"fmt"
	"github.com/kulehq/kule/kernel"
	"os"
	"runtime/pprof"
)

func main() {
	// A built-in plugin is this binary re-executed by the kernel; it serves
	// before anything else of the CLI starts.
	if len(os.Args) > 1 && os.Args[1] == "__plugin" {
		os.Exit(servePlugin(os.Args[2:]))
	}
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	kernel.ServeSandboxHelper(args)                 // a person who typed kule __sandbox is told it is not theirs
	if p := os.Getenv("KULE_CPUPROFILE"); p != "" { // for finding what a slow command spends its time on
		if f, err := os.Create(p); err == nil {
			_ = pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	root := rootCommand()
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		var ec exitCode
		if asExit(err, &ec) {
			return int(ec)
		}
		fmt.Fprintln(os.Stderr, "kule:", safeText(err.Error()))
		return 1
	}
	return 0
}
