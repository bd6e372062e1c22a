package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kulehq/kule/kernel/internal/effects"
	"github.com/kulehq/kule/kernel/internal/runner"
)

func TestMain(m *testing.M) {
	if os.Getenv("GO_WANT_HELPER_PROCESS") == "1" {
		runPeer(os.Getenv("ACP_PEER"))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) lines(t *testing.T) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(l.b.Bytes()), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("a line that is not json: %q", line)
		}
		out = append(out, m)
	}
	return out
}

// walkEffects is the effect set of a copy whose base is empty: every file an
// add. The engine's real EffectsFunc compares with the base; the recorder
// only needs a set that changes when the copy does.
func walkEffects(root string) EffectsFunc {
	return func() ([]effects.Effect, error) {
		var es []effects.Effect
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || p == root || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			info, err := d.Info()
			if err != nil {
				return err
			}
			es = append(es, effects.Effect{Kind: effects.Add, Path: filepath.ToSlash(rel), Size: info.Size(), NewType: effects.TypeFile})
			return nil
		})
		effects.Sort(es)
		return es, err
	}
}

type harness struct {
	c      *Client
	copy   string
	steps  *lockedBuffer
	usage  *lockedBuffer
	mu     sync.Mutex
	events []Event
}

func (h *harness) eventsOf(typ EventType) []Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []Event
	for _, e := range h.events {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func (h *harness) text() string {
	var s strings.Builder
	for _, e := range h.eventsOf(EventText) {
		s.WriteString(e.Text)
	}
	return s.String()
}

func startPeer(t *testing.T, script string, mod func(*Options)) *harness {
	t.Helper()
	dir := t.TempDir()
	copyDir := filepath.Join(dir, "copy")
	if err := os.Mkdir(copyDir, 0o755); err != nil {
		t.Fatal(err)
	}
	h := &harness{copy: copyDir, steps: &lockedBuffer{}, usage: &lockedBuffer{}}
	o := Options{
		Runner: runner.Direct{},
		Spec: runner.Spec{
			Args: []string{os.Args[0], "-test.run=^$"},
			Env:  append(os.Environ(), "GO_WANT_HELPER_PROCESS=1", "ACP_PEER="+script),
		},
		Copy:        copyDir,
		Effects:     walkEffects(copyDir),
		Steps:       h.steps,
		Usage:       h.usage,
		CancelGrace: 2 * time.Second,
		OnEvent: func(e Event) {
			h.mu.Lock()
			h.events = append(h.events, e)
			h.mu.Unlock()
		},
	}
	if mod != nil {
		mod(&o)
	}
	c, err := Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	h.c = c
	t.Cleanup(func() { c.Stop() })
	return h
}

func (h *harness) open(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	if _, err := h.c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := h.c.NewSession(ctx); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond until it holds or the test's patience ends; it never
// measures time, only gives late messages a chance to arrive.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	// The bound only ends a broken run; a loaded machine may take seconds.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("never happened: %s", what)
}

func TestClientBasicTurn(t *testing.T) {
	t.Parallel()
	h := startPeer(t, "basic", nil)
	info, err := h.c.Initialize(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "scripted" || len(info.AuthMethods) != 2 || info.AuthMethods[1].Type != "quantum-handshake" || len(info.AuthMethods[1].Raw) == 0 {
		t.Errorf("agent info %+v", info)
	}
	if _, err := h.c.NewSession(context.Background()); err != nil {
		t.Fatal(err)
	}
	res, err := h.c.Prompt(context.Background(), "write notes")
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != "end_turn" {
		t.Errorf("stop reason %q", res.StopReason)
	}
	b, err := os.ReadFile(filepath.Join(h.copy, "notes.md"))
	if err != nil || string(b) != "# notes\n" {
		t.Fatalf("notes.md in the copy: %q, %v", b, err)
	}
	waitFor(t, "late text after the prompt's answer", func() bool { return strings.Contains(h.text(), "late words") })
	if got := h.text(); !strings.HasPrefix(got, "hello ") || strings.Contains(got, "write failed") {
		t.Errorf("text %q", got)
	}
	waitFor(t, "the plan sent after the answer", func() bool { return len(h.eventsOf(EventPlan)) == 1 })
	steps := h.steps.lines(t)
	if len(steps) != 2 {
		t.Fatalf("steps.jsonl has %d lines, want the tool call and the unknown kind: %v", len(steps), steps)
	}
	tool := steps[0]
	if tool["id"] != "t1" || tool["title"] != "Write notes" || tool["kind"] != "edit" || tool["status"] != "completed" {
		t.Errorf("tool step %v", tool)
	}
	if eff, _ := json.Marshal(tool["effects"]); !strings.Contains(string(eff), `"path":"notes.md"`) || !strings.Contains(string(eff), `"kind":"add"`) {
		t.Errorf("the step does not show what it changed: %s", eff)
	}
	if w, _ := json.Marshal(tool["wrote"]); string(w) != `["notes.md"]` {
		t.Errorf("wrote %s", w)
	}
	raw := steps[1]
	if raw["update"] != "brand_new_kind" || raw["status"] != "raw" || !strings.Contains(mustJSON(raw["raw"]), `"payload"`) {
		t.Errorf("the unknown kind was not kept whole: %v", raw)
	}
	if len(h.eventsOf(EventNotice)) != 1 {
		t.Errorf("the non-json line was not reported: %v", h.eventsOf(EventNotice))
	}
	infoEvents := h.eventsOf(EventInfo)
	if len(infoEvents) == 0 || infoEvents[0].Text != "_vendor/telemetry" {
		t.Errorf("the _vendor notification was not kept: %v", infoEvents)
	}
	usage := h.usage.lines(t)
	if len(usage) != 2 || usage[0]["source"] != "usage_update" || usage[0]["used"] != float64(1200) || usage[1]["source"] != "prompt" || !strings.Contains(mustJSON(usage[1]["tokens"]), `"totalTokens":30`) {
		t.Errorf("usage.jsonl %v", usage)
	}
	waitFor(t, "the late tool call", func() bool { return len(h.eventsOf(EventStepStart)) == 2 })
	if err := h.c.Stop(); err != nil {
		t.Fatal(err)
	}
	if steps := h.steps.lines(t); len(steps) != 3 || steps[2]["id"] != "late" || steps[2]["status"] != "unfinished" || steps[2]["title"] != "Late call" {
		t.Errorf("a tool call opened after the answer was not kept at stop: %v", steps)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestClientOutOfOrderUpdates(t *testing.T) {
	t.Parallel()
	h := startPeer(t, "outoforder", nil)
	h.open(t)
	if _, err := h.c.Prompt(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	if err := h.c.Stop(); err != nil {
		t.Fatal(err)
	}
	steps := h.steps.lines(t)
	if len(steps) != 2 {
		t.Fatalf("steps %v", steps)
	}
	byID := map[string]map[string]any{}
	for _, s := range steps {
		byID[s["id"].(string)] = s
	}
	if s := byID["t9"]; s["title"] != "Run tests" || s["kind"] != "execute" || s["status"] != "failed" || s["command"] != "go test" {
		t.Errorf("an update before its tool call was misfiled: %v", s)
	}
	if s := byID["t8"]; s["status"] != "unfinished" {
		t.Errorf("a step left open at the turn's end: %v", s)
	}
	if len(h.eventsOf(EventNotice)) != 1 {
		t.Errorf("an answer to no request of ours went unreported")
	}
}

func TestClientCancel(t *testing.T) {
	t.Parallel()
	h := startPeer(t, "cancel", nil)
	h.open(t)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		waitFor(t, "the long step", func() bool { return len(h.eventsOf(EventStepStart)) > 0 })
		cancel()
	}()
	res, err := h.c.Prompt(ctx, "think")
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != "cancelled" {
		t.Errorf("stop reason %q", res.StopReason)
	}
	if s := h.steps.lines(t); len(s) != 1 || s[0]["status"] != "failed" {
		t.Errorf("steps %v", s)
	}
}

func TestClientStopKillsTree(t *testing.T) {
	t.Parallel()
	h := startPeer(t, "deaf", func(o *Options) { o.CancelGrace = 300 * time.Millisecond })
	h.open(t)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		waitFor(t, "the child's pid", func() bool { return strings.Contains(h.text(), "child ") })
		cancel()
	}()
	_, err := h.c.Prompt(ctx, "go")
	if err == nil || !strings.Contains(err.Error(), "did not end its turn") {
		t.Fatalf("a deaf agent's cancelled turn: %v", err)
	}
	pid, _ := strconv.Atoi(strings.TrimPrefix(h.text(), "child "))
	if pid <= 0 {
		t.Fatalf("no child pid in %q", h.text())
	}
	select {
	case <-h.c.Exited():
	default:
		t.Fatal("the agent still runs after Stop")
	}
	waitFor(t, "the agent's child to be gone", func() bool {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		return err != nil || strings.Contains(string(b), ") Z ")
	})
	if err := syscall.Kill(pid, 0); err == nil {
		if b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); !strings.Contains(string(b), ") Z ") {
			t.Errorf("the agent's child %d outlived it", pid)
		}
	}
}

func TestClientErrors(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		script string
		check  func(t *testing.T, h *harness)
	}{
		"prompt answered with an error": {"error", func(t *testing.T, h *harness) {
			h.open(t)
			_, err := h.c.Prompt(context.Background(), "x")
			var rerr *RPCError
			if !errors.As(err, &rerr) || rerr.Code != -32603 || !strings.Contains(err.Error(), "model overloaded") {
				t.Errorf("error %v", err)
			}
		}},
		"agent dies mid-turn": {"die", func(t *testing.T, h *harness) {
			h.open(t)
			_, err := h.c.Prompt(context.Background(), "x")
			if !errors.Is(err, ErrAgentExited) || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "model client crashed") {
				t.Errorf("error %v", err)
			}
			if _, err := h.c.Prompt(context.Background(), "again"); !errors.Is(err, ErrAgentExited) {
				t.Errorf("a prompt to a dead agent: %v", err)
			}
		}},
		"agent wants a login": {"auth", func(t *testing.T, h *harness) {
			if _, err := h.c.Initialize(context.Background()); err != nil {
				t.Fatal(err)
			}
			_, err := h.c.NewSession(context.Background())
			var rerr *RPCError
			if !errors.As(err, &rerr) || rerr.Code != CodeAuthRequired || !strings.Contains(err.Error(), "log in to it once outside kule") {
				t.Errorf("error %v", err)
			}
			if err := h.c.Authenticate(context.Background(), "oauth", nil); err != nil {
				t.Fatal(err)
			}
			if id, err := h.c.NewSession(context.Background()); err != nil || id != "after-auth" {
				t.Errorf("session after authenticating: %q %v", id, err)
			}
		}},
		"other protocol version": {"oldversion", func(t *testing.T, h *harness) {
			if _, err := h.c.Initialize(context.Background()); !errors.Is(err, ErrProtocol) {
				t.Errorf("error %v", err)
			}
		}},
		"command that does not exist": {"", func(t *testing.T, h *harness) {
			_, err := h.c.Initialize(context.Background())
			if !errors.Is(err, ErrAgentExited) || !strings.Contains(err.Error(), "could not start") {
				t.Errorf("error %v", err)
			}
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var mod func(*Options)
			if tc.script == "" {
				mod = func(o *Options) { o.Spec.Args = []string{"/nonexistent/agent"} }
			}
			tc.check(t, startPeer(t, tc.script, mod))
		})
	}
}

