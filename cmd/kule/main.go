// Command kule is Kule's CLI: it makes tasks on a folder, runs commands in
// their copies, shows and commits what they changed, and undoes commits.
package main

import (
	"fmt"
	"github.com/kulehq/kule/kernel"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"strings"
)

func main() {
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
	if len(args) > 0 && shortHeapCommands[args[0]] {
		defer debug.SetGCPercent(debug.SetGCPercent(400))
	}
	root := rootCommand()
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		var ec exitCode
		if asExit(err, &ec) {
			return int(ec)
		}
		msg := err.Error()
		if !keepRepeats {
			msg = dedupePrefixes(msg)
		}
		fmt.Fprintln(os.Stderr, "kule:", safeText(msg))
		return 1
	}
	return 0
}

// shortHeapCommands are the commands that collect at a goal of 400% from
// the start. Their heap is the start's tables and then a task's manifest
// and scan, all of it live until the command ends; at the default 100% the
// first collection comes as the heap passes 4 MB, while the command is
// still parsing its arguments (exec, status), and marks the start's tables
// for nothing: a collection is several milliseconds of CPU, as much as
// `kule exec T -- true`'s own work. Set here, before the command tree is
// built, since by the command's own RunE the collection has begun.
var shortHeapCommands = map[string]bool{"exec": true, "status": true}

// keepRepeats turns dedupePrefixes off at the CLI: only the test that shows
// which error paths would repeat a prefix without it sets it.
var keepRepeats = false

// dedupePrefixes drops a prefix that repeats the one before it, as when a
// caller wraps an error that already names its part: "policy: policy:
// rules.cedar: …" is said "policy: rules.cedar: …".
func dedupePrefixes(msg string) string {
	parts := strings.Split(msg, ": ")
	out := parts[:1]
	for _, p := range parts[1:] {
		if p == out[len(out)-1] && isPrefixWord(p) {
			continue
		}
		out = append(out, p)
	}
	return strings.Join(out, ": ")
}

// isPrefixWord: what an error's prefix looks like ("policy", "kule new"),
// not a value a person should see twice if it is there twice.
func isPrefixWord(s string) bool {
	if s == "" || len(s) > 24 {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && r != ' ' && r != '-' {
			return false
		}
	}
	return true
}
