package daemon

import (
	"net/http"

	"github.com/kulehq/kule/kernel/internal/sandboxlog"
	"github.com/kulehq/kule/kernel/internal/task"
)

// SandboxView is GET /api/tasks/{id}/sandbox: what the sandbox refused or
// weakened in the task's runs (sandbox.jsonl), the last 500, oldest first.
type SandboxView struct {
	Records []sandboxlog.Record `json:"records"`
	Damaged []string            `json:"damaged,omitempty"` // lines that could not be read
	// Accesses says why a command's own refused file accesses are not
	// among the records.
	Accesses string `json:"accesses"`
}

func (d *Daemon) taskSandbox(w http.ResponseWriter, r *http.Request, t *task.Task) {
	recs, damaged, err := sandboxlog.Read(t.Paths.Dir, 0)
	if err != nil {
		fail(w, err)
		return
	}
	if len(recs) > 500 {
		recs = recs[len(recs)-500:]
	}
	v := SandboxView{Records: recs, Accesses: sandboxlog.AccessNote}
	if v.Records == nil {
		v.Records = []sandboxlog.Record{}
	}
	for _, e := range damaged {
		v.Damaged = append(v.Damaged, e.Error())
	}
	writeJSON(w, 200, v)
}

// publishRefusals puts on the event stream, as "sandbox" events, what the
// sandbox recorded for t since the log was offset bytes long (its size
// before a run).
func (d *Daemon) publishRefusals(t *task.Task, offset int64) {
	recs, _, err := sandboxlog.Read(t.Paths.Dir, offset)
	if err != nil {
		d.log.Warn("sandbox log not read", "task", t.ID, "err", err)
		return
	}
	for _, r := range recs {
		d.Bus.Publish("sandbox", t.ID, r)
	}
}
