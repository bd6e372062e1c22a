package main

import (
	"context"
	"fmt"
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
			d, err := daemon.Start(daemon.Config{Kernel: k, Idle: idle, HTTPAddr: addr,
				// The app's commands run in the sandbox, as `kule exec` does.
				RunnerFor: func(t *kernel.Task, spec *kernel.Spec) (kernel.Runner, error) {
					return (&sandboxFlags{}).runnerFor(t, spec)
				},
				Reviewer: daemon.DiffReviewer{Hosts: daemon.NewSharedHost(k.Store().Root, func() *kernel.PluginHost { return pluginHost(k.Store().Root) })}, // one plugin host for the daemon's life
				Rules:    &daemon.CedarRules{K: k},
				AgentSet: k.Agents,
			})
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
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
		return daemon.PickOption(q.Options, err == nil && ok), nil
	}
}

func nameCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "name TASK NAME",
		Short: "Name a task (an empty NAME clears it)",
		Args:  cobra.MinimumNArgs(2),
		RunE: withTask(func(k *kernel.Kernel, t *kernel.Task, cmd *cobra.Command, args []string) error {
			return editTask(k, t, func(t *kernel.Task) { t.Name = strings.Join(strings.Fields(strings.Join(args[1:], " ")), " ") })
		}),
	}
}

func colorCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "color TASK COLOUR",
		Aliases: []string{"colour"},
		Short:   "Give a task a colour: " + strings.Join(daemon.Colours[1:], ", ") + ", or none",
		Args:    cobra.ExactArgs(2),
		RunE: withTask(func(k *kernel.Kernel, t *kernel.Task, cmd *cobra.Command, args []string) error {
			c := strings.ToLower(args[1])
			if c == "none" {
				c = ""
			}
			if !slices.Contains(daemon.Colours, c) {
				return fmt.Errorf("color: %q is not a colour Kule knows; pick one of %s, or none", args[1], strings.Join(daemon.Colours[1:], ", "))
			}
			return editTask(k, t, func(t *kernel.Task) { t.Colour = c })
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
