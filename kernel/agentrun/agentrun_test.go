package agentrun_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/agentrun"
	"github.com/kulehq/kule/kernel/internal/acp"
	"github.com/kulehq/kule/kernel/internal/agents"
	"github.com/kulehq/kule/kernel/internal/proxy"
	"github.com/kulehq/kule/kernel/internal/runner"
	"github.com/kulehq/kule/kernel/internal/sandbox"
	"github.com/kulehq/kule/kernel/internal/task"
)

func TestMain(m *testing.M) {
	if s := os.Getenv("KULE_AGENTRUN_PEER"); s != "" {
		os.Exit(runPeer(s))
	}
	code := m.Run()
	if peerDir != "" {
		os.RemoveAll(peerDir)
	}
	os.Exit(code)
}

var (
	peerOnce sync.Once
	peerDir  string
	peerPath string
	peerErr  error
)

// peerBinary is a copy of this test binary outside /tmp (which the sandbox
// replaces with the task's own), so the sandboxed agent can start it.
func peerBinary(t *testing.T) string {
	t.Helper()
	peerOnce.Do(func() {
		base := os.Getenv("KULE_TEST_ROOT")
		if base == "" {
			base = "/var/tmp"
		}
		exe, err := os.Executable()
		if err != nil {
			peerErr = err
			return
		}
		b, err := os.ReadFile(exe)
		if err != nil {
			peerErr = err
			return
		}
		if peerDir, peerErr = os.MkdirTemp(base, "kule-agentrun-peer-"); peerErr != nil {
			return
		}
		peerPath = filepath.Join(peerDir, "peer")
		peerErr = os.WriteFile(peerPath, b, 0o755)
	})
	if peerErr != nil {
		t.Fatal(peerErr)
	}
	return peerPath
}

type fixture struct {
	k      *kernel.Kernel
	t      *task.Task
	home   string // the person's home
	folder string
	set    *agents.Set

	mu     sync.Mutex
	events []acp.Event
	usage  []acp.Usage
}

const realKey = "real-key-never-seen-by-the-agent"

// newFixture makes a Kule home with a task on a small folder, a person's
// home with a key in ~/.ssh, and an approved profile "peer" that runs the
// scripted agent with script.
func newFixture(t *testing.T, script string) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{home: filepath.Join(dir, "home"), folder: filepath.Join(dir, "folder")}
	for _, d := range []string{f.folder, filepath.Join(f.home, ".ssh")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(f.folder, "a.txt"), []byte("a\n"), 0o644)
	os.WriteFile(filepath.Join(f.home, ".ssh", "id_ed25519"), []byte("FAKE PRIVATE KEY"), 0o600)
	k, err := kernel.New(kernel.Config{Home: filepath.Join(dir, "kule")})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := k.NewTask(context.Background(), f.folder)
	if err != nil {
		t.Fatal(err)
	}
	f.k, f.t = k, rep.Task
	profile := "[[agent]]\nname = \"peer\"\ncommand = [" + quote(peerBinary(t)) + ", \"-test.run=^$\"]\n" +
		"env = { KULE_AGENTRUN_PEER = " + quote(script) + " }\n" +
		"keys = { TEST_KEY = [\"model.test\"] }\n"
	if err := os.WriteFile(agents.PersonalPath(k.Store().Root), []byte(profile), 0o600); err != nil {
		t.Fatal(err)
	}
	f.set = f.load(t)
	return f
}

func (f *fixture) load(t *testing.T) *agents.Set {
	t.Helper()
	set, err := agents.Load(fstest.MapFS{}, f.k.Store().Root)
	if err != nil {
		t.Fatal(err)
	}
	if err := set.Problems["peer"]; err != nil {
		t.Fatal(err)
	}
	return set
}

