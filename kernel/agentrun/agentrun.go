// Package agentrun runs one agent turn on a task: it checks the agent's
// profile and approval, installs its package, starts the task's proxy with
// the agent's keys, builds the agent's environment and sandbox, starts the
// agent over ACP (initialize, a new or continued session, the prompt) and
// records every tool call as a step and every usage report in usage.jsonl.
//
// The CLI (`kule run`) and the daemon both call Start; what a person reads
// comes back as events (OnEvent) and short lines (Stderr), never printed here.
//
// A run's life:
//  1. Start checks, installs, starts the proxy and the agent, opens the
//     session and sends the prompt; it returns once the turn runs. An error
//     from Start means nothing is left running.
//  2. Cancel asks the agent to end the turn (session/cancel); Stop ends the
//     agent itself. Both may be called from any goroutine, at any time.
//  3. Wait returns when the turn has ended and everything was cleaned up:
//     the agent stopped, the proxy closed, the task unlocked.
package agentrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/internal/acp"
	"github.com/kulehq/kule/kernel/internal/agents"
	"github.com/kulehq/kule/kernel/internal/budget"
	"github.com/kulehq/kule/kernel/internal/effects"
	"github.com/kulehq/kule/kernel/internal/proxy"
	"github.com/kulehq/kule/kernel/internal/runner"
	"github.com/kulehq/kule/kernel/internal/task"
)

// Errors a caller can test for.
var (
	// ErrNoAgent: Options.Agent or Options.Agents is missing.
	ErrNoAgent = errors.New("run: name the agent with --agent (kule agents lists them)")
)

// Options are one run of an agent.
type Options struct {
	Agents *agents.Set // the profiles (built-ins and the person's), as agents.Load reads them
	Agent  string      // the profile's name
	Prompt string
	Fresh  bool // start a new conversation even if the task has one
	// Notes, when set, are given to the agent after the prompt, as Kule's
	// data (recall's notes); the run's record keeps Prompt alone.
	Notes string
	// Pictures go with the prompt as images to an agent whose ACP
	// initialize said it takes them (at most kernel.MaxPictures); others
	// get the prompt's text alone, which names the places already.
	Pictures []kernel.Picture
	// Source says who gave the prompt ("" is the operator; memory's
	// SourceChat a chat user who is not), and Inputs the untrusted inputs
	// it carries: the run's record is untrusted with either.
	Source string
	Inputs []string
	// Conversation is the name the person gave the conversation (kule
	// run --session NAME), kept in the run's record.
	Conversation string
	// Resumes is the memory record of the interrupted run this one
	// resumes (resume.go); 0 none.
	Resumes int64
	// Trial, set by Try, is run instead of the named profile, for at most
	// TrialTime (DefaultTrialTime when 0).
	Trial     *agents.Profile
	TrialTime time.Duration
	// Pids, when above zero, is this run's process limit (kule run --pids),
	// over the task's and the home's.
	Pids int

	// Ask puts a permission question to the person; nil answers allow_once.
	Ask acp.AskFunc
	// OnEvent streams the turn: text, tool calls and their effects,
	// permissions, usage, and notices the person should read. It must not
	// block long.
	OnEvent func(acp.Event)
	// OnUsage is told every line written to usage.jsonl (a usage_update or
	// the prompt's usage), for budgets and costs.
	OnUsage func(acp.Usage)
	// OnBudget is told when the run reaches 80% and 100% of its task's or
	// the daily budget (the text also comes as an EventNotice).
	OnBudget func(budget.Notice)

	// Sandbox is how the agent is isolated (the sandbox by default).
	Sandbox kernel.SandboxOptions
	// Runner, when set, replaces the runner Sandbox picks (tests).
	Runner runner.Runner
	// Proxy, when set, may change the task's proxy config before it starts
	// (tests point its upstream at a stand-in for a vendor's API).
	Proxy func(*proxy.Config)

	// Stderr gets the lines a person reads beside the events: the install,
	// notes on the environment, which agent runs. Nil discards them.
	Stderr io.Writer
	// AgentStderr also gets the agent's own stderr (always kept in the
	// task's agent.log).
	AgentStderr io.Writer

	// PackagesRoot is where npx agents are installed (default
	// agents.PackagesRoot()); HomesRoot is where an own_home agent's home
	// is kept (default agent-homes beside PackagesRoot: outside Kule's
	// home, which the sandbox hides). Getenv reads the person's
	// environment for keys and pass_env (default os.Getenv).
	PackagesRoot string
	HomesRoot    string
	Getenv       func(string) string
	// Home is the person's home as the agent's profile sees it (default
	// the process's home).
	Home string
}

