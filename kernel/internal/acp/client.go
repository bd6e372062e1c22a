package acp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/kulehq/kule/kernel/internal/runner"
)

// AskFunc puts a permission question to the person. It returns the optionId
// chosen, or "" to answer "cancelled". It never sees allow_always options:
// Kule does not let an agent keep a permission past one call.
type AskFunc func(ctx context.Context, q Question) (string, error)

// Answered is the error an AskFunc returns when no person gave the
// answer: a wait that ran out, a remembered rule, a closed stdin. Option
// is the answer given (an optionId; "" refuses), By says who or what gave
// it ("timeout", "rule", "no answer: stdin closed"), and the step records
// By instead of "person".
type Answered struct {
	Option string
	By     string
}

func (a *Answered) Error() string { return "answered by " + a.By + ", not by a person" }

// Question is a permission question as the person sees it.
type Question struct {
	Title    string
	Kind     string
	Command  string
	Paths    []string
	Options  []PermissionOption
	ToolCall json.RawMessage
}

// Options configure a Client.
type Options struct {
	Runner runner.Runner
	// Spec is the agent's command: Args, Env, Task and the sandbox settings.
	// Stdin, Stdout and Stderr are set by Start; Dir defaults to Copy.
	Spec runner.Spec
	// Copy is the task's copy on this machine; Cwd is the same directory as
	// the agent sees it (equal to Copy unless the sandbox mounts it
	// elsewhere). fs/* and terminal/* never reach outside it.
	Copy, Cwd string
	// TerminalSpec is the base of every terminal/create command (Task,
	// Env, sandbox settings); zero means Spec without the agent's own Args.
	TerminalSpec *runner.Spec

	Effects EffectsFunc
	Ask     AskFunc     // nil: every question is answered allow_once (or the mildest refusal when none is offered)
	OnEvent func(Event) // streamed as the turn runs; must not block long
	Steps   io.Writer   // steps.jsonl
	Usage   io.Writer   // usage.jsonl
	Stderr  io.Writer   // the agent's stderr, besides the tail kept for errors

	// FirstStep is the number of steps already in steps.jsonl: this run's
	// steps are numbered after them.
	FirstStep int
	// Earlier are the steps already in steps.jsonl (ReadSteps): a loaded
	// session's replay of one of them is not recorded again.
	Earlier []Step

	ClientName, ClientVersion string
	// MCPServers are offered to the agent when a session opens or
	// continues. The caller decides which may be: Kule offers only the MCP
	// servers of approved extensions whose own approval was given.
	MCPServers []MCPServer
	// CancelGrace is how long a cancelled turn may take to end, and how long
	// the agent may take to exit once its stdin is closed. Default 5s.
	CancelGrace time.Duration
}

// Client is one running agent and its session.
type Client struct {
	opts  Options
	conn  *Conn
	rec   *recorder
	terms *terminals
	files files

	stdin  io.WriteCloser
	marker string
	kill   context.CancelFunc
	exited chan struct{}
	exit   int
	runErr error
	stderr *tailBuffer

	mu        sync.Mutex
	session   string
	cancelled bool
	turn      bool
	turns     int
	info      AgentInfo
	stopOnce  sync.Once
}