func (f *fixture) approve(t *testing.T) {
	t.Helper()
	p, err := f.set.Get("peer")
	if err != nil {
		t.Fatal(err)
	}
	if err := agents.Approve(f.k.Store().Root, p, f.set.Profiles); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) options(prompt string) agentrun.Options {
	return agentrun.Options{
		Agents: f.set, Agent: "peer", Prompt: prompt,
		OnEvent: func(e acp.Event) { f.mu.Lock(); f.events = append(f.events, e); f.mu.Unlock() },
		OnUsage: func(u acp.Usage) { f.mu.Lock(); f.usage = append(f.usage, u); f.mu.Unlock() },
		Getenv: func(k string) string {
			if k == "TEST_KEY" {
				return realKey
			}
			return os.Getenv(k)
		},
		Home:         f.home,
		PackagesRoot: filepath.Join(f.k.Store().Root, "packages"),
	}
}

func (f *fixture) text() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var b strings.Builder
	for _, e := range f.events {
		if e.Type == acp.EventText {
			b.WriteString(e.Text)
		}
	}
	return b.String()
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

func readLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%s: %v in %q", path, err, l)
		}
		out = append(out, m)
	}
	return out
}

// checkTurn asserts what a person would check after the write script's
// turn: the steps with their effects, the usage, the change in the copy
// only, the key a placeholder, the task unlocked (commit applies it).
func (f *fixture) checkTurn(t *testing.T, res agentrun.Result) (seen string) {
	t.Helper()
	if res.StopReason != "end_turn" || f.text() != "done" {
		t.Errorf("turn ended %q with text %q", res.StopReason, f.text())
	}
	if res.Status == nil || !strings.Contains(effectsOf(res.Status), "+ hello.txt") || !strings.Contains(effectsOf(res.Status), "+ seen.txt") {
		t.Fatalf("status after the turn: %v %v", effectsOf(res.Status), res.StatusErr)
	}
	steps := readLines(t, filepath.Join(f.t.Paths.Dir, acp.StepsFile))
	if len(steps) != 2 || steps[0]["title"] != "Write hello.txt" || !strings.Contains(quoteAny(steps[0]["effects"]), `"path":"hello.txt"`) ||
		!strings.Contains(quoteAny(steps[1]["effects"]), `"path":"seen.txt"`) {
		t.Errorf("steps.jsonl: %v", steps)
	}
	var usage []map[string]any // less the line each run starts with (kernel/internal/budget)
	for _, u := range readLines(t, filepath.Join(f.t.Paths.Dir, acp.UsageFile)) {
		if u["source"] != "run_start" {
			usage = append(usage, u)
		}
	}
	if len(usage) != 1 || usage[0]["source"] != "usage_update" || usage[0]["used"] != float64(10) {
		t.Errorf("usage.jsonl: %v", usage)
	}
	f.mu.Lock()
	if len(f.usage) != 1 || f.usage[0].Used == nil || *f.usage[0].Used != 10 || !strings.Contains(string(f.usage[0].Cost), "0.25") {
		t.Errorf("OnUsage was told %+v", f.usage)
	}
	f.mu.Unlock()
	b, err := os.ReadFile(filepath.Join(f.t.Paths.Copy, "seen.txt"))
	if err != nil {
		t.Fatal(err)
	}
	seen = string(b)
	if strings.Contains(seen, realKey) || !strings.Contains(seen, "TEST_KEY="+proxy.PlaceholderPrefix) {
		t.Errorf("the agent's key variable: %q, want a placeholder", seen)
	}
	if _, err := os.Stat(filepath.Join(f.folder, "hello.txt")); err == nil {
		t.Error("the agent's file reached the folder before a commit")
	}
	// The run let go of the task: a commit applies what the agent wrote.
	if _, err := f.k.Commit(context.Background(), f.t, kernel.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(f.folder, "hello.txt")); err != nil || string(b) != "hello\n" {
		t.Errorf("hello.txt after commit: %q %v", b, err)
	}
	return seen
}

func effectsOf(st *kernel.Status) string {
	if st == nil {
		return "<no status>"
	}
	var s []string
	for _, e := range st.Effects {
		s = append(s, e.String())
	}
	return strings.Join(s, "; ")
}

