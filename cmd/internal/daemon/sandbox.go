package daemon

import (
	"net/http"

	"github.com/kulehq/kule/kernel"
)

// SandboxView is GET /api/tasks/{id}/sandbox: what the sandbox refused or
// weakened in the task's runs (sandbox.jsonl), the last 500, oldest first.
type SandboxView struct {
	Records []kernel.SandboxRecord `json:"records"`
	Damaged []string               `json:"damaged,omitempty"` // lines that could not be read
	// Accesses says why a command's own refused file accesses are not
	// among the records.
	Accesses string `json:"accesses"`
}

func (d *Daemon) taskSandbox(w http.ResponseWriter, r *http.Request, t *kernel.Task) {
	recs, damaged, err := d.k.SandboxRecords(t, 0)
	if err != nil {
		fail(w, err)
		return
	}
	if len(recs) > 500 {
		recs = recs[len(recs)-500:]
	}
	v := SandboxView{Records: recs, Accesses: kernel.SandboxAccessNote}
	if v.Records == nil {
		v.Records = []kernel.SandboxRecord{}
	}
	for _, e := range damaged {
		v.Damaged = append(v.Damaged, e.Error())
	}
	writeJSON(w, 200, v)
}

// publishRefusals puts on the event stream, as "sandbox" events, what the
// sandbox recorded for t since the log was offset bytes long (its size
// before a run).
func (d *Daemon) publishRefusals(t *kernel.Task, offset int64) {
	recs, _, err := d.k.SandboxRecords(t, offset)
	if err != nil {
		d.log.Warn("sandbox log not read", "task", t.ID, "err", err)
		return
	}
	for _, r := range recs {
		d.Bus.Publish("sandbox", t.ID, r)
	}
}