// Start starts the agent through the runner and connects to its stdio.
// Nothing is sent yet: call Initialize.
func Start(ctx context.Context, o Options) (*Client, error) {
	if o.Runner == nil {
		return nil, errors.New("acp: start: no runner")
	}
	if len(o.Spec.Args) == 0 {
		return nil, fmt.Errorf("acp: start: %w", runner.ErrNoCommand)
	}
	if o.Cwd == "" {
		o.Cwd = o.Copy
	}
	if o.CancelGrace <= 0 {
		o.CancelGrace = 5 * time.Second
	}
	if o.ClientName == "" {
		o.ClientName = "kule"
	}
	if o.ClientVersion == "" {
		o.ClientVersion = "0"
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("acp: start: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("acp: start: %w", err)
	}
	c := &Client{opts: o, stdin: inW, marker: newMarker(), exited: make(chan struct{}), stderr: &tailBuffer{limit: 8 << 10}}
	c.files = files{cwd: o.Cwd, copy: o.Copy}
	c.rec = &recorder{open: map[string]*Step{}, steps: o.Steps, usage: o.Usage, effects: o.Effects, emit: o.OnEvent, now: time.Now, n: o.FirstStep, earlier: o.Earlier}
	tbase := o.Spec
	if o.TerminalSpec != nil {
		tbase = *o.TerminalSpec
	}
	tbase.Args, tbase.Stdin, tbase.Stdout, tbase.Stderr = nil, nil, nil, nil
	c.terms = &terminals{run: o.Runner, base: tbase, files: c.files}

	spec := o.Spec
	if spec.Dir == "" {
		spec.Dir = o.Copy
	}
	spec.Env = append(append([]string(nil), o.Spec.Env...), markerVar+"="+c.marker)
	spec.Stdin, spec.Stdout = inR, outW
	var errw io.Writer = c.stderr
	if o.Stderr != nil {
		errw = io.MultiWriter(c.stderr, o.Stderr)
	}
	spec.Stderr = errw
	rctx, kill := context.WithCancel(context.WithoutCancel(ctx))
	c.kill = kill
	go func() {
		c.exit, c.runErr = o.Runner.Run(rctx, spec)
		// The agent is gone: its pipe ends in this process are the last
		// ones, so closing them lets the reader see the end.
		inR.Close()
		outW.Close()
		close(c.exited)
	}()
	c.conn = NewConn(outR, inW, c, c.connEnded)
	return c, nil
}

// connEnded turns the end of the agent's stdout into an error that says why.
func (c *Client) connEnded(err error) error {
	select {
	case <-c.exited:
	case <-time.After(2 * time.Second):
		return fmt.Errorf("%w: the agent closed its output but is still running", ErrClosed)
	}
	tail, _ := c.stderr.String()
	tail = strings.TrimSpace(tail)
	if len(tail) > 2000 {
		tail = "…" + tail[len(tail)-2000:]
	}
	msg := ""
	switch {
	case c.runErr != nil:
		msg = fmt.Sprintf("it could not start: %v", c.runErr)
	default:
		msg = fmt.Sprintf("exit status %d", c.exit)
	}
	if tail != "" {
		msg += "; its last words: " + tail
	}
	return fmt.Errorf("%w (%s)", ErrAgentExited, msg)
}

// Info is what initialize returned.
func (c *Client) Info() AgentInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.info
}

// SessionID is the open session, or "".
func (c *Client) SessionID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session
}

// Initialize negotiates protocol version 1 and tells the agent what Kule
// serves: fs.readTextFile, fs.writeTextFile and terminal.
func (c *Client) Initialize(ctx context.Context) (AgentInfo, error) {
	var res initializeResult
	var raw json.RawMessage
	err := c.conn.Call(ctx, "initialize", initializeParams{
		ProtocolVersion:    ProtocolVersion,
		ClientCapabilities: clientCaps{FS: fsCaps{ReadTextFile: true, WriteTextFile: true}, Terminal: true},
		ClientInfo:         implementation{Name: c.opts.ClientName, Title: "Kule", Version: c.opts.ClientVersion},
	}, &raw)
	if err != nil {
		return AgentInfo{}, fmt.Errorf("acp: initialize: %w", err)
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return AgentInfo{}, fmt.Errorf("acp: initialize: the agent's answer does not decode: %w", err)
	}
	info := AgentInfo{
		ProtocolVersion: res.ProtocolVersion,
		LoadSession:     res.AgentCapabilities.LoadSession,
		ResumeSession:   len(res.AgentCapabilities.SessionCapabilities.Resume) > 0 && string(res.AgentCapabilities.SessionCapabilities.Resume) != "null",
		Image:           res.AgentCapabilities.PromptCapabilities.Image,
		Raw:             raw,
	}
	if res.AgentInfo != nil {
		info.Name, info.Version = res.AgentInfo.Name, res.AgentInfo.Version
	}
	for _, m := range res.AuthMethods {
		var am AuthMethod
		_ = json.Unmarshal(m, &am) // an unknown shape keeps only Raw
		am.Raw = m
		info.AuthMethods = append(info.AuthMethods, am)
	}
	c.mu.Lock()
	c.info = info
	c.mu.Unlock()
	if res.ProtocolVersion != ProtocolVersion {
		return info, fmt.Errorf("%w: it answered version %d, Kule speaks %d", ErrProtocol, res.ProtocolVersion, ProtocolVersion)
	}
	return info, nil
}

