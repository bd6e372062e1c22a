package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/agentrun"
	agentplug "github.com/kulehq/kule/plugins/agent"
)

// builtinAgents is the catalogue of agents that ship with Kule, handed to
// the kernel (kernel.Config.Agents): plugins/agent's profiles.
func builtinAgents() fs.FS { return agentplug.Builtins }

// loadAgents reads the agents for the commands that open no kernel: the
// built-in catalogue and the person's agents.toml, as Kernel.Agents does.
func loadAgents() (*kernel.AgentSet, string, error) {
	home, err := kernel.DefaultHome()
	if err != nil {
		return nil, "", err
	}
	set, err := kernel.LoadAgents(builtinAgents(), home)
	return set, home, err
}

func agentsCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "agents",
		Short: "The agents kule can run: which can start here, and what to install for the others",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			set, home, err := loadAgents()
			if err != nil {
				return err
			}
			root, err := kernel.AgentPackagesRoot()
			if err != nil {
				return err
			}
			o := kernel.AgentCheckOptions{KuleHome: home, PackagesRoot: root}
			if store, err := openSecrets(); err == nil {
				o.HasKey = func(name string) bool { s, err := store.Get(name); return err == nil && s.Value != "" }
			}
			if cfg, err := kernel.LoadSettings(home); err == nil && !cfg.Sandbox.AcceptWeaker {
				o.Isolation = kernel.ProbeSandbox().Missing()
			}
			printAgents(cmd.OutOrStdout(), set, kernel.CheckAgent(set, o))
			return nil
		},
	}
	c.AddCommand(agentsShowCommand(), agentsSetCommand(), agentsApproveCommand(), agentsRegistryCommand(), agentsAddCommand(), agentsInstallCommand(), agentsTryCommand())
	return c
}

func printAgents(w io.Writer, set *kernel.AgentSet, sts []kernel.AgentStatus) {
	var ready, not []kernel.AgentStatus
	for _, s := range sts {
		if s.CanStart() {
			ready = append(ready, s)
		} else {
			not = append(not, s)
		}
	}
	line := func(s kernel.AgentStatus) {
		kind := "yours"
		if s.Profile.Builtin {
			kind = "built-in"
		}
		fmt.Fprintf(w, "  %-14s %-9s %s\n", s.Profile.Name, kind, strings.Join(s.Profile.Command, " "))
	}
	if len(ready) > 0 {
		fmt.Fprintln(w, "Can start here:")
		for _, s := range ready {
			line(s)
			if s.Package != nil && !s.Installed {
				fmt.Fprintf(w, "      installs %s@%s once at its first run (npm, no install scripts)\n", s.Package.Name, s.Package.Version)
			}
			for _, warn := range s.Warnings {
				fmt.Fprintf(w, "      but: %s\n", warn)
			}
			if len(s.Auth) > 0 {
				fmt.Fprintf(w, "      logs in with: %s\n", strings.Join(s.Auth, "; "))
			} else if len(s.Profile.Keys) > 0 {
				var ks []string
				for k := range s.Profile.Keys {
					ks = append(ks, k)
				}
				sort.Strings(ks)
				where := "log in to it once outside kule"
				if s.Profile.OwnHome != "" {
					where = "log in to it once in a kule run (it has a home of its own in kule)"
				}
				fmt.Fprintf(w, "      no key or login found: set %s (or kule secrets add it), or %s\n", strings.Join(ks, " or "), where)
			}
		}
	}
	if len(not) > 0 {
		if len(ready) > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w, "Cannot start yet:")
		for _, s := range not {
			line(s)
			switch {
			case s.Problem != nil:
				fmt.Fprintf(w, "      %v\n", s.Problem)
			case !s.Approved:
				fmt.Fprintf(w, "      waits for approval: kule agents show %s, then kule agents approve %s\n", s.Profile.Name, s.Profile.Name)
			}
			for _, m := range s.Missing {
				if strings.HasPrefix(m, "the sandbox") {
					fmt.Fprintf(w, "      %s\n", m)
				} else {
					fmt.Fprintf(w, "      install %s\n", m)
				}
			}
		}
	}
	if err := set.Problems[""]; err != nil {
		fmt.Fprintf(w, "\n%s: %v\n", set.Personal, err)
	}
	for _, err := range set.Skipped {
		fmt.Fprintf(w, "\n%v\n", err)
	}
	fmt.Fprintln(w, "\nMore agents: kule agents registry; kule agents add NAME drafts a profile in", set.Personal)
}

func agentsShowCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "show NAME",
		Short: "Print an agent's profile: what it starts and what it may open",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			set, home, err := loadAgents()
			if err != nil {
				return err
			}
			p, perr := set.Get(args[0])
			if p.Name == "" {
				return perr
			}
			w := cmd.OutOrStdout()
			src := p.Source
			fmt.Fprintf(w, "# %s, from %s\n", p.Name, src)
			if perr != nil {
				fmt.Fprintf(w, "# REFUSED: %v\n", perr)
			} else if p.Builtin && p.Setting == "" {
				fmt.Fprintln(w, "# built in: needs no approval")
			} else if err := kernel.CheckAgentApproved(home, p); err != nil {
				fmt.Fprintf(w, "# not approved: read it, then `kule agents approve %s`\n", p.Name)
			} else {
				fmt.Fprintln(w, "# approved at this content")
			}
			fmt.Fprintf(w, "# sha256 %s\n", p.Hash())
			fmt.Fprint(w, p.TOML())
			printEndpointHint(w, p)
			return nil
		},
	}
}

// printEndpointHint says how to point the agent at another endpoint (a
// local model, a gateway) without copying its profile.
func printEndpointHint(w io.Writer, p kernel.AgentProfile) {
	fmt.Fprintln(w)
	if p.Setting != "" {
		fmt.Fprintf(w, "# set with kule agents set: %s (kule agents set %s base_url= takes it back)\n", p.Setting, p.Name)
	}
	if p.EndpointEnv == "" {
		fmt.Fprintf(w, "# another endpoint: this profile names no endpoint_env; copy it under another name and set the agent's own variable in env, with the endpoint's host:port in hosts and keys\n")
		return
	}
	var keys []string
	for k := range p.Keys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	example := "http://localhost:4000"
	if p.EndpointKey == "openai_base_url" {
		example = "http://localhost:4000/v1"
	}
	fmt.Fprintf(w, "# another endpoint (a local model, a gateway): kule agents set %s base_url=%s\n", p.Name, example)
	what := p.EndpointEnv
	if p.EndpointKey != "" {
		what += ` (as {"` + p.EndpointKey + `": URL})`
	}
	fmt.Fprintf(w, "#   sets %s; %s then goes to that host:port alone, which the proxy dials even on loopback\n", what, orDash(strings.Join(keys, ", ")))
	fmt.Fprintf(w, "#   plain http only to this machine's loopback; the changed profile waits for kule agents approve %s\n", p.Name)
	switch p.EndpointEnv {
	case "CODEX_CONFIG":
		fmt.Fprintln(w, "#   Codex's OpenAI provider (openai_base_url): the URL ends in /v1 (Ollama: http://127.0.0.1:11434/v1)")
	case "ANTHROPIC_BASE_URL":
		fmt.Fprintln(w, "#   the endpoint speaks the Anthropic Messages API (a LiteLLM gateway, Ollama 0.14+)")
	case "GOOGLE_GEMINI_BASE_URL":
		fmt.Fprintln(w, "#   the endpoint speaks the Gemini API (generateContent, streamGenerateContent)")
	}
}

func agentsSetCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "set NAME base_url=URL",
		Short: "Point an agent at another endpoint (a local model, a gateway) without copying its profile",
		Long: `Sets what the profile's endpoint_env names (ANTHROPIC_BASE_URL for
claude-code, CODEX_CONFIG for codex, GOOGLE_GEMINI_BASE_URL for gemini)
to URL. The profile's keys then go to that host:port alone, and the proxy
dials it even on this machine's loopback or your network. Plain http is
taken only for loopback. The changed profile waits for approval; base_url=
(empty) takes the setting back.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			set, home, err := loadAgents()
			if err != nil {
				return err
			}
			key, value, ok := strings.Cut(args[1], "=")
			if !ok {
				return fmt.Errorf("agents set: write KEY=VALUE, e.g. base_url=http://localhost:4000 (nothing was changed)")
			}
			p, err := kernel.SetAgent(home, set, args[0], key, value)
			if err != nil {
				return fmt.Errorf("%w (nothing was changed)", err)
			}
			w := cmd.OutOrStdout()
			if value == "" {
				fmt.Fprintf(w, "%s: base_url taken back; the profile is as it ships\n", p.Name)
				return nil
			}
			fmt.Fprintf(w, "%s now reaches %s=%s; its profile is now:\n\n", p.Name, p.EndpointEnv, value)
			fmt.Fprint(w, p.TOML())
			fmt.Fprintf(w, "\nit waits for approval: kule agents approve %s\n", p.Name)
			return nil
		},
	}
}

func agentsApproveCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "approve NAME",
		Short: "Let a profile of yours run, as it is now (any change waits for approval again)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			set, home, err := loadAgents()
			if err != nil {
				return err
			}
			p, err := set.Get(args[0])
			if err != nil {
				return err
			}
			if p.Builtin && p.Setting == "" {
				fmt.Fprintf(cmd.OutOrStdout(), "%s is built in; it needs no approval\n", p.Name)
				return nil
			}
			if err := kernel.ApproveAgent(home, p, set.Profiles); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "approved %s (sha256 %s); it runs until its profile changes\n", p.Name, p.Hash()[:16])
			return nil
		},
	}
}

func registry() (*kernel.AgentRegistry, error) { return kernel.ParseAgentRegistry(agentplug.Registry) }

func agentsRegistryCommand() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "registry",
		Short: "List the ACP agent registry (the copy that ships with kule)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := registry()
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if asJSON {
				return printJSON(w, r)
			}
			for _, e := range r.Agents {
				fmt.Fprintf(w, "%-16s %-9s %-22s %s\n", safeLine(e.ID), safeLine(e.Version), safeLine(e.Name), safeLine(e.How()))
			}
			fmt.Fprintln(w, "\nkule agents add NAME drafts a profile; the ACP registry is Apache-2.0 (agentclientprotocol/registry)")
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the registry as JSON")
	return c
}

func agentsAddCommand() *cobra.Command {
	var dry bool
	c := &cobra.Command{
		Use:   "add NAME",
		Short: "Draft a profile from the ACP registry into your agents.toml (it then waits for approval)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := registry()
			if err != nil {
				return err
			}
			e, ok := r.Find(args[0])
			if !ok {
				return fmt.Errorf("agents add: %q is not in the registry (kule agents registry lists it)", args[0])
			}
			p, notes, err := kernel.DraftAgent(e)
			if err != nil {
				return err
			}
			set, home, err := loadAgents()
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if dry {
				// The same checks add makes: a draft that add would
				// refuse is said to be refused here too.
				fmt.Fprint(w, p.TOML())
				fmt.Fprintln(w)
				for _, n := range notes {
					fmt.Fprintln(w, "- "+n)
				}
				if err := kernel.CheckAppendAgent(p, set.Profiles); err != nil {
					return fmt.Errorf("agents add would refuse this draft: %w (nothing was added)", err)
				}
				fmt.Fprintf(w, "\nkule agents add %s (without --dry-run) would add it to %s\n", args[0], kernel.PersonalAgentsPath(home))
				return nil
			}
			if err := kernel.AppendPersonalAgent(home, p, set.Profiles); err != nil {
				return err
			}
			fmt.Fprintf(w, "added to %s:\n\n", kernel.PersonalAgentsPath(home))
			fmt.Fprint(w, p.TOML())
			fmt.Fprintln(w)
			for _, n := range notes {
				fmt.Fprintln(w, "- "+n)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&dry, "dry-run", false, "print the draft without adding it")
	return c
}

func agentsInstallCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "install NAME",
		Short: "Install an npx agent's exact version now (kule run does it at the first run)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			set, _, err := loadAgents()
			if err != nil {
				return err
			}
			p, err := set.Get(args[0])
			if err != nil {
				return err
			}
			root, err := kernel.AgentPackagesRoot()
			if err != nil {
				return err
			}
			argv, err := kernel.AgentLaunch(cmd.Context(), p, root, true, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s starts as: %s\n", p.Name, strings.Join(argv, " "))
			return nil
		},
	}
}

// agentsTryCommand: kule agents try NAME [--apply].
func agentsTryCommand() *cobra.Command {
	var apply bool
	var prompt string
	var limit time.Duration
	var sf sandboxFlags // none given: a trial is never opened wider
	c := &cobra.Command{
		Use:   "try NAME [--apply]",
		Short: "Run an agent once in an empty folder, opened no wider than its draft, and list the hosts it wanted",
		Long: `Runs the agent (a profile, or a registry entry's draft) once on an empty
folder of its own, with nothing of your home opened, no keys and no hosts,
a writable home of the trial's own (gone after it), for at most --time,
and lists the hosts it asked for. --apply adds the refused HTTPS hosts to its
profile in agents.toml (drafting it from the registry if needed); the
profile then waits for approval like any change.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, err := openKernel()
			if err != nil {
				return err
			}
			set, err := k.Agents()
			if err != nil {
				return err
			}
			home := k.Store().Root
			out, errw := cmd.OutOrStdout(), cmd.ErrOrStderr()
			p, gerr := set.Get(args[0])
			fromRegistry := false
			if gerr != nil {
				r, err := registry()
				if err != nil {
					return err
				}
				e, ok := r.Find(args[0])
				if !ok {
					return gerr
				}
				if p, _, err = kernel.DraftAgent(e); err != nil {
					return err
				}
				fromRegistry = true
			}
			if apply && p.Builtin {
				return fmt.Errorf("agents try: %s is built in and is not changed; copy it into %s under another name to change it", p.Name, kernel.PersonalAgentsPath(home))
			}
			fmt.Fprintf(errw, "trying %s once in an empty folder, opened no wider than its draft (nothing of your home, no keys, no hosts; a home of its own; at most %s)\n", p.Name, limit)
			pr := &printer{w: out}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			rep, err := agentrun.Try(ctx, k, agentrun.Options{Agents: set, Trial: &p, TrialTime: limit, Prompt: prompt, OnEvent: pr.event, Sandbox: sf.options(), Stderr: errw})
			pr.endLine()
			if err != nil && rep == nil {
				return err
			}
			if rep.Err != nil {
				fmt.Fprintf(errw, "the turn failed: %s\n", safeLine(fmt.Sprint(rep.Err)))
			} else {
				fmt.Fprintf(errw, "turn ended: %s\n", safeLine(strings.ReplaceAll(rep.Result.StopReason, "_", " ")))
			}
			if len(rep.Hosts) == 0 {
				fmt.Fprintln(out, "It reached for no host.")
			} else {
				fmt.Fprintln(out, "Hosts it wanted to reach:")
				for _, h := range rep.Hosts {
					verdict := "refused"
					if h.Passed {
						verdict = "passed"
					}
					fmt.Fprintf(out, "  %-40s %s (%s)\n", safeLine(fmt.Sprintf("%s:%d", h.Host, h.Port)), verdict, safeLine(orDash(h.Rule)))
				}
			}
			if runtime.GOOS == "linux" {
				fmt.Fprintln(out, "The files it was refused cannot be listed on Linux: the sandbox hides them without a trace.")
			}
			wanted := rep.Wanted()
			switch {
			case len(wanted) == 0:
			case !apply:
				fmt.Fprintf(out, "kule agents try %s --apply adds %s to its profile's hosts (it then waits for approval)\n", p.Name, strings.Join(wanted, ", "))
			case fromRegistry:
				p.Hosts = wanted
				if err := kernel.AppendPersonalAgent(home, p, set.Profiles); err != nil {
					return err
				}
				fmt.Fprintf(out, "added %s to %s with hosts %s; it waits for approval: kule agents show %s, then kule agents approve %s\n", p.Name, kernel.PersonalAgentsPath(home), strings.Join(wanted, ", "), p.Name, p.Name)
			default:
				added, err := kernel.AddAgentHosts(home, p.Name, wanted)
				if err != nil {
					return err
				}
				if len(added) == 0 {
					fmt.Fprintf(out, "%s already names those hosts\n", p.Name)
				} else {
					fmt.Fprintf(out, "added %s to the hosts of %s; it waits for approval: kule agents show %s, then kule agents approve %s\n", strings.Join(added, ", "), p.Name, p.Name, p.Name)
				}
			}
			return err
		},
	}
	c.Flags().BoolVar(&apply, "apply", false, "add the refused hosts to the profile (it then waits for approval)")
	c.Flags().StringVar(&prompt, "prompt", "Say hello in one short line.", "what to ask the agent")
	c.Flags().DurationVar(&limit, "time", agentrun.DefaultTrialTime, "stop the trial after this long")
	return c
}