func TestClientServesFilesInsideTheCopy(t *testing.T) {
	t.Parallel()
	h := startPeer(t, "fs", nil)
	parent := filepath.Dir(h.copy)
	os.WriteFile(filepath.Join(parent, "secret.txt"), []byte("secret"), 0o600)
	os.WriteFile(filepath.Join(h.copy, "a.txt"), []byte("1\n2\n3\n4\n"), 0o644)
	os.Symlink(filepath.Join(parent, "secret.txt"), filepath.Join(h.copy, "escape"))
	h.open(t)
	if _, err := h.c.Prompt(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	var r map[string]struct {
		Result json.RawMessage `json:"result"`
		Error  *RPCError       `json:"error"`
	}
	if err := json.Unmarshal([]byte(h.text()), &r); err != nil {
		t.Fatalf("peer's results %q: %v", h.text(), err)
	}
	refused := func(name string, code int) {
		t.Helper()
		if r[name].Error == nil || r[name].Error.Code != code {
			t.Errorf("%s: want error %d, got %s / %+v", name, code, r[name].Result, r[name].Error)
		}
	}
	refused("outside", CodeInvalidParams)
	refused("dotdot", CodeInvalidParams)
	refused("relative", CodeInvalidParams)
	refused("missing", CodeNotFound)
	refused("link", CodeInvalidParams)
	refused("writelink", CodeInvalidParams)
	refused("writeout", CodeInvalidParams)
	refused("termout", CodeInvalidParams)
	refused("gone", CodeInvalidParams)
	refused("unknown", CodeMethodNotFound)
	if b, _ := os.ReadFile(filepath.Join(parent, "secret.txt")); string(b) != "secret" {
		t.Errorf("the file outside the copy was changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(parent, "dropped.txt")); err == nil {
		t.Errorf("a file was written outside the copy")
	}
	if string(r["lines"].Result) != `{"content":"2\n3\n"}` {
		t.Errorf("lines: %s", r["lines"].Result)
	}
	if b, _ := os.ReadFile(filepath.Join(h.copy, "d/e/f.txt")); string(b) != "deep" {
		t.Errorf("nested write: %q", b)
	}
	if string(r["wait"].Result) != `{"exitCode":4,"signal":null}` {
		t.Errorf("wait: %s", r["wait"].Result)
	}
	var out terminalOutputResult
	json.Unmarshal(r["output"].Result, &out)
	if !strings.Contains(out.Output, "out") || !strings.Contains(out.Output, "err") || out.ExitStatus == nil || *out.ExitStatus.ExitCode != 4 {
		t.Errorf("output: %s", r["output"].Result)
	}
	if b, _ := os.ReadFile(filepath.Join(h.copy, "made.txt")); string(b) != "hi\n" {
		t.Errorf("the terminal's command did not run in the copy: %q", b)
	}
}

func TestClientPermissions(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		ask  AskFunc
		want string // the peer's results
		by   string
	}{
		"default allow_once, never allow_always": {nil,
			`{"full":{"outcome":{"optionId":"once","outcome":"selected"}},"noonce":{"outcome":{"optionId":"no","outcome":"selected"}}}`, "default"},
		"the person refuses": {func(_ context.Context, q Question) (string, error) {
			for _, o := range q.Options {
				if o.Kind == "allow_always" {
					return "", errors.New("allow_always offered to the person")
				}
			}
			if q.Command != "rm -rf build" {
				return "", errors.New("question without the command: " + q.Command)
			}
			return "no", nil
		}, `{"full":{"outcome":{"optionId":"no","outcome":"selected"}},"noonce":{"outcome":{"optionId":"no","outcome":"selected"}}}`, "person"},
		"the person picks what was not offered": {func(context.Context, Question) (string, error) { return "always", nil },
			`{"full":{"outcome":{"optionId":"no","outcome":"selected"}},"noonce":{"outcome":{"optionId":"no","outcome":"selected"}}}`, "person"},
		// Automatic answers say who or what answered, never "person".
		"nobody answers (stdin closed)": {func(context.Context, Question) (string, error) { return "", io.EOF },
			`{"full":{"outcome":{"optionId":"no","outcome":"selected"}},"noonce":{"outcome":{"optionId":"no","outcome":"selected"}}}`, "no answer"},
		"the wait runs out": {func(context.Context, Question) (string, error) { return "", &Answered{Option: "no", By: "timeout"} },
			`{"full":{"outcome":{"optionId":"no","outcome":"selected"}},"noonce":{"outcome":{"optionId":"no","outcome":"selected"}}}`, "timeout"},
		"a remembered rule answers": {func(context.Context, Question) (string, error) { return "", &Answered{Option: "once", By: "rule"} },
			`{"full":{"outcome":{"optionId":"once","outcome":"selected"}},"noonce":{"outcome":{"optionId":"no","outcome":"selected"}}}`, "rule"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := startPeer(t, "permission", func(o *Options) { o.Ask = tc.ask })
			h.open(t)
			if _, err := h.c.Prompt(context.Background(), "go"); err != nil {
				t.Fatal(err)
			}
			if h.text() != tc.want {
				t.Errorf("answers\n got %s\nwant %s", h.text(), tc.want)
			}
			steps := h.steps.lines(t)
			if len(steps) != 2 {
				t.Fatalf("steps %v", steps)
			}
			for _, s := range steps {
				perm, _ := s["permission"].([]any)
				if len(perm) != 1 || perm[0].(map[string]any)["by"] != tc.by || perm[0].(map[string]any)["chosen"] == "always" {
					t.Errorf("permission not recorded on step %v: %v", s["id"], perm)
				}
			}
		})
	}
}