// Run is one running agent turn.
type Run struct {
	Task      *task.Task
	Profile   agents.Profile
	Agent     string // the agent's name and version, as it says them (else the profile's name)
	Continued bool   // the turn continues the task's earlier conversation

	k          *kernel.Kernel
	o          Options
	c          *acp.Client
	px         *proxy.Proxy
	lock       *task.Lock
	files      []io.Closer
	cancelTurn context.CancelFunc
	endRun     context.CancelFunc
	limits     *limitsWatch
	memo       memo       // what the run's record keeps (memory.go)
	startNotes []string   // what the person should read before the turn
	home       *agentHome // an own_home agent's home for the run

	done   chan struct{}
	res    Result
	err    error
	closed sync.Once
}

// Result is how a turn ended.
type Result struct {
	StopReason string         // end_turn, cancelled, max_tokens, ... ("" when the turn failed)
	Status     *kernel.Status // the task after the turn; nil when it could not be read
	StatusErr  error
	Network    []string // where the run connected, one line a host
	StopErr    error    // stopping the agent went wrong (recording its last steps)
	LimitErr   error    // a limit stopped the run
}

// Start runs the agent on t with the prompt; see the package doc. ctx bounds
// the start-up; cancelling it once the turn runs cancels the turn.
//
// Its steps, in order; an error at any step stops there and cleanup undoes
// the steps before it, so nothing is left running:
//  1. profileFor: the profile, checked and approved (or the trial);
//  2. installAgent: its package installed once, its command line;
//  3. holdTask: the task read and locked for the run;
//  4. the agent's own home, and what its profile opens in the sandbox;
//  5. sandboxFor: the runner and the spec the agent starts with;
//  6. startProxy: the task's proxy, with the agent's keys as placeholders;
//  7. agentEnv: the agent's environment, through that proxy;
//  8. acpOptions: the run's files and the ACP client's options;
//  9. the limits, the agent itself, its session (open), then the turn.
func Start(ctx context.Context, k *kernel.Kernel, t *task.Task, o Options) (_ *Run, err error) {
	if (o.Agent == "" && o.Trial == nil) || o.Agents == nil {
		return nil, ErrNoAgent
	}
	o = o.withDefaults()
	errw := o.Stderr
	if errw == nil {
		errw = io.Discard
	}
	p, err := profileFor(k.Store().Root, t, o)
	if err != nil {
		return nil, err
	}
	root, argv, err := installAgent(ctx, p, o.PackagesRoot, errw)
	if err != nil {
		return nil, err
	}
	r := &Run{Task: t, Profile: p, Agent: p.Name, k: k, o: o, done: make(chan struct{})}
	defer func() {
		if err != nil {
			r.cleanup()
		}
	}()
	if err := r.holdTask(ctx); err != nil {
		return nil, err
	}
	ownHome := ""
	if p.OwnHome != "" {
		if r.home, err = r.ownHome(root); err != nil {
			return nil, err
		}
		ownHome = r.home.Dir
	}
	open, openNotes := agents.OpeningsOf(p, o.Agents.Profiles, o.Home, ownHome).Prepare()
	// A home of the task's own lies in the task's caches, which the
	// sandbox opens for writing already (and would refuse as an opening:
	// it is inside Kule's home).
	open.AllowWrite = slices.DeleteFunc(open.AllowWrite, func(w string) bool { return within(w, r.Task.Paths.Dir) })
	if r.home != nil && r.home.Shared != "" && r.home.Shared != r.home.Dir {
		// The homes Kule keeps for agents hold logins made in runs and
		// the settings placed from them: no run reads them.
		open.Hide = append(open.Hide, filepath.Dir(r.home.Shared))
	}
	spec, run, err := r.sandboxFor(open)
	if err != nil {
		return nil, err
	}
	_, direct := run.(runner.Direct)
	keyValue := r.keyLookup()
	runCtx, endRun := context.WithCancel(context.WithoutCancel(ctx))
	r.endRun = endRun
	if err := r.startProxy(runCtx, open, direct, keyValue); err != nil {
		return nil, err
	}
	env, notes := r.agentEnv(spec, ownHome, direct, keyValue)
	for _, n := range append(append(openNotes, r.startNotes...), notes...) {
		fmt.Fprintln(errw, "note:", n)
	}
	ao, err := r.acpOptions(ctx, run)
	if err != nil {
		return nil, err
	}
	spec.Args = argv
	spec.Env = env
	spec.Task = runner.Task{ID: t.ID, Dir: t.Paths.Dir, Copy: t.Paths.Copy, Folder: t.Folder, Tmp: t.Paths.Tmp, Home: t.Paths.Home, KuleDir: k.Store().Root}
	spec.Dir = t.Paths.Copy
	spec.ProxyAddr = r.px.Addr()
	spec.ProxyServe = r.px.Serve // the proxy runs here: a sandbox hands it each connection
	// The turn's cancel exists before the agent does: a budget may cancel
	// it from the first usage report on.
	turnCtx, cancelTurn := context.WithCancel(runCtx)
	r.cancelTurn = cancelTurn
	if err := r.startLimits(runCtx, spec); err != nil {
		return nil, err
	}
	ao.Spec = *spec
	if r.c, err = acp.Start(ctx, ao); err != nil {
		return nil, err
	}
	stopWatch := context.AfterFunc(ctx, cancelTurn)
	if err := r.open(ctx, errw); err != nil {
		stopWatch()
		return nil, err
	}
	r.memoryStart()
	go func() {
		defer stopWatch()
		r.turn(turnCtx)
	}()
	return r, nil
}

