package agentrun_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/agentrun"
	"github.com/kulehq/kule/kernel/internal/acp"
	"github.com/kulehq/kule/kernel/internal/agents"
	"github.com/kulehq/kule/kernel/internal/policy"
	"github.com/kulehq/kule/kernel/internal/task"
)

// homeWorld is a person with instructions of their own for one built-in
// agent (played by the scripted agent, homeProbe), a kernel and a task.
type homeWorld struct {
	name, home, base string
	p                agents.Profile
	files            []string // what the script writes in its home, relative to it
	k                *kernel.Kernel
	set              *agents.Set
	task             *task.Task
}

func newHomeWorld(t *testing.T, name string) *homeWorld {
	t.Helper()
	w := &homeWorld{name: name}
	w.p, w.files = homeProbe(t, name)
	base, err := os.MkdirTemp("/var/tmp", "kule-homes-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	w.base = base
	w.home = filepath.Join(base, "home")
	os.MkdirAll(w.home, 0o700)
	t.Setenv("HOME", w.home)
	for _, ro := range w.p.ReadOnly {
		if mine := filepath.Join(w.home, filepath.FromSlash(ro)); filepath.Ext(mine) != "" {
			os.MkdirAll(filepath.Dir(mine), 0o700)
			os.WriteFile(mine, []byte("MINE\n"), 0o600)
		}
	}
	if w.k, err = kernel.New(kernel.Config{Home: filepath.Join(base, "kule")}); err != nil {
		t.Fatal(err)
	}
	w.load(t)
	folder := filepath.Join(base, "folder")
	os.MkdirAll(folder, 0o755)
	rep, err := w.k.NewTask(context.Background(), folder)
	if err != nil {
		t.Fatal(err)
	}
	w.task = rep.Task
	return w
}

// load makes the profile as it is now the one the runs start.
func (w *homeWorld) load(t *testing.T) {
	t.Helper()
	set, err := agents.Load(fstest.MapFS{w.name + ".toml": {Data: []byte(w.p.TOML())}}, w.k.Store().Root)
	if err != nil {
		t.Fatal(err)
	}
	w.set = set
}

func (w *homeWorld) shared() string { return filepath.Join(w.base, "share", "agent-homes", w.name) }

// run runs the scripted agent once with prompt and returns what it said
// and the notices the person was given.
func (w *homeWorld) run(t *testing.T, prompt string) (said string, notes []string) {
	t.Helper()
	var text strings.Builder
	o := agentrun.Options{Agents: w.set, Agent: w.name, Prompt: prompt, Home: w.home,
		PackagesRoot: filepath.Join(w.base, "share", "packages"),
		HomesRoot:    filepath.Join(w.base, "share", "agent-homes"),
		OnEvent: func(e acp.Event) {
			switch e.Type {
			case acp.EventText:
				text.WriteString(e.Text)
			case acp.EventNotice:
				notes = append(notes, e.Text)
			}
		}}
	r, err := agentrun.Start(context.Background(), w.k, w.task, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Wait(); err != nil {
		t.Fatal(err)
	}
	return text.String(), notes
}

// writtenItself reports whether rel (in the agent's home) lies in a
// read_only entry that holds, or is, one the agent writes itself
// (self_written): such an entry stays writable during the run.
func writtenItself(p agents.Profile, rel string) bool {
	for _, ro := range p.ReadOnly {
		r, ok := p.OwnRel(ro)
		if !ok || (rel != r && !strings.HasPrefix(rel, r+"/")) {
			continue
		}
		for _, sw := range p.SelfWritten {
			if s, ok := p.OwnRel(sw); ok && (s == r || strings.HasPrefix(s, r+"/") || strings.HasPrefix(r, s+"/")) {
				return true
			}
		}
	}
	return false
}

// afterOf is what the script read back of its home after writing it.
func afterOf(said string) string {
	_, a, _ := strings.Cut(said, "after[")
	return a
}

// A run that rewrites what its agent reads as instructions or settings
// (CLAUDE.md, settings.json, hooks, …, each built-in agent's read_only)
// mid-run and reads it back gets the original: the write fails inside the
// sandbox. With the read-only binds taken away, the run reads its own
// words back — the attack a prompt injection would make before a hook
// fires.
func TestInstructionsAreReadOnlyDuringTheRun(t *testing.T) {
	needSandbox(t)
	for _, name := range []string{"claude-code", "codex", "gemini"} {
		for _, guard := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/guard=%v", name, guard), func(t *testing.T) {
				*agentrun.ReadOnlyHomes = guard
				defer func() { *agentrun.ReadOnlyHomes = true }()
				w := newHomeWorld(t, name)
				w.p.Env["KULE_PEER_COPY_FILE"] = "AGENTS.md"
				w.load(t)
				said, _ := w.run(t, "X")
				// Instructions in the task's copy are the task's to change:
				// a change there is an effect the policy holds for review.
				st, err := w.k.Status(context.Background(), w.task)
				if err != nil {
					t.Fatal(err)
				}
				j, err := w.k.JudgeStatus(w.task, st, false, false)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.ContainsFunc(j.Ruling.Verdicts, func(v policy.Verdict) bool {
					return v.Request.Path == "AGENTS.md" && v.Outcome == policy.Ask && slices.Contains(v.Rules, "agent-instructions")
				}) {
					t.Errorf("the run's AGENTS.md in the copy does not wait for review (agent-instructions): %v", j.Ruling.Verdicts)
				}
				after := afterOf(said)
				if !guard {
					if !strings.Contains(after, w.files[0]+"=POISON from X") {
						t.Fatalf("with the instructions writable the run should read its own %s back (the attack); it read %q", w.files[0], said)
					}
					return
				}
				held := 0
				for _, rel := range w.files {
					if writtenItself(w.p, rel) {
						continue // the agent's own writes go there: writable, taken out after
					}
					held++
					if strings.Contains(after, rel+"=POISON") {
						t.Errorf("the run rewrote its %s and read it back: %q", rel, said)
					}
				}
				if held < 3 {
					t.Fatalf("%s: only %d of %v are held read-only", name, held, w.files)
				}
				mine := w.p.ReadOnly[0]
				if rel, _ := w.p.OwnRel(mine); filepath.Ext(rel) != "" && !strings.Contains(after, rel+"=MINE") {
					t.Errorf("the person's own %s is not what the run reads after its write: %q", mine, said)
				}
				if !strings.Contains(said, "read-only file system") {
					t.Errorf("the run's writes did not fail as writes to a read-only file system: %q", said)
				}
			})
		}
	}
}

