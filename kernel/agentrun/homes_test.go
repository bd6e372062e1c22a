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
	"github.com/kulehq/kule/kernel/internal/task"
)

// homeScript plays an agent that reads what it would take as instructions
// in its own home (KULE_PEER_FILES, under the variable KULE_PEER_HOME_VAR
// names) and the transcripts there (KULE_PEER_STATE), says what it saw,
// then writes instructions of its own into each and a transcript named
// after the prompt.
func (p *peer) homeScript(script string, id any, params map[string]any) bool {
	if script != "home" {
		return false
	}
	prompt := ""
	for _, b := range params["prompt"].([]any) {
		if b := b.(map[string]any); b["type"] == "text" {
			prompt, _, _ = strings.Cut(b["text"].(string), "\n")
		}
	}
	home := os.Getenv(os.Getenv("KULE_PEER_HOME_VAR"))
	var seen []string
	for _, rel := range strings.Split(os.Getenv("KULE_PEER_FILES"), ",") {
		if b, err := os.ReadFile(filepath.Join(home, rel)); err == nil {
			seen = append(seen, rel+"="+strings.TrimSpace(string(b)))
		}
	}
	if b, err := os.ReadFile(os.Getenv("KULE_PEER_PEEK")); err == nil {
		seen = append(seen, "peek="+strings.TrimSpace(string(b)))
	}
	state := filepath.Join(home, os.Getenv("KULE_PEER_STATE"))
	ents, _ := os.ReadDir(state)
	for _, e := range ents {
		seen = append(seen, "transcript="+e.Name())
	}
	var failed []string
	for _, rel := range strings.Split(os.Getenv("KULE_PEER_FILES"), ",") {
		f := filepath.Join(home, rel)
		os.MkdirAll(filepath.Dir(f), 0o700)
		if err := os.WriteFile(f, []byte("POISON from "+prompt+"\n"), 0o644); err != nil {
			failed = append(failed, err.Error())
		}
	}
	if name := os.Getenv("KULE_PEER_COPY_FILE"); name != "" {
		// Instructions in the task's copy (its working directory).
		if err := os.WriteFile(name, []byte("POISON from "+prompt+"\n"), 0o644); err != nil {
			failed = append(failed, err.Error())
		}
	}
	// Read back within the same run, as a hook or a settings watcher would.
	var after []string
	for _, rel := range strings.Split(os.Getenv("KULE_PEER_FILES"), ",") {
		if b, err := os.ReadFile(filepath.Join(home, rel)); err == nil {
			after = append(after, rel+"="+strings.TrimSpace(string(b)))
		}
	}
	os.MkdirAll(state, 0o700)
	if err := os.WriteFile(filepath.Join(state, "transcript-"+prompt), []byte(prompt), 0o600); err != nil {
		failed = append(failed, err.Error())
	}
	text := "seen[" + strings.Join(seen, ";") + "] failed[" + strings.Join(failed, ";") + "] after[" + strings.Join(after, ";") + "]"
	p.update("s1", map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": text}})
	p.send(map[string]any{"id": id, "result": map[string]any{"stopReason": "end_turn"}})
	return true
}

// homeProbe is one built-in agent's profile with its command replaced by
// the scripted agent, and what the script reads and writes in its home.
func homeProbe(t *testing.T, name string) (agents.Profile, []string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../../plugins/agent", name+".toml"))
	if err != nil {
		t.Fatal(err)
	}
	ps, err := agents.Parse(b, name)
	if err != nil || len(ps) != 1 {
		t.Fatal(ps, err)
	}
	p := ps[0]
	if p.OwnHome == "" {
		t.Fatalf("%s has no home of its own", name)
	}
	var files []string
	for _, ro := range p.ReadOnly {
		rel, ok := p.OwnRel(ro)
		if !ok {
			continue
		}
		if filepath.Ext(rel) == "" {
			rel += "/poison.md" // a folder of commands, skills, hooks: a file in it
		}
		files = append(files, rel)
	}
	if len(files) < 3 {
		t.Fatalf("%s: %d instruction paths in its home: %v", name, len(files), files)
	}
	state := "sessions"
	if len(p.State) > 0 {
		if rel, ok := p.OwnRel(p.State[0]); ok {
			state = rel
		}
	}
	p.Command = []string{peerBinary(t), "-test.run=^$"}
	p.Keys, p.Hosts, p.Mode, p.Auth = nil, nil, "", ""
	p.Env = map[string]string{"KULE_AGENTRUN_PEER": "home", "KULE_PEER_HOME_VAR": p.OwnHome, "KULE_PEER_FILES": strings.Join(files, ","), "KULE_PEER_STATE": state}
	return p, files
}

// A run in task A writes instructions and a transcript into its agent's
// home; the run in task B that follows must read neither, for each
// built-in agent. With the guard off (one home for every task, as it once
// was), B reads A's instructions and transcript: the poisoning works.
func TestOneTaskCannotPoisonAnotherTasksAgentHome(t *testing.T) {
	needSandbox(t)
	for _, name := range []string{"claude-code", "codex", "gemini"} {
		for _, guard := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/guard=%v", name, guard), func(t *testing.T) {
				*agentrun.PerTaskHomes = guard
				defer func() { *agentrun.PerTaskHomes = true }()
				// Writable during the run, so that the run's change reaches
				// what is done after it (TestInstructionsAreReadOnlyDuringTheRun
				// holds the run itself).
				*agentrun.ReadOnlyHomes = false
				defer func() { *agentrun.ReadOnlyHomes = true }()
				p, files := homeProbe(t, name)
				base, err := os.MkdirTemp("/var/tmp", "kule-homes-")
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { os.RemoveAll(base) })
				home := filepath.Join(base, "home")
				os.MkdirAll(home, 0o700)
				t.Setenv("HOME", home)
				// The person's own instructions: what every run must read.
				mine := filepath.Join(home, filepath.FromSlash(p.ReadOnly[0]))
				os.MkdirAll(filepath.Dir(mine), 0o700)
				if filepath.Ext(mine) != "" {
					os.WriteFile(mine, []byte("MINE\n"), 0o600)
				}
				k, err := kernel.New(kernel.Config{Home: filepath.Join(base, "kule")})
				if err != nil {
					t.Fatal(err)
				}
				// A file in the home Kule keeps for the agent (a login made
				// in an earlier run): no run reads it.
				shared := filepath.Join(base, "share", "agent-homes", name)
				os.MkdirAll(shared, 0o700)
				os.WriteFile(filepath.Join(shared, "kept-login"), []byte("SHARED-LOGIN\n"), 0o600)
				p.Env["KULE_PEER_PEEK"] = filepath.Join(shared, "kept-login")
				set, err := agents.Load(fstest.MapFS{name + ".toml": {Data: []byte(p.TOML())}}, k.Store().Root)
				if err != nil {
					t.Fatal(err)
				}
				var tasks []*task.Task
				for _, n := range []string{"a", "b"} {
					folder := filepath.Join(base, n)
					os.MkdirAll(folder, 0o755)
					rep, err := k.NewTask(context.Background(), folder)
					if err != nil {
						t.Fatal(err)
					}
					tasks = append(tasks, rep.Task)
				}
				said := map[string]string{}
				var notes []string
				for i, prompt := range []string{"A", "B", "A-again"} {
					tk := tasks[i%2]
					var text strings.Builder
					o := agentrun.Options{Agents: set, Agent: name, Prompt: prompt, Home: home,
						PackagesRoot: filepath.Join(base, "share", "packages"),
						HomesRoot:    filepath.Join(base, "share", "agent-homes"),
						OnEvent: func(e acp.Event) {
							if e.Type == acp.EventText {
								text.WriteString(e.Text)
							}
							if e.Type == acp.EventNotice {
								notes = append(notes, e.Text)
							}
						}}
					r, err := agentrun.Start(context.Background(), k, tk, o)
					if err != nil {
						t.Fatal(err)
					}
					if _, err := r.Wait(); err != nil {
						t.Fatal(err)
					}
					said[prompt] = text.String()
				}
				b := said["B"]
				poisoned := strings.Contains(b, "POISON from A") || strings.Contains(b, "transcript=transcript-A")
				if !guard {
					if !poisoned {
						t.Fatalf("with one home for every task, B should read A's instructions (the attack); it saw %q", b)
					}
					return
				}
				if poisoned {
					t.Fatalf("task B's run read what task A's run wrote in its home: %q", b)
				}
				for run, text := range said {
					if strings.Contains(text, "SHARED-LOGIN") {
						t.Errorf("run %s read the home Kule keeps for the agent: %q", run, text)
					}
				}
				if !strings.HasPrefix(said["A"], "seen[") || strings.Contains(said["A"], "transcript=") {
					t.Errorf("A saw %q", said["A"])
				}
				// Task A's next run keeps its own transcript, never its
				// own written instructions.
				if again, _, _ := strings.Cut(said["A-again"], "] failed["); strings.Contains(again, "POISON") || !strings.Contains(again, "transcript=transcript-A") {
					t.Errorf("task A's next run saw %q", again)
				}
				if filepath.Ext(mine) != "" && !strings.Contains(b, "=MINE") {
					t.Errorf("the person's own %s did not reach the run: %q", p.ReadOnly[0], b)
				}
				if !slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, "changed what it reads as instructions or settings") }) {
					t.Errorf("the person is not told of the changed instructions: %q", notes)
				}
				// What A wrote is kept for the person, outside every run.
				kept := filepath.Join(tasks[0].Paths.Dir, "agent-changes", name, filepath.FromSlash(files[0]))
				if got, err := os.ReadFile(kept); err != nil || !strings.Contains(string(got), "POISON from A") {
					t.Errorf("A's change is not kept for review at %s: %q %v", kept, got, err)
				}
				// The person's own file is as it was.
				if filepath.Ext(mine) != "" {
					if got, _ := os.ReadFile(mine); string(got) != "MINE\n" {
						t.Errorf("the person's %s now holds %q", mine, got)
					}
				}
			})
		}
	}
}