func TestClientContinueSession(t *testing.T) {
	t.Parallel()
	for _, script := range []string{"load", "resume"} {
		t.Run(script, func(t *testing.T) {
			t.Parallel()
			// The earlier run recorded the call the agent replays.
			h := startPeer(t, script, func(o *Options) {
				o.Earlier = []Step{{N: 1, Session: "sess-old", ID: "old", Title: "old call", Status: "completed"}}
			})
			if _, err := h.c.Initialize(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := h.c.ContinueSession(context.Background(), "sess-old"); err != nil {
				t.Fatal(err)
			}
			if _, err := h.c.Prompt(context.Background(), "again"); err != nil {
				t.Fatal(err)
			}
			if h.text() != "continued sess-old" {
				t.Errorf("text %q", h.text())
			}
			if s := h.steps.lines(t); len(s) != 0 {
				t.Errorf("the replayed conversation was recorded again: %v", s)
			}
		})
	}
	h := startPeer(t, "basic", nil)
	h.c.Initialize(context.Background())
	if err := h.c.ContinueSession(context.Background(), "x"); !errors.Is(err, ErrNotSupported) {
		t.Errorf("continue on an agent without load: %v", err)
	}
}

// TestMCPServersOfferedInSessionNew: the MCP servers the caller offers
// reach the agent in session/new, in ACP's stdio shape; none offered is an
// empty list, never null.
func TestMCPServersOfferedInSessionNew(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		offer []MCPServer
		want  string
	}{
		{nil, `[]`},
		{[]MCPServer{{Name: "search", Command: "search-mcp", Args: []string{"--stdio"}}}, `[{"args":["--stdio"],"command":"search-mcp","env":[],"name":"search"}]`},
	} {
		h := startPeer(t, "mcp", func(o *Options) { o.MCPServers = tc.offer })
		h.open(t)
		if _, err := h.c.Prompt(context.Background(), "what were you offered?"); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(h.copy, "offered.json"))
		if err != nil || string(b) != tc.want {
			t.Fatalf("the agent was offered %s (%v); want %s", b, err, tc.want)
		}
	}
}
