package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/kulehq/kule/cmd/internal/daemon"
	"github.com/kulehq/kule/cmd/internal/daemon/client"
	"github.com/kulehq/kule/kernel"
)

func daemonCommand() *cobra.Command {
	var idle time.Duration
	var addr string
	c := &cobra.Command{
		Use:   "daemon",
		Short: "Serve the tasks, their questions and the control room app (one per KULE_HOME)",
		Long: `Runs Kule's daemon in the foreground: it listens on $KULE_HOME/kuled.sock
and on a loopback port for the app, and exits after --idle with nothing to do.
kule app starts it for you.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			k, err := openKernel()
			if err != nil {
				return err
			}
			hosts := daemon.NewSharedHost(k.Store().Root, func() *kernel.PluginHost { return pluginHost(k.Store().Root) })
			d, err := daemon.Start(daemon.Config{Kernel: k, Idle: idle, HTTPAddr: addr,
				// The app's commands run in the sandbox, as `kule exec` does.
				RunnerFor: func(t *kernel.Task, spec *kernel.Spec) (kernel.Runner, error) {
					return (&sandboxFlags{}).runnerFor(t, spec)
				},
				Reviewer: daemon.DiffReviewer{Hosts: hosts}, // one plugin host for the daemon's life
				Previews: hosts.Acquire,                     // the same host previews files
				Rules:    &daemon.CedarRules{K: k},
				AgentSet: k.Agents,
				// Extensions' commands from the app, each in its own sandboxed host.
				Extensions: func() *kernel.ExtensionRunner { return extRunner(k, k.Store().Root, io.Discard) },
			})
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			defer startTransports(ctx, k, d, kernelLogger())() // the chat cockpits of config.toml
			fmt.Fprintf(cmd.OutOrStdout(), "kule daemon · %s · app at http://%s\n", k.Store().Root, d.Addr())
			return d.Serve(ctx)
		},
	}
	c.Flags().DurationVar(&idle, "idle", daemon.DefaultIdle, "exit after this long with no request, stream or run (negative: never)")
	c.Flags().StringVar(&addr, "listen", "", "address of the app's port (default: a loopback address of this home's own, 127.x.y.z, kept in $KULE_HOME/app-address, on a free port)")
	return c
}

func appCommand() *cobra.Command {
	var printURL bool
	c := &cobra.Command{
		Use:   "app",
		Short: "Open the control room in a browser (starting the daemon if none runs)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			root, err := kernel.DefaultHome()
			if err != nil {
				return err
			}
			if _, err := kernel.OpenTasks(root); err != nil {
				return err
			}
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("app: %w", err)
			}
			ctx := cmd.Context()
			if err := client.StartDaemon(ctx, root, exe); err != nil {
				return fmt.Errorf("app: %w", err)
			}
			url, err := client.New(root).AppURL(ctx)
			if err != nil {
				return fmt.Errorf("app: %w", err)
			}
			out := cmd.OutOrStdout()
			if printURL {
				fmt.Fprintln(out, url)
				return nil
			}
			// The address goes into xdg-open's arguments, which every local
			// user can read: it carries a launch code that opens the app
			// once, within a minute, never the session's secret.
			if p, err := exec.LookPath("xdg-open"); err == nil && (os.Getenv("DISPLAY") != "" || os.Getenv("WAYLAND_DISPLAY") != "") {
				if err := exec.Command(p, url).Start(); err == nil {
					fmt.Fprintln(out, "opened the control room in your browser")
					return nil
				}
			}
			fmt.Fprintf(out, "open this address in a browser on this machine within a minute (it logs one browser in, once; kule app gives a new one):\n%s\n", url)
			return nil
		},
	}
	c.Flags().BoolVar(&printURL, "print-url", false, "print a one-time address (valid for a minute) instead of opening a browser")
	return c
}

// daemonNetHooks let a command run from a terminal put the connections its
// policy asks about to the person through the daemon, when one runs (the
// question waits under Needs you, as the app's own runs do). Without a
// daemon they are refused at once, as before.
func daemonNetHooks(ctx context.Context, home, label string) kernel.NetHooks {
	c := client.New(home)
	if !c.Running(ctx) {
		return kernel.NetHooks{}
	}
	return kernel.NetHooks{Ask: func(ctx context.Context, t *kernel.Task, host string, port int, rule string) bool {
		hp := net.JoinHostPort(host, strconv.Itoa(port))
		fmt.Fprintf(os.Stderr, "kule: the connection to %s waits for your answer in the app (kule app, under Needs you); unanswered, it is refused\n", hp)
		ok, err := c.Ask(ctx, client.Question{Task: t.ID, Kind: daemon.KindConnection, Title: "Connect to " + hp + "?",
			Detail: "asked for by " + label + " (from a terminal) · rule " + rule + " · the connection is held until you answer", Subject: hp})
		return err == nil && ok
	}}
}

// recordCLIStep keeps a run of kule exec in the task's steps.jsonl, as the app's runs are
// kept, so the app's Live and Timeline show it after a reload too; a running daemon hears of
// it at once. A run is never failed for its record: a warning says what was not kept.
func recordCLIStep(ctx context.Context, home string, t *kernel.Task, label string, started time.Time, code int, runErr error, st *kernel.Status) {
	step, err := daemon.RecordStep(t, "cli", label, started, code, runErr, st)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kule: the run was not recorded for the app's Timeline: %v\n", err)
		return
	}
	c := client.New(home)
	if !c.Running(ctx) {
		return
	}
	_ = c.Do(ctx, "POST", "/api/events", map[string]any{"type": "step", "task": t.ID, "data": step}, nil)
}

// daemonPermissionAsk puts an agent's permission questions (kule run --ask)
// to the person through the daemon when one runs: they wait under Needs you
// beside the app's own. Nil when no daemon runs (the terminal asks).
func daemonPermissionAsk(home string, t *kernel.Task, agent string) kernel.AskFunc {
	c := client.New(home)
	if !c.Running(context.Background()) {
		return nil
	}
	return func(ctx context.Context, q kernel.Question) (string, error) {
		kind := q.Kind
		if kind == "" {
			kind = "other"
		}
		detail := q.Command
		if len(q.Paths) > 0 {
			detail = strings.TrimPrefix(detail+" · "+strings.Join(q.Paths, ", "), " · ")
		}
		ok, err := c.Ask(ctx, client.Question{Task: t.ID, Kind: daemon.KindPermission, Title: agent + " asks: " + q.Title, Detail: detail, Subject: agent + " " + kind})
		if err != nil {
			return "", fmt.Errorf("not answered through the daemon: %w", err) // recorded as "no answer"
		}
		return daemon.PickOption(q.Options, ok), nil
	}
}

func nameCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "name TASK NAME",
		Short: "Name a task (an empty NAME clears it)",
		Example: `  kule name 1a2b "tidy the notes"
  kule name 1a2b ""            # clears the name`,
		Args: cobra.MinimumNArgs(2),
		RunE: withTask(func(k *kernel.Kernel, t *kernel.Task, cmd *cobra.Command, args []string) error {
			name := strings.Join(strings.Fields(strings.Join(args[1:], " ")), " ")
			if err := editTask(k, t, func(t *kernel.Task) { t.Name = name }); err != nil {
				return err
			}
			if name == "" {
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "task %s has no name now\n", t.ID)
				return err
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "task %s is named %q\n", t.ID, safeLine(name))
			return err
		}),
	}
}

func colorCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "color TASK COLOUR",
		Aliases: []string{"colour"},
		Short:   "Give a task a colour: " + strings.Join(daemon.Colours[1:], ", ") + ", or none",
		Example: `  kule color 1a2b green
  kule color 1a2b none         # no colour`,
		Args: cobra.ExactArgs(2),
		RunE: withTask(func(k *kernel.Kernel, t *kernel.Task, cmd *cobra.Command, args []string) error {
			c := strings.ToLower(args[1])
			if c == "none" {
				c = ""
			}
			if !slices.Contains(daemon.Colours, c) {
				return fmt.Errorf("color: %q is not a colour Kule knows; pick one of %s, or none", args[1], strings.Join(daemon.Colours[1:], ", "))
			}
			if err := editTask(k, t, func(t *kernel.Task) { t.Colour = c }); err != nil {
				return err
			}
			if c == "" {
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "task %s has no colour now\n", t.ID)
				return err
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "task %s is %s now (in the app's task list)\n", t.ID, c)
			return err
		}),
	}
}

// editTask changes task.json under the task's lock.
func editTask(k *kernel.Kernel, t *kernel.Task, fn func(*kernel.Task)) error {
	l, err := kernel.LockFile(t.Paths.Lock)
	if err != nil {
		return err
	}
	defer l.Unlock()
	fresh, err := k.Store().Load(t.ID)
	if err != nil {
		return err
	}
	fn(fresh)
	return k.Store().Save(fresh)
}
