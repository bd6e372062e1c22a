package main

import (
	"fmt"
	"io"

	"github.com/kulehq/kule/kernel"
)

// statusRefusals is how many of the sandbox's last refusals kule status
// prints (all of them are in the task's sandbox.jsonl).
const statusRefusals = 5

// printRefusals prints the last refusals of the task's sandbox, as kule
// status shows them beneath the changes.
func printRefusals(w io.Writer, t *kernel.Task) {
	recs, damaged, err := kernel.SandboxLog(t)
	if err != nil {
		fmt.Fprintf(w, "sandbox: %v\n", err)
		return
	}
	if n := len(recs) - statusRefusals; n > 0 {
		fmt.Fprintf(w, "sandbox: %s in %s\n", count(n, "earlier refusal", "earlier refusals"), kernel.SandboxLogPath(t.Paths.Dir))
		recs = recs[n:]
	}
	for _, r := range recs {
		fmt.Fprintln(w, safeLine(kernel.RefusalLine(r)))
	}
	if len(damaged) > 0 {
		fmt.Fprintf(w, "sandbox: %s of %s could not be read (first: %v)\n", plural(len(damaged), "line"), kernel.SandboxLogPath(t.Paths.Dir), damaged[0])
	}
}

// refusalsJSON is the sandbox's records for kule status --json.
func refusalsJSON(t *kernel.Task) []kernel.SandboxRecord {
	recs, _, _ := kernel.SandboxLog(t)
	if recs == nil {
		recs = []kernel.SandboxRecord{}
	}
	return recs
}