// withDefaults fills what the caller may leave out: the person's
// environment and home.
func (o Options) withDefaults() Options {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Home == "" {
		o.Home, _ = os.UserHomeDir()
	}
	return o
}

// profileFor is the profile the run starts: the named one, approved by the
// person at its exact version, or the trial Try made. A profile that does
// not open is recorded in the task (recordOpening) before the error returns.
func profileFor(kuleHome string, t *task.Task, o Options) (agents.Profile, error) {
	set := o.Agents
	if o.Trial != nil {
		// A trial profile opens nothing but its command (Try makes it):
		// it needs no approval, and runs only in an empty task.
		p := *o.Trial
		if err := agents.Validate(p, set.Profiles); err != nil {
			return agents.Profile{}, recordOpening(t, err, o.Stderr)
		}
		return p, nil
	}
	p, err := set.Get(o.Agent)
	if err != nil {
		return agents.Profile{}, recordOpening(t, err, o.Stderr)
	}
	if err := agents.CheckApproved(kuleHome, p); err != nil {
		return agents.Profile{}, err
	}
	return p, nil
}

// installAgent installs the agent's package once into the packages root
// (root, or agents.PackagesRoot when empty) and returns that root and the
// agent's command line.
func installAgent(ctx context.Context, p agents.Profile, root string, errw io.Writer) (string, []string, error) {
	if root == "" {
		var err error
		if root, err = agents.PackagesRoot(); err != nil {
			return "", nil, err
		}
	}
	if pkg, ok, _ := agents.PackageOf(p.Command); ok && pkg.Runner == "npx" && !agents.Installed(root, pkg) {
		fmt.Fprintf(errw, "installing %s@%s once into %s (no install scripts run)…\n", pkg.Name, pkg.Version, root)
	}
	argv, err := agents.Launch(ctx, p, root, true, errw)
	if err != nil {
		return "", nil, err
	}
	return root, argv, nil
}