// runCommand: kule run TASK --agent NAME [--ask] "prompt".
func runCommand() *cobra.Command {
	var name string
	var ask, fresh bool
	var sf sandboxFlags
	var pids int
	var about []string
	var rf recallFlags
	var session, promptFile string
	var resume bool
	c := &cobra.Command{
		Use:   "run TASK --agent NAME [--ask] [--about PATH[:PLACE]]... PROMPT | --prompt-file F | - | --resume [PROMPT]",
		Short: "Run an agent on the task's copy over ACP; every tool call is a step with what it changed",
		Long: `Starts the agent (a built-in or an approved profile of yours) over the Agent
Client Protocol with the task's copy as its working directory, sends PROMPT,
and streams its words, tool calls and what each changed. A second run on the
task continues the conversation when the agent can. Permission questions are
answered "allow once" (the copy and the review keep the folder safe); --ask
puts each to you. Ctrl-C cancels the turn; a second Ctrl-C stops the agent.
Nothing reaches the folder until kule commit.

Before it starts, Kule recalls earlier runs (docs/memory.md): what similar
runs cost, as a proposed budget that --accept-budget sets (never set
silently), and the failures on this folder with the fixes that followed, as
notes the agent reads after the prompt and you read first. --no-recall
leaves both out. --session NAME continues the conversation of that name.

A turn that Kule stopped in the middle of (a crash, a restart, a kill) is
said by kule status; --resume resumes it: the same agent, its session
continued (session/load or session/resume, where the agent has them), and
the notes say what memory kept of where it was (its prompt, its last
steps, the questions that waited). PROMPT is then optional.`,
		Args: cobra.MinimumNArgs(1),
		RunE: withTask(func(k *kernel.Kernel, t *kernel.Task, cmd *cobra.Command, args []string) error {
			var resumes *kernel.MemoryRecord
			if resume {
				var err error
				if resumes, name, err = resumeTarget(cmd.Context(), k, t, name, session); err != nil { // resume.go
					return err
				}
			}
			if name == "" {
				return errors.New("run: name the agent with --agent (kule agents lists them)")
			}
			if pids < 0 {
				return fmt.Errorf("run: --pids %d is below zero (nothing was started)", pids)
			}
			var prompt string
			var err error
			if resumes != nil && len(args) == 1 && promptFile == "" {
				prompt = resumePrompt
			} else if prompt, err = promptOf(args[1:], promptFile, cmd.InOrStdin()); err != nil {
				return err
			}
			prompt, pictures, err := aboutPrompt(cmd.Context(), k, t, prompt, about)
			if err != nil {
				return err
			}
			if resumes != nil && fresh {
				return errors.New("run: --resume continues the interrupted run's conversation; --new-session starts another (give one; nothing was started)")
			}
			return runAgent(cmd, k, t, name, prompt, ask, fresh, &sf, pids, runMemory{flags: rf, session: session, pictures: pictures, resumes: resumes})
		}),
	}
	c.Flags().StringArrayVar(&about, "about", nil, "a place the prompt is about, PATH[:PLACE] (lines 12-18, #Section › Sub, Sheet1!B2:D9, ¶14, x,y-x,y); up to 20")
	sf.add(c)
	rf.add(c)
	c.Flags().StringVar(&session, "session", "", "the conversation to continue (or start) by this name")
	c.Flags().BoolVar(&resume, "resume", false, "resume the task's interrupted run: its agent, its session, and what memory kept of where it was")
	c.Flags().StringVar(&promptFile, "prompt-file", "", "read the prompt from this file (- for stdin)")
	c.Flags().IntVar(&pids, "pids", 0, "processes and threads this run may hold at once (over the task's and home's limit)")
	c.Flags().StringVar(&name, "agent", "", "the agent to run (kule agents lists them)")
	c.Flags().BoolVar(&ask, "ask", false, "put each permission question to you instead of answering allow once")
	c.Flags().BoolVar(&fresh, "new-session", false, "start a new conversation even if the task has one")
	return c
}