// Authenticate calls the agent's authenticate with one of the methods it
// offered (AgentInfo.AuthMethods); meta goes as _meta (a gateway's settings).
func (c *Client) Authenticate(ctx context.Context, methodID string, meta map[string]any) error {
	p := map[string]any{"methodId": methodID}
	if meta != nil {
		p["_meta"] = meta
	}
	if err := c.conn.Call(ctx, "authenticate", p, nil); err != nil {
		return fmt.Errorf("acp: authenticate with %s: %w", methodID, err)
	}
	return nil
}

// mcpServers are the MCP servers the session is offered: Options'
// MCPServers, never nil (the field is required), each with its lists set.
func (c *Client) mcpServers() []MCPServer {
	out := make([]MCPServer, 0, len(c.opts.MCPServers))
	for _, m := range c.opts.MCPServers {
		if m.Args == nil {
			m.Args = []string{}
		}
		if m.Env == nil {
			m.Env = []EnvEntry{}
		}
		out = append(out, m)
	}
	return out
}

// NewSession opens a session whose working directory is the copy.
func (c *Client) NewSession(ctx context.Context) (string, error) {
	var res newSessionResult
	if err := c.conn.Call(ctx, "session/new", newSessionParams{Cwd: c.opts.Cwd, McpServers: c.mcpServers()}, &res); err != nil {
		var rerr *RPCError
		if errors.As(err, &rerr) && rerr.Code == CodeAuthRequired {
			return "", fmt.Errorf("acp: new session: the agent needs a login (%w): set its key (kule agents show NAME names it) or log in to it once outside kule; nothing was changed", err)
		}
		return "", fmt.Errorf("acp: new session: %w", err)
	}
	if res.SessionID == "" {
		return "", fmt.Errorf("acp: new session: the agent returned no session id")
	}
	c.mu.Lock()
	c.session = res.SessionID
	c.mu.Unlock()
	return res.SessionID, nil
}

// SetMode switches the session's mode (session/set_mode), one of the modes
// the agent listed when the session opened.
func (c *Client) SetMode(ctx context.Context, modeID string) error {
	sid := c.SessionID()
	if sid == "" {
		return ErrNoSession
	}
	if err := c.conn.Call(ctx, "session/set_mode", map[string]string{"sessionId": sid, "modeId": modeID}, nil); err != nil {
		return fmt.Errorf("acp: set mode %s: %w", modeID, err)
	}
	return nil
}

// ContinueSession reopens an earlier session: session/resume when the agent
// offers it, else session/load (whose replay of the conversation is not
// recorded again). ErrNotSupported when the agent offers neither.
func (c *Client) ContinueSession(ctx context.Context, id string) error {
	info := c.Info()
	p := loadSessionParams{SessionID: id, Cwd: c.opts.Cwd, McpServers: c.mcpServers()}
	switch {
	case info.ResumeSession:
		if err := c.conn.Call(ctx, "session/resume", p, nil); err != nil {
			return fmt.Errorf("acp: resume session %s: %w", id, err)
		}
	case info.LoadSession:
		c.rec.mu.Lock()
		c.rec.mute = true
		c.rec.mu.Unlock()
		// The agent replays the conversation as updates; some (Gemini
		// CLI) go on after answering the load. None of it is new work:
		// nothing is recorded until the next prompt is sent (Prompt
		// lifts the mute).
		err := c.conn.Call(ctx, "session/load", p, nil)
		c.rec.mu.Lock()
		c.rec.loaded = id
		c.rec.mu.Unlock()
		if err != nil {
			c.rec.mu.Lock()
			c.rec.mute = false
			c.rec.mu.Unlock()
			return fmt.Errorf("acp: load session %s: %w", id, err)
		}
	default:
		return fmt.Errorf("acp: continue session: %w", ErrNotSupported)
	}
	c.mu.Lock()
	c.session = id
	c.mu.Unlock()
	return nil
}