// holdTask reads the task and takes its lock for the whole run: no commit
// applies a copy the agent is writing. cleanup releases it.
func (r *Run) holdTask(ctx context.Context) error {
	if _, err := r.k.Status(ctx, r.Task); err != nil {
		return err
	}
	lock, err := task.LockFile(r.Task.Paths.Lock)
	if err != nil {
		return err
	}
	// A command cut off before its fold: its changes go into the copy
	// before the agent writes there, or the fold would later put them
	// over the agent's.
	if err := kernel.FoldOverlay(r.Task); err != nil {
		_ = lock.Unlock()
		return err
	}
	// The agent's writes (and Kule's on its behalf) reach the copy with
	// no fold to note them: a status walks the copy until the next walk
	// under the lock begins a new record.
	if err := kernel.ForgetFolds(r.Task); err != nil {
		_ = lock.Unlock()
		return err
	}
	r.lock = lock
	return nil
}

// sandboxFor is the spec the agent starts with — what its profile opens in
// the sandbox (the direct runner ignores it), never the person's whole
// environment — and the runner that starts it: Options.Runner, else the
// sandbox with the run's isolation options. The runner keeps the spec's
// address, so the spec is filled in place until the agent starts.
func (r *Run) sandboxFor(open agents.Openings) (*runner.Spec, runner.Runner, error) {
	spec := &runner.Spec{}
	spec.AllowWrite, spec.Reveal, spec.Hide = open.AllowWrite, open.Reveal, open.Hide
	if r.home != nil {
		spec.ReadOnlyInTask = r.home.ReadOnly
	}
	spec.Network = runner.NetworkProxy
	spec.Env = []string{} // set from the profile (agentEnv)
	run := r.o.Runner
	if run == nil {
		sbo := r.o.Sandbox
		if sbo.Run == "" {
			sbo.Run = "agent " + r.Profile.Name
		}
		var err error
		if run, err = kernel.SandboxRunner(r.k.Store().Root, r.Task, spec, sbo); err != nil {
			return nil, nil, err
		}
	}
	return spec, run, nil
}

// startProxy starts the task's proxy, judged by the policy: the agent's
// profile hosts pass while it runs, registries as the policy says, and each
// key the profile names reaches the agent as a placeholder that the proxy
// swaps for the key on the way to that key's hosts only.
func (r *Run) startProxy(ctx context.Context, open agents.Openings, direct bool, keyValue func(string) key) error {
	p := r.Profile
	var keyNames []string
	for name := range p.Keys {
		keyNames = append(keyNames, name)
	}
	kept, err := placeholders(r.k.Store().Root, p.Name, keyNames)
	if err != nil {
		return err
	}
	var keySecrets []proxy.Secret
	for name, want := range p.Keys {
		k := keyValue(name)
		if k.Value == "" {
			continue
		}
		// A kept secret goes only to the hosts it was kept for, whatever
		// the profile names.
		hosts, refused := keyHosts(k, want)
		if len(refused) > 0 {
			r.startNotes = append(r.startNotes, refusedKeyNote(name, k, refused))
		}
		if len(hosts) > 0 {
			keySecrets = append(keySecrets, proxy.Secret{Name: name, Value: k.Value, Hosts: hosts, Placeholder: kept[name]})
		}
	}
	r.px, err = r.k.StartProxy(ctx, r.Task, kernel.ProxyOptions{Sandboxed: !direct, Agent: p.Name, AgentHosts: open.Hosts, Endpoints: open.Hosts, Secrets: keySecrets, Configure: r.o.Proxy})
	if err != nil {
		return fmt.Errorf("run: the task's proxy: %w (nothing was started)", err)
	}
	return nil
}