// runMemory is what kule run asks of memory (memory.go).
type runMemory struct {
	flags   recallFlags
	session string
	// pictures are --about's picture regions, sent as images to an agent
	// that takes them.
	pictures []kernel.Picture
	// resumes is the interrupted run this one resumes (--resume).
	resumes *kernel.MemoryRecord
}

func runAgent(cmd *cobra.Command, k *kernel.Kernel, t *kernel.Task, name, prompt string, ask, fresh bool, sf *sandboxFlags, pids int, mem runMemory) error {
	out, errw := cmd.OutOrStdout(), cmd.ErrOrStderr()
	set, err := k.Agents()
	if err != nil {
		return err
	}
	if mem.resumes != nil {
		mem.session = resumeSession(errw, k, t, mem.resumes) // resume.go
	} else if mem.session != "" && !fresh {
		fresh = useConversation(cmd.Context(), errw, k, t, name, mem.session)
	}
	notes := mem.flags.recall(cmd.Context(), errw, k, t, prompt, mem.resumes)
	defer k.CloseMemory()
	pr := &printer{w: out}
	o := agentrun.Options{Agents: set, Agent: name, Prompt: prompt, Notes: notes, Pictures: mem.pictures, Conversation: mem.session, Fresh: fresh, OnEvent: pr.event, Sandbox: sf.options(), Stderr: errw, Pids: pids}
	if mem.resumes != nil {
		o.Resumes = mem.resumes.ID
	}
	if ask {
		o.Ask = terminalAsk(pr, os.Stdin, errw)
		if da := daemonPermissionAsk(k.Store().Root, t, name); da != nil {
			o.Ask = da
			pr.note("permission questions wait in the app (kule app), under Needs you")
		}
	}
	// Ctrl-C cancels the start or the turn; a second stops the agent.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		mu  sync.Mutex
		run *agentrun.Run
	)
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	go func() {
		n := 0
		for range sig {
			n++
			mu.Lock()
			r := run
			mu.Unlock()
			if n == 1 {
				pr.note("cancelling the turn (Ctrl-C again stops the agent)")
				cancel()
			} else if r != nil {
				pr.note("stopping the agent")
				go r.Stop()
			}
		}
	}()
	r, err := agentrun.Start(ctx, k, t, o)
	if err != nil {
		return err
	}
	mu.Lock()
	run = r
	mu.Unlock()
	res, perr := r.Wait()
	pr.endLine()
	if res.Status != nil {
		fmt.Fprintf(errw, "\n%s in the copy; kule status %s shows them, kule commit %s applies them\n", kernel.EffectSummary(res.Status.Effects), t.ID, t.ID)
	}
	defer func() {
		for _, l := range res.Network {
			fmt.Fprintln(errw, "  "+safeLine(l))
		}
	}()
	if perr != nil {
		return perr
	}
	if res.StopErr != nil {
		pr.note(res.StopErr.Error())
	}
	fmt.Fprintf(errw, "turn ended: %s\n", safeLine(strings.ReplaceAll(res.StopReason, "_", " ")))
	if res.StopReason == "cancelled" {
		return exitCode(130)
	}
	return nil
}