// promptBlocks is the text, then, when the agent takes images, up to
// MaxImages of them, with the text saying which places they show.
func promptBlocks(text string, images []Image, takesImages bool) []contentBlock {
	if !takesImages || len(images) == 0 {
		return []contentBlock{{Type: "text", Text: text}}
	}
	images = images[:min(len(images), MaxImages)]
	names := make([]string, len(images))
	for i, im := range images {
		names[i] = im.Name
	}
	text = strings.TrimRight(text, "\n") + "\n\nSent as pictures after this text, in this order: " + strings.Join(names, "; ") + "."
	blocks := []contentBlock{{Type: "text", Text: text}}
	for _, im := range images {
		blocks = append(blocks, contentBlock{Type: "image", MimeType: "image/png", Data: base64.StdEncoding.EncodeToString(im.PNG)})
	}
	return blocks
}

// Prompt sends one turn and waits for its end. When ctx is cancelled the
// turn is cancelled (session/cancel) and Prompt waits CancelGrace for the
// agent's "cancelled"; an agent that does not answer in time is stopped.
// Updates that arrive after the answer are still recorded.
func (c *Client) Prompt(ctx context.Context, text string) (PromptResult, error) {
	return c.PromptWith(ctx, text, nil)
}

// PromptWith is Prompt with images. An agent whose initialize said
// promptCapabilities.image gets the first MaxImages of them as image
// content blocks after the text, and the text ends by naming them; any
// other agent gets the text alone (which names the places already).
func (c *Client) PromptWith(ctx context.Context, text string, images []Image) (PromptResult, error) {
	blocks := promptBlocks(text, images, c.Info().Image)
	c.mu.Lock()
	sid := c.session
	if sid == "" {
		c.mu.Unlock()
		return PromptResult{}, ErrNoSession
	}
	c.turn, c.cancelled = true, false
	c.turns++
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.turn = false
		c.mu.Unlock()
	}()
	c.rec.mu.Lock()
	c.rec.mute = false // a loaded session's replay ends where the new turn begins
	c.rec.mu.Unlock()
	c.rec.turnStart(sid)
	defer c.rec.turnEnd(sid, false)
	ch, err := c.conn.Send("session/prompt", promptParams{SessionID: sid, Prompt: blocks})
	if err != nil {
		return PromptResult{}, fmt.Errorf("acp: prompt: %w", err)
	}
	var grace <-chan time.Time
	done := ctx.Done()
	for {
		select {
		case m, ok := <-ch:
			var res PromptResult
			if err := c.conn.finish(m, ok, &res); err != nil {
				if c.isCancelled() {
					return PromptResult{StopReason: "cancelled"}, fmt.Errorf("acp: prompt cancelled: %w", err)
				}
				return PromptResult{}, fmt.Errorf("acp: prompt: %w", err)
			}
			c.rec.promptUsage(sid, res.Usage, res.Meta)
			return res, nil
		case <-done:
			done = nil
			_ = c.Cancel()
			grace = time.After(c.opts.CancelGrace)
		case <-grace:
			_ = c.Stop()
			return PromptResult{StopReason: "cancelled"}, fmt.Errorf("acp: prompt: the agent did not end its turn within %s of being cancelled; it was stopped", c.opts.CancelGrace)
		}
	}
}

func (c *Client) isCancelled() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cancelled
}