// agentEnv is the agent's environment from its profile, with each key as
// its proxy placeholder, and the notes a person should read about it. It
// also gives spec what reaches the agent after the sandbox's filter: the
// proxy's CA bundle, the stored secrets' placeholders and the proxy token.
func (r *Run) agentEnv(spec *runner.Spec, ownHome string, direct bool, keyValue func(string) key) ([]string, []string) {
	p, t := r.Profile, r.Task
	placeholders := map[string]string{}
	for _, kv := range r.px.SecretEnv() {
		k, v, _ := strings.Cut(kv, "=")
		placeholders[k] = v
	}
	env, notes := agents.Environ(p, agents.EnvOptions{
		Getenv: func(k string) string {
			if _, ok := p.Keys[k]; ok {
				return keyValue(k).Value
			}
			return r.o.Getenv(k)
		},
		Home: r.o.Home, OwnHome: ownHome, Tmp: t.Paths.Tmp,
		Placeholder: func(k string) string { return placeholders[k] },
	})
	if direct {
		// Without a sandbox nothing forces the agent through the proxy;
		// the variables make well-behaved tools use it, and the token
		// keeps other local processes off it. The sandbox bridges the
		// proxy into the agent's namespace and sets them itself.
		env = append(env, proxy.ProxyEnv(r.px.Addr(), r.px.Token())...)
	}
	// The CA bundle and the stored secrets' placeholders, as for exec
	// (after the sandbox's filter: they open nothing).
	spec.TaskEnv = append(spec.TaskEnv, r.px.CAEnv()...)
	spec.TaskEnv = append(spec.TaskEnv, r.px.SecretEnv()...)
	spec.ProxyToken = r.px.Token()
	return env, notes
}

// acpOptions opens the run's files in the task (steps, usage and the
// agent's log, closed by cleanup) and returns the ACP client's options for
// run; the caller sets Spec once it is complete.
func (r *Run) acpOptions(ctx context.Context, run runner.Runner) (acp.Options, error) {
	t, k := r.Task, r.k
	stepsF, err := r.appendFile(acp.StepsFile)
	if err != nil {
		return acp.Options{}, err
	}
	usageF, err := r.appendFile(acp.UsageFile)
	if err != nil {
		return acp.Options{}, err
	}
	logF, err := r.appendFile("agent.log")
	if err != nil {
		return acp.Options{}, err
	}
	var agentErr io.Writer = logF
	if r.o.AgentStderr != nil {
		agentErr = io.MultiWriter(logF, r.o.AgentStderr)
	}
	old, _, _ := acp.ReadSteps(filepath.Join(t.Paths.Dir, acp.StepsFile))
	return acp.Options{
		Runner: run,
		Copy:   t.Paths.Copy,
		Effects: func() ([]effects.Effect, error) {
			st, err := k.Status(context.WithoutCancel(ctx), t) // asked for during the turn, whatever ends it
			if err != nil {
				return nil, err
			}
			return st.Effects, nil
		},
		OnEvent: r.event,
		Ask:     r.memoryAsk(r.heldAsk(r.o.Ask)),
		// Stop cancels the turn and kills the agent if it has not ended
		// within stopGrace.
		CancelGrace: stopGrace,
		Steps:       stepsF,
		Usage:       usageF,
		Stderr:      agentErr,
		FirstStep:   len(old),
		Earlier:     old,
		ClientName:  "kule",
		// Only approved extensions' MCP servers that have their own
		// approval; the agent starts them, inside the task's sandbox.
		MCPServers: k.ExtensionMCPServers(r.notice),
	}, nil
}

// open initializes the agent and starts or continues the task's session.
func (r *Run) open(ctx context.Context, errw io.Writer) error {
	c, p, t := r.c, r.Profile, r.Task
	info, err := c.Initialize(ctx)
	if err != nil {
		return fmt.Errorf("run: %s: %w", p.Name, err)
	}
	rec, had, err := acp.LoadSession(t.Paths.Dir)
	if err != nil {
		r.notice(err.Error())
	}
	if had && !r.o.Fresh && rec.Agent == p.Name {
		if err := c.ContinueSession(ctx, rec.Session); err == nil {
			r.Continued = true
		} else if !errors.Is(err, acp.ErrNotSupported) {
			r.notice(fmt.Sprintf("could not continue the earlier conversation (%v); starting a new one", err))
		}
	}
	if !r.Continued {
		_, err := c.NewSession(ctx)
		var rerr *acp.RPCError
		if err != nil && p.Auth != "" && errors.As(err, &rerr) && rerr.Code == acp.CodeAuthRequired {
			// The agent wants a login: use the profile's method (an
			// api-key method reads the key variable: a placeholder).
			if aerr := c.Authenticate(ctx, p.Auth, nil); aerr != nil {
				return fmt.Errorf("run: %s: %w", p.Name, aerr)
			}
			_, err = c.NewSession(ctx)
		}
		if err != nil {
			return fmt.Errorf("run: %s: %w", p.Name, err)
		}
	}
	if p.Mode != "" {
		if err := c.SetMode(ctx, p.Mode); err != nil {
			return fmt.Errorf("run: %s: %w (the profile's mode must be one the agent offers)", p.Name, err)
		}
	}
	if err := acp.SaveSession(t.Paths.Dir, acp.SessionRecord{Agent: p.Name, Session: c.SessionID(), Cwd: t.Paths.Copy}); err != nil {
		r.notice(err.Error())
	}
	if info.Name != "" {
		r.Agent = info.Name + " " + info.Version
	}
	verb := "new conversation"
	if r.Continued {
		verb = "continuing the conversation"
	}
	fmt.Fprintf(errw, "%s · task %s · %s\n", r.Agent, t.ID, verb)
	return nil
}