// printer streams a run to the terminal.
type printer struct {
	mu      sync.Mutex
	w       io.Writer
	midLine bool
}

func (p *printer) endLine() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.midLine {
		fmt.Fprintln(p.w)
		p.midLine = false
	}
}

func (p *printer) linef(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.midLine {
		fmt.Fprintln(p.w)
		p.midLine = false
	}
	// Every line of a run carries what the agent sent: made safe whole.
	fmt.Fprint(p.w, safeLine(fmt.Sprintf(format, args...))+"\n")
}

func (p *printer) note(s string) { p.linef("  · %s", s) }

func stepWhat(s *kernel.Step) string {
	what := s.Command
	if what == "" && len(s.Paths) > 0 {
		what = strings.Join(s.Paths, ", ")
	}
	return what
}

func (p *printer) event(e kernel.Event) {
	switch e.Type {
	case kernel.EventText:
		p.mu.Lock()
		fmt.Fprint(p.w, safeText(e.Text))
		p.midLine = !strings.HasSuffix(e.Text, "\n")
		p.mu.Unlock()
	case kernel.EventStepStart:
		s := e.Step
		line := fmt.Sprintf("▸ [%s] %s", orDash(s.Kind), s.Title)
		if w := stepWhat(s); w != "" && w != s.Title {
			line += " · " + w
		}
		p.linef("%s", line)
	case kernel.EventStepEnd:
		s := e.Step
		mark := map[string]string{"completed": "✓", "failed": "✗"}[s.Status]
		if mark == "" {
			mark = "…"
		}
		p.linef("  %s %s %s", mark, s.Status, s.Title)
		for _, ef := range s.Effects {
			p.linef("      %s", ef.String())
		}
		for _, ef := range s.Undone {
			p.linef("      (undone) %s", ef.String())
		}
		if s.EffectsErr != "" {
			p.linef("      effects unknown: %s", s.EffectsErr)
		}
	case kernel.EventPermission:
		for _, r := range e.Step.Permission {
			who := "by default"
			switch r.By {
			case "default":
			case "person":
				who = "by you"
			default:
				who = "(" + r.By + ")"
			}
			ans := r.Kind
			if ans == "" {
				ans = "cancelled"
			}
			p.linef("  ? %s: %s %s", e.Step.Title, strings.ReplaceAll(ans, "_", " "), who)
		}
	case kernel.EventRaw:
		p.linef("  · the agent sent %q (kept as step %d)", e.Step.Update, e.Step.N)
	case kernel.EventNotice:
		p.note(e.Text)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// terminalAsk puts a permission question to the person on the terminal.
func terminalAsk(pr *printer, in io.Reader, w io.Writer) kernel.AskFunc {
	br := bufio.NewReader(in)
	var mu sync.Mutex
	return func(ctx context.Context, q kernel.Question) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		pr.endLine()
		fmt.Fprintf(w, "\nThe agent asks: %s\n", safeLine(q.Title))
		if q.Command != "" {
			fmt.Fprintf(w, "  command: %s\n", safeLine(q.Command))
		}
		for _, p := range q.Paths {
			fmt.Fprintf(w, "  path: %s\n", safeLine(p))
		}
		for i, o := range q.Options {
			fmt.Fprintf(w, "  %d) %s (%s)\n", i+1, safeLine(o.Name), safeLine(strings.ReplaceAll(o.Kind, "_", " ")))
		}
		fmt.Fprint(w, "answer (number, empty = refuse): ")
		line, err := br.ReadString('\n')
		if err != nil && line == "" {
			return "", fmt.Errorf("no answer: %w", err)
		}
		n, err := strconv.Atoi(strings.TrimSpace(line))
		if err != nil || n < 1 || n > len(q.Options) {
			for _, o := range q.Options {
				if strings.HasPrefix(o.Kind, "reject") {
					return o.OptionID, nil
				}
			}
			return "", nil
		}
		return q.Options[n-1].OptionID, nil
	}
}

// stepsCommand: kule steps TASK [--json].
func stepsCommand() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "steps TASK",
		Short: "List the tool calls agents made in the task, and what each changed",
		Args:  cobra.ExactArgs(1),
		RunE: withTask(func(k *kernel.Kernel, t *kernel.Task, cmd *cobra.Command, args []string) error {
			steps, bad, err := kernel.ReadSteps(filepath.Join(t.Paths.Dir, kernel.StepsFile))
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if asJSON {
				if steps == nil {
					steps = []kernel.Step{}
				}
				return printJSON(w, steps)
			}
			if len(steps) == 0 {
				fmt.Fprintf(w, "no steps yet: kule run %s --agent NAME \"…\" records them\n", t.ID)
			}
			for _, s := range steps {
				title := s.Title
				if s.Status == "raw" {
					title = "(" + s.Update + ", kept as sent)"
				}
				fmt.Fprintf(w, "%3d %-10s %-8s %s\n", s.N, safeLine(s.Status), safeLine(orDash(s.Kind)), safeLine(title))
				if what := stepWhat(&s); what != "" && what != s.Title {
					fmt.Fprintf(w, "      %s\n", safeLine(what))
				}
				for _, r := range s.Permission {
					fmt.Fprintf(w, "      permission: %s (%s)\n", safeLine(orDash(r.Kind)), safeLine(r.By))
				}
				for _, e := range s.Effects {
					fmt.Fprintf(w, "      %s\n", safeLine(e.String()))
				}
				for _, e := range s.Undone {
					fmt.Fprintf(w, "      (undone) %s\n", safeLine(e.String()))
				}
			}
			if bad > 0 {
				fmt.Fprintf(w, "%s skipped\n", count(bad, "damaged line in steps.jsonl was", "damaged lines in steps.jsonl were"))
			}
			return nil
		}),
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the steps as JSON")
	return c
}
