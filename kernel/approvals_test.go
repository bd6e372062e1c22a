package kernel_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/kulehq/kule/kernel"
)

// `kule commit --approve` approves everything that asks; the commit's own
// history entry then names exactly the asked-about paths it applied, and
// none of what passed on its own.
func TestApproveAllIsRecordedInTheCommit(t *testing.T) {
	f := newFixture(t, map[string]string{"README.md": "hi\n", "go.mod": "module a\n"})
	tk := f.newTask()
	f.sh(tk, "echo more >> README.md; echo 'module b' > go.mod")
	rep, err := f.k.Commit(context.Background(), tk, kernel.CommitOptions{Policy: true, Approve: true, Approval: &kernel.Approval{By: "cli", All: true}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Applied) != 2 {
		t.Fatalf("applied %v, want README.md and go.mod", lines(rep.Applied))
	}
	log, err := f.k.HistoryLog(tk)
	if err != nil {
		t.Fatal(err)
	}
	last, ok, err := log.Last()
	if err != nil || !ok {
		t.Fatalf("no history entry: %v", err)
	}
	var d kernel.HistoryData
	if err := json.Unmarshal(last.Data, &d); err != nil {
		t.Fatal(err)
	}
	if d.Approval == nil || d.Approval.By != "cli" || !slices.Equal(d.Approval.Paths, []string{"go.mod"}) {
		t.Fatalf("the commit's entry records the approval %+v, want by cli of go.mod alone (README.md passed on its own)", d.Approval)
	}
}