// Cancel asks the agent to end the running turn (session/cancel). Permission
// questions still open are answered "cancelled".
func (c *Client) Cancel() error {
	c.mu.Lock()
	sid := c.session
	c.cancelled = true
	c.mu.Unlock()
	if sid == "" {
		return ErrNoSession
	}
	return c.conn.Notify("session/cancel", cancelParams{SessionID: sid})
}

// Stop ends the agent: session/cancel if a turn runs, then its stdin is
// closed, it gets CancelGrace to exit, and then its whole process tree is
// killed. Terminals it opened are killed too. Stop returns once the agent's
// process has ended.
func (c *Client) Stop() error {
	c.stopOnce.Do(func() {
		c.mu.Lock()
		turn := c.turn
		c.mu.Unlock()
		if turn {
			_ = c.Cancel()
		}
		c.stdin.Close()
		select {
		case <-c.exited:
		case <-time.After(c.opts.CancelGrace):
		}
		c.kill()
		killTree(c.marker)
		<-c.exited
		killTree(c.marker)
		c.terms.closeAll()
		<-c.conn.Done()
		// Tool calls the agent opened after its last answer are kept too.
		c.mu.Lock()
		sid, turns := c.session, c.turns
		c.mu.Unlock()
		if turns > 0 {
			c.rec.turnEnd(sid, true)
		}
	})
	c.rec.mu.Lock()
	defer c.rec.mu.Unlock()
	return c.rec.werr
}

// Exited is closed when the agent's process has ended.
func (c *Client) Exited() <-chan struct{} { return c.exited }

// Handler: what the agent sends.

// HandleNotification implements Handler.
func (c *Client) HandleNotification(method string, params json.RawMessage) {
	switch method {
	case "session/update":
		var n sessionNotification
		if err := json.Unmarshal(params, &n); err != nil || len(n.Update) == 0 {
			c.rec.rawStep("", "", params)
			return
		}
		c.rec.update(n.SessionID, n.Update)
	default:
		// Unknown notifications (extension "_…" ones among them) are kept
		// for the person, never acted on.
		c.rec.send(Event{Type: EventInfo, Text: method, Raw: params})
	}
}

// HandleBadLine implements Handler.
func (c *Client) HandleBadLine(line []byte, err error) {
	s := string(line)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	c.rec.send(Event{Type: EventNotice, Text: fmt.Sprintf("%v: %q", err, strings.TrimSpace(s))})
}

func decode[T any](params json.RawMessage) (T, *RPCError) {
	var v T
	if err := json.Unmarshal(params, &v); err != nil {
		return v, &RPCError{Code: CodeInvalidParams, Message: "invalid params: " + err.Error()}
	}
	return v, nil
}

// HandleRequest implements Handler.
func (c *Client) HandleRequest(ctx context.Context, method string, params json.RawMessage) (any, *RPCError) {
	switch method {
	case "fs/read_text_file":
		p, rerr := decode[readFileParams](params)
		if rerr != nil {
			return nil, rerr
		}
		return c.files.read(p)
	case "fs/write_text_file":
		p, rerr := decode[writeFileParams](params)
		if rerr != nil {
			return nil, rerr
		}
		rel, rerr := c.files.write(p)
		if rerr != nil {
			return nil, rerr
		}
		c.rec.wrote(rel)
		return struct{}{}, nil
	case "terminal/create":
		p, rerr := decode[createTerminalParams](params)
		if rerr != nil {
			return nil, rerr
		}
		id, rerr := c.terms.create(ctx, p)
		if rerr != nil {
			return nil, rerr
		}
		return map[string]string{"terminalId": id}, nil
	case "terminal/output":
		p, rerr := decode[terminalParams](params)
		if rerr != nil {
			return nil, rerr
		}
		return c.terms.output(p.TerminalID)
	case "terminal/wait_for_exit":
		p, rerr := decode[terminalParams](params)
		if rerr != nil {
			return nil, rerr
		}
		return c.terms.wait(ctx, p.TerminalID)
	case "terminal/kill":
		p, rerr := decode[terminalParams](params)
		if rerr != nil {
			return nil, rerr
		}
		return struct{}{}, c.terms.kill(p.TerminalID)
	case "terminal/release":
		p, rerr := decode[terminalParams](params)
		if rerr != nil {
			return nil, rerr
		}
		return struct{}{}, c.terms.release(p.TerminalID)
	case "session/request_permission":
		p, rerr := decode[permissionParams](params)
		if rerr != nil {
			return nil, rerr
		}
		return c.permission(ctx, p), nil
	}
	return nil, &RPCError{Code: CodeMethodNotFound, Message: "method not found: " + method}
}

