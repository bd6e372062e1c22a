package kernel

import (
	"fmt"
	"io"
	"strings"

	"github.com/kulehq/kule/kernel/internal/sandbox"
	"github.com/kulehq/kule/kernel/internal/sandboxlog"
	"github.com/kulehq/kule/kernel/internal/task"
)

// recordRefusals is the sandbox's Refused for runs in t: each refusal goes
// to the task's sandbox.jsonl, labelled run (or the command itself). A
// record that cannot be written is said on warn; the run's own error still
// says what was refused.
func recordRefusals(t *task.Task, run string, warn io.Writer) func(sandbox.Refusal) {
	return func(r sandbox.Refusal) {
		label := run
		if label == "" {
			label = strings.Join(r.Args, " ")
		}
		rec := sandboxlog.Record{Run: label, Kind: r.Kind, What: r.What, Why: r.Why, Do: r.Do, From: "sandbox"}
		if err := sandboxlog.Append(t.Paths.Dir, rec); err != nil {
			fmt.Fprintf(warn, "kule: the sandbox's refusal was not recorded in the task's %s: %v\n", sandboxlog.FileName, err)
		}
	}
}

// SandboxLog reads what the sandbox refused in t's runs (sandbox.jsonl),
// oldest first; damaged lines are passed over and named in damaged.
func SandboxLog(t *task.Task) (recs []sandboxlog.Record, damaged []error, err error) {
	return sandboxlog.Read(t.Paths.Dir, 0)
}