func quoteAny(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestRunRecordsStepsUsageAndHidesTheKey(t *testing.T) {
	f := newFixture(t, "write")
	ctx := context.Background()
	o := f.options("hi")
	o.Runner = runner.Direct{}
	if _, err := agentrun.Start(ctx, f.k, f.t, o); !errors.Is(err, agents.ErrNotApproved) {
		t.Fatalf("an unapproved profile started: %v", err)
	}
	f.approve(t)
	var header strings.Builder
	o.Stderr = &header
	r, err := agentrun.Start(ctx, f.k, f.t, o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Agent != "kule-test-peer 1.0" || r.Continued {
		t.Errorf("run of %q, continued %v", r.Agent, r.Continued)
	}
	res, err := r.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(header.String(), "kule-test-peer 1.0 · task "+f.t.ID+" · new conversation") {
		t.Errorf("stderr: %q", header.String())
	}
	f.checkTurn(t, res)
	if rec, ok, err := acp.LoadSession(f.t.Paths.Dir); err != nil || !ok || rec.Agent != "peer" || rec.Session != "s1" {
		t.Errorf("session record %+v %v %v", rec, ok, err)
	}
}

func TestRunCancelEndsTheTurnAsCancelled(t *testing.T) {
	f := newFixture(t, "slow")
	f.approve(t)
	o := f.options("wait")
	o.Runner = runner.Direct{}
	r, err := agentrun.Start(context.Background(), f.k, f.t, o)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the turn to start", func() bool { return f.text() == "waiting" })
	r.Cancel()
	res, err := r.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != "cancelled" {
		t.Errorf("cancelled turn ended %q", res.StopReason)
	}
}

func TestRunStopEndsTheAgent(t *testing.T) {
	f := newFixture(t, "slow")
	f.approve(t)
	o := f.options("wait")
	o.Runner = runner.Direct{}
	r, err := agentrun.Start(context.Background(), f.k, f.t, o)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the turn to start", func() bool { return f.text() == "waiting" })
	r.Stop()
	<-r.Done()
	// Stopped mid-turn: it ends cancelled (the agent answered the cancel)
	// or failed, never hanging; the task is free again.
	if _, err := f.k.Commit(context.Background(), f.t, kernel.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
}

// A run that cannot start leaves nothing behind: the task is unlocked and
// no agent runs.
func TestRunThatCannotStartLeavesTheTaskFree(t *testing.T) {
	f := newFixture(t, "write")
	profile := "[[agent]]\nname = \"peer\"\ncommand = [\"/nonexistent/agent\"]\n"
	os.WriteFile(agents.PersonalPath(f.k.Store().Root), []byte(profile), 0o600)
	f.set = f.load(t)
	f.approve(t)
	o := f.options("hi")
	o.Runner = runner.Direct{}
	if _, err := agentrun.Start(context.Background(), f.k, f.t, o); err == nil {
		t.Fatal("a missing agent started")
	}
	if _, err := agentrun.Start(context.Background(), f.k, f.t, agentrun.Options{}); !errors.Is(err, agentrun.ErrNoAgent) {
		t.Errorf("no agent named: %v", err)
	}
	done := make(chan error, 1)
	go func() { _, err := f.k.Commit(context.Background(), f.t, kernel.CommitOptions{}); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the task stayed locked after a failed start")
	}
}

// In the sandbox (the default runner), the agent writes its copy, its key
// is a placeholder, and the person's ~/.ssh is not there for it.
func TestRunInTheSandboxHidesSSH(t *testing.T) {
	needSandbox(t)
	f := newFixture(t, "write")
	t.Setenv("HOME", f.home) // the sandbox hides the credentials of this home
	f.approve(t)
	r, err := agentrun.Start(context.Background(), f.k, f.t, f.options("hi"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Wait()
	if err != nil {
		t.Fatal(err)
	}
	seen := f.checkTurn(t, res)
	if strings.Contains(seen, "FAKE PRIVATE KEY") || !strings.Contains(seen, "err=true") {
		t.Errorf("the sandboxed agent read ~/.ssh: %q", seen)
	}
}

// The agent's network goes through the task's policy proxy: its profile's
// hosts pass while it runs (the policy's agent-model-api rule), a host it
// does not name waits for approval, and network.jsonl says which rule.
func TestRunNetworkIsJudgedByThePolicy(t *testing.T) {
	for _, sandboxed := range []bool{false, true} {
		t.Run(map[bool]string{false: "direct", true: "sandbox"}[sandboxed], func(t *testing.T) {
			if sandboxed {
				needSandbox(t)
				t.Setenv("HOME", t.TempDir())
			}
			f := newFixture(t, "net")
			profile := "[[agent]]\nname = \"peer\"\ncommand = [" + quote(peerBinary(t)) + ", \"-test.run=^$\"]\n" +
				"env = { KULE_AGENTRUN_PEER = \"net\" }\nhosts = [\"model.test\"]\n"
			os.WriteFile(agents.PersonalPath(f.k.Store().Root), []byte(profile), 0o600)
			f.set = f.load(t)
			f.approve(t)
			o := f.options("go")
			if !sandboxed {
				o.Runner = runner.Direct{}
			}
			r, err := agentrun.Start(context.Background(), f.k, f.t, o)
			if err != nil {
				t.Fatal(err)
			}
			res, err := r.Wait()
			if err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(filepath.Join(f.t.Paths.Copy, "net.txt"))
			if !strings.Contains(string(b), "other.test:443 HTTP/1.1 403") {
				t.Errorf("what the agent got from the proxy:\n%s", b)
			}
			log := readLines(t, filepath.Join(f.t.Paths.Dir, "network.jsonl"))
			got := map[string]string{}
			for _, e := range log {
				got[e["host"].(string)] = fmt.Sprint(e["verdict"], " ", e["rule"])
			}
			if got["model.test"] != "tunneled agent-model-api" {
				t.Errorf("model.test in network.jsonl: %q (all: %v)", got["model.test"], log)
			}
			if got["other.test"] != "refused unknown-hosts" {
				t.Errorf("other.test in network.jsonl: %q (all: %v)", got["other.test"], log)
			}
			if len(res.Network) == 0 {
				t.Error("the run's result names no connection")
			}
		})
	}
}

func needSandbox(t *testing.T) {
	t.Helper()
	if m := sandbox.Probe().Missing(); len(m) > 0 {
		if os.Getenv("CI") != "" {
			t.Fatalf("the sandbox is not available on CI: %v", m)
		}
		t.Skipf("the sandbox is not available here: %v", m)
	}
}

// waitFor polls cond until it holds; it never measures time, only gives
// late messages a chance to arrive.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < 3000; i++ {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("gave up waiting for %s", what)
}

// Try runs an unapproved profile once in an empty task of its own, opened
// no wider than its command, and lists the hosts it wanted; the task is
// gone afterwards.
func TestTryListsTheHostsItWanted(t *testing.T) {
	f := newFixture(t, "net")
	p, err := f.set.Get("peer")
	if err != nil {
		t.Fatal(err)
	}
	p.Hosts = []string{"model.test"} // a trial opens none of them
	p.State = []string{".peer"}
	o := f.options("go")
	o.Trial = &p
	if testing.Short() {
		o.Runner = runner.Direct{}
	} else {
		needSandbox(t)
	}
	before, _ := f.k.Store().List()
	rep, err := agentrun.Try(context.Background(), f.k, o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Err != nil || rep.Result.StopReason != "end_turn" {
		t.Errorf("the trial turn: %q %v", rep.Result.StopReason, rep.Err)
	}
	if got := rep.Wanted(); !slices.Equal(got, []string{"model.test", "other.test"}) {
		t.Errorf("wanted %v (hosts %+v)", got, rep.Hosts)
	}
	for _, h := range rep.Hosts {
		if h.Passed || h.Rule != "unknown-hosts" {
			t.Errorf("host %+v passed or by another rule", h)
		}
	}
	if after, _ := f.k.Store().List(); len(after) != len(before) {
		t.Errorf("the trial's task was left behind: %d tasks, were %d", len(after), len(before))
	}
	if _, err := os.Stat(filepath.Join(f.home, ".peer")); err == nil {
		t.Error("the trial opened the profile's state")
	}
}