// turn sends the prompt, waits for its end, and cleans up.
func (r *Run) turn(ctx context.Context) {
	defer close(r.done)
	defer r.memoryEnd()
	res, perr := r.c.PromptWith(ctx, r.o.promptWithNotes(), r.o.images())
	r.res.StopErr = r.c.Stop()
	r.res.StopReason = res.StopReason
	r.res.LimitErr = r.stopLimits()
	r.res.Status, r.res.StatusErr = r.k.Status(context.WithoutCancel(ctx), r.Task) // the turn's end is reported however it ended
	r.cleanup()
	if r.res.LimitErr != nil {
		// Stopped by a limit or the budget: the run fails with why.
		r.err = fmt.Errorf("run: %w (steps so far are in kule steps %s; the folder is untouched)", r.res.LimitErr, r.Task.ID)
		return
	}
	if perr != nil {
		r.res.StopReason = ""
		r.err = fmt.Errorf("run: %w (steps so far are in kule steps %s; the folder is untouched)", perr, r.Task.ID)
	}
}

// Wait returns how the turn ended, once everything is cleaned up. The error
// says why the turn failed; the Result is filled as far as it is known.
func (r *Run) Wait() (Result, error) {
	<-r.done
	return r.res, r.err
}

// Done is closed when the turn has ended and the run is cleaned up.
func (r *Run) Done() <-chan struct{} { return r.done }

// Cancel asks the agent to end the turn; it ends as "cancelled".
func (r *Run) Cancel() { r.cancelTurn() }

// Stop ends the agent (session/cancel, its stdin closed, then its process
// tree killed); Wait then returns.
func (r *Run) Stop() { _ = r.c.Stop() }

// cleanup closes what Start opened, in reverse: the agent (if any), the
// proxy (its summary kept), the limits' watch (waited for), the files and
// the task's lock.
func (r *Run) cleanup() {
	r.closed.Do(func() {
		if r.c != nil {
			_ = r.c.Stop()
		}
		if r.home != nil {
			// The agent is stopped: what it changed of its instructions
			// and settings leaves its home before anything reads it.
			for _, n := range r.home.after(r.Profile.Name) {
				r.notice(n)
			}
		}
		if r.px != nil {
			_ = r.px.Close()
			r.res.Network = r.px.Summary()
		}
		if r.endRun != nil {
			r.endRun()
		}
		if r.limits != nil {
			// The limits' watch writes the run's time into the task's
			// directory as it ends: wait for that, so nothing writes there
			// once the run is over (a Start that failed after the agent's
			// process started has no turn to wait for it).
			_ = r.limits.sup.Wait()
		}
		for _, f := range r.files {
			_ = f.Close()
		}
		if r.lock != nil {
			_ = r.lock.Unlock()
		}
	})
}

func (r *Run) appendFile(name string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(r.Task.Paths.Dir, name), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	r.files = append(r.files, f)
	return f, nil
}

func (r *Run) event(e acp.Event) {
	r.touch()
	r.memoryProgress(e) // resume.go
	if e.Type == acp.EventUsage && e.Usage != nil {
		r.memoryUsage(*e.Usage)
		r.onUsage(*e.Usage)
	}
	if r.o.OnEvent != nil {
		r.o.OnEvent(e)
	}
}

func (r *Run) notice(s string) { r.event(acp.Event{Type: acp.EventNotice, Text: s}) }

// within reports whether path is dir or lies below it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