// A change a run made to its agent's settings (here where they are left
// writable, as on a sandbox that cannot make them read-only) is offered for
// review and reaches the home Kule keeps for the agent only when the person
// applies it: the next run reads it then, and not before; undo takes it
// back.
func TestKeptAgentChangeReachesRunsOnlyOnceApplied(t *testing.T) {
	needSandbox(t)
	w := newHomeWorld(t, "claude-code")
	*agentrun.ReadOnlyHomes = false
	_, notes := w.run(t, "A")
	*agentrun.ReadOnlyHomes = true
	if !slices.ContainsFunc(notes, func(n string) bool {
		return strings.Contains(n, "kule home "+w.task.ID+" diff claude-code:")
	}) {
		t.Errorf("the person is not told how to review the change: %q", notes)
	}
	ch, err := kernel.AgentChanges(w.task)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, c := range ch {
		if c.Agent != "claude-code" || c.Home != w.shared() {
			t.Errorf("change %+v, want claude-code's, against %s", c, w.shared())
		}
		listed = append(listed, c.Kind+" "+c.Path)
	}
	if !slices.Contains(listed, "add settings.json") || !slices.Contains(listed, "add CLAUDE.md") {
		t.Fatalf("review lists %q", listed)
	}
	kept, run, err := kernel.AgentChangeDiff(w.task, "claude-code", "settings.json")
	if err != nil || len(kept) != 0 || !strings.Contains(string(run), "POISON from A") {
		t.Fatalf("diff: kept %q, run %q, %v", kept, run, err)
	}
	// Not applied: the next run reads the person's own settings.
	said, _ := w.run(t, "B")
	if strings.Contains(said, "POISON from A") || !strings.Contains(said, "settings.json=MINE") {
		t.Fatalf("a run read a change nobody applied: %q", said)
	}
	if _, err := os.Stat(filepath.Join(w.shared(), "settings.json")); err == nil {
		t.Fatal("the kept home holds a change nobody applied")
	}
	if err := w.k.ApplyAgentChange(w.task, "claude-code", "settings.json"); err != nil {
		t.Fatal(err)
	}
	said, _ = w.run(t, "C")
	if !strings.Contains(said, "seen[settings.json=POISON from A") {
		t.Fatalf("the run after the apply does not read the applied settings: %q", said)
	}
	if strings.Contains(said, "CLAUDE.md=POISON") {
		t.Fatalf("a change not applied reached the run: %q", said)
	}
	if p, err := w.k.UndoAgentChange(w.task, "claude-code"); err != nil || p != "settings.json" {
		t.Fatalf("undo: %q %v", p, err)
	}
	if said, _ = w.run(t, "D"); !strings.Contains(said, "seen[settings.json=MINE") {
		t.Fatalf("after the undo the run reads %q", said)
	}
	if err := w.k.ApplyAgentChange(w.task, "../other", "settings.json"); err == nil {
		t.Fatal("applied a change of an agent the task has none of")
	}
}
