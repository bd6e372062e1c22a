package kernel

import (
	"path/filepath"
	"testing"

	"github.com/kulehq/kule/kernel/internal/task"
)

// Whatever agent name reaches kule home (AGENT:PATH, typed by a person or
// pasted from a page), one it accepts names a layer and a record directly
// inside the task's agent-changes folder, never a path out of it.
func FuzzAgentName(f *testing.F) {
	for _, s := range []string{"claude-code", "codex", "", ".", "..", "../x", "a/b", `a\b`, ".hidden", "x.json", "~", "a\x00b"} {
		f.Add(s)
	}
	tk := &task.Task{ID: "0badc0de", Paths: task.LayoutOf("/k/tasks/0badc0de")}
	dir := filepath.Join(tk.Paths.Dir, agentChangesDir)
	f.Fuzz(func(t *testing.T, name string) {
		if !validAgentName(name) {
			if KeepsAgentChanges(tk, name) {
				t.Fatalf("%q is refused as a name but its changes are offered", name)
			}
			return
		}
		l := AgentChangeLayer(tk, name)
		if filepath.Dir(l.Dir) != dir || filepath.Dir(l.Record) != dir || l.Dir == dir {
			t.Fatalf("%q names %s and %s, not a layer in %s", name, l.Dir, l.Record, dir)
		}
	})
}