// permission answers allow_once unless the person is asked; never
// allow_always. A cancelled turn answers "cancelled".
func (c *Client) permission(ctx context.Context, p permissionParams) permissionResult {
	var f toolCallFields
	_ = json.Unmarshal(p.ToolCall, &f)
	rec := PermissionRecord{Time: time.Now(), Options: p.Options, By: "default", ToolCall: p.ToolCall}
	offer := make([]PermissionOption, 0, len(p.Options))
	for _, o := range p.Options {
		if o.Kind != "allow_always" {
			offer = append(offer, o)
		}
	}
	choose := func(kinds ...string) string {
		for _, k := range kinds {
			for _, o := range offer {
				if o.Kind == k {
					return o.OptionID
				}
			}
		}
		return ""
	}
	chosen := ""
	switch {
	case c.isCancelled():
		rec.Note = "the turn was cancelled"
	case c.opts.Ask != nil:
		rec.By = "person"
		q := Question{Options: offer, ToolCall: p.ToolCall, Paths: nil}
		if f.Title != nil {
			q.Title = *f.Title
		}
		if f.Kind != nil {
			q.Kind = *f.Kind
		}
		q.Command = commandOf(f.RawInput)
		for _, l := range f.Locations {
			q.Paths = append(q.Paths, l.Path)
		}
		id, err := c.opts.Ask(ctx, q)
		var auto *Answered
		switch {
		case errors.As(err, &auto):
			// Answered, but by no person: record who or what did.
			rec.By = auto.By
			chosen = auto.Option
			if chosen != "" && !offered(offer, chosen) {
				rec.Note = "the answer was not among the options: " + chosen
				chosen = choose("reject_once", "reject_always")
			} else if chosen == "" {
				chosen = choose("reject_once", "reject_always")
			}
		case err != nil:
			// Nobody answered (stdin closed, the asker gone): Kule
			// refused, and says so.
			rec.By = "no answer"
			rec.Note = "not answered: " + err.Error()
			chosen = choose("reject_once", "reject_always")
		case id != "" && !offered(offer, id):
			rec.Note = "the person's answer was not among the options: " + id
			chosen = choose("reject_once", "reject_always")
		default:
			chosen = id
		}
	default:
		chosen = choose("allow_once")
		if chosen == "" {
			chosen = choose("reject_once", "reject_always")
			rec.Note = "no allow_once option was offered; Kule never answers allow_always"
		}
	}
	rec.Chosen = chosen
	for _, o := range p.Options {
		if o.OptionID == chosen {
			rec.Kind = o.Kind
		}
	}
	c.rec.permission(p.SessionIDOr(c.SessionID()), f.ToolCallID, rec)
	if chosen == "" {
		return permissionResult{Outcome: permissionOutcome{Outcome: "cancelled"}}
	}
	return permissionResult{Outcome: permissionOutcome{Outcome: "selected", OptionID: chosen}}
}

func offered(opts []PermissionOption, id string) bool {
	for _, o := range opts {
		if o.OptionID == id {
			return true
		}
	}
	return false
}

// SessionIDOr returns the request's session, or def when it names none.
func (p permissionParams) SessionIDOr(def string) string {
	if p.SessionID != "" {
		return p.SessionID
	}
	return def
}

var _ Handler = (*Client)(nil)
