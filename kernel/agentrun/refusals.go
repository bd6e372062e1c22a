package agentrun

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/kulehq/kule/kernel/internal/agents"
	"github.com/kulehq/kule/kernel/internal/sandboxlog"
	"github.com/kulehq/kule/kernel/internal/task"
)

// recordOpening keeps, in the task's sandbox.jsonl, a profile refused for
// what it would open in the sandbox, and returns err unchanged.
func recordOpening(t *task.Task, err error, warn io.Writer) error {
	var oe *agents.OpeningError
	if !errors.As(err, &oe) {
		return err
	}
	rec := sandboxlog.Record{Run: "agent " + oe.Profile, Kind: sandboxlog.Opening, From: "profile",
		What: fmt.Sprintf("%s %s of the profile %s (%s)", oe.Field, oe.Path, oe.Profile, oe.Source),
		Why:  strings.TrimPrefix(oe.Why, ": ") + "; the agent did not start",
		Do:   "change the profile in " + oe.Source + " to name a narrower path (`kule agents show " + oe.Profile + "` shows it)"}
	if werr := sandboxlog.Append(t.Paths.Dir, rec); werr != nil && warn != nil {
		fmt.Fprintf(warn, "kule: the refusal was not recorded in the task's %s: %v\n", sandboxlog.FileName, werr)
	}
	return err
}
