package daemon

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kulehq/kule/cmd/internal/daemon/client"
	"github.com/kulehq/kule/kernel"
)

// TestResumeInterruptedRunFromTheApp: a run left marked running by a Kule
// that was killed (its record and progress, as they were written while it
// ran) is found when the daemon starts, listed by GET /api/interrupted,
// and POST /resume resumes it: the agent loads the same session and is
// told where the run was. Once resumed it is listed no more.
func TestResumeInterruptedRunFromTheApp(t *testing.T) {
	t.Parallel()
	k := newKernel(t)
	cfg := Config{Kernel: k}
	withPeerScript(t, &cfg, "resume", "")
	rep, err := k.NewTask(context.Background(), sampleFolder(t))
	must(t, err)
	tk := rep.Task
	// What a killed process leaves: a record still running, its progress.
	id := k.MemoryRunStarted(tk, kernel.MemoryRun{Agent: "peer", Session: "s1", Prompt: "write the release notes"})
	if id == 0 {
		t.Fatal("the run was not recorded")
	}
	k.MemoryProgress(id, kernel.MemoryProgress{Steps: []kernel.MemoryStepMark{{Title: "Write notes/release.md", Kind: "edit", Status: "completed", Changed: []string{"add notes/release.md"}}}})
	must(t, k.CloseMemory())

	d := startDaemon(t, cfg)
	c := client.New(d.home)
	var list []InterruptedView
	must(t, c.Do(context.Background(), "GET", "/api/interrupted", nil, &list))
	if len(list) != 1 || list[0].Run != id || list[0].Task != tk.ID || list[0].Agent != "peer" || len(list[0].Steps) != 1 {
		t.Fatalf("GET /api/interrupted: %+v", list)
	}
	var turn AgentTurn
	must(t, c.Do(context.Background(), "POST", "/api/tasks/"+tk.ID+"/resume", ResumeRequest{}, &turn))
	if turn.StopReason != "end_turn" {
		t.Fatalf("the resumed turn: %+v", turn)
	}
	got := readFile(filepath.Join(tk.Paths.Copy, "resumed.txt"))
	if !strings.HasPrefix(got, "loaded=s1\n") || !strings.Contains(got, `it had been asked: "write the release notes"`) ||
		!strings.Contains(got, "1) edit, completed (changed: add notes/release.md)") {
		t.Fatalf("the agent was given:\n%s", got)
	}
	must(t, c.Do(context.Background(), "GET", "/api/interrupted", nil, &list))
	if len(list) != 0 {
		t.Fatalf("a resumed run is still listed: %+v", list)
	}
	if err := c.Do(context.Background(), "POST", "/api/tasks/"+tk.ID+"/resume", ResumeRequest{}, &turn); err == nil || !strings.Contains(err.Error(), "no interrupted run") {
		t.Fatalf("a second resume: %v", err)
	}
}
