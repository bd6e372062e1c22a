package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/kulehq/kule/cmd/internal/daemon"
	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/sdk/transport"
)

// The hosts each service's tokens may be sent to, as kept secrets.
var transportHosts = map[string][]string{
	"slack":   {"slack.com"},
	"discord": {"discord.com", "gateway.discord.gg"},
}

func transportCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "transport",
		Short: "Set up Slack and Discord cockpits: launch, continue, approve and stop tasks from a chat",
	}
	c.AddCommand(transportAddCommand(), transportListCommand(), transportTestCommand(), transportRemoveCommand())
	return c
}

// launchTransport starts the transport of tc the one way Kule starts a
// transport, for the daemon and for `kule transport test` alike: a plugin
// out of process in its sandbox, its network through a proxy of its own
// that alone holds the tokens (kernel.StartTransport). A built-in name is
// always the built-in transport (its tokens' hosts are Kule's to say); any
// other is the installed transport plugin of that name, which starts only
// while it is approved and whose hosts are its manifest's.
func launchTransport(ctx context.Context, home string, plugins *kernel.PluginHost, tc kernel.TransportSettings, log hclog.Logger) (*kernel.RunningTransport, error) {
	l := kernel.TransportLaunch{Settings: tc, Plugins: plugins, Log: log}
	if hosts, ok := transportHosts[tc.Name]; ok {
		l.Hosts = hosts
	} else {
		l.Installed = true
	}
	return kernel.StartTransport(ctx, home, l)
}

// installedTransportHosts are the hosts the installed transport plugin
// name's manifest asks for, read without running it, and whether it is
// approved as it is installed now.
func installedTransportHosts(home, name string) ([]string, bool, error) {
	h := pluginHost(home)
	defer h.Close()
	st, err := h.Status(name)
	if err != nil {
		return nil, false, fmt.Errorf("transport add: no transport %q: slack, discord, or an installed transport plugin (kule plugins install PATH): %w; nothing was kept", name, err)
	}
	if st.Manifest.Kind != "transport" {
		return nil, false, fmt.Errorf("transport add: the installed plugin %s is a %s, not a transport; nothing was kept", name, st.Manifest.Kind)
	}
	hosts := st.Manifest.NetworkHosts()
	if len(hosts) == 0 {
		return nil, false, fmt.Errorf("transport add: the manifest of %s names no hosts in its permissions; nothing was kept", name)
	}
	return hosts, st.Approved, nil
}

// transportTested, when set, is called while `kule transport test` holds
// the running transport, after its post (tests look into its process).
var transportTested func(*kernel.RunningTransport)

// startTransports connects the daemon to every configured transport, each
// a plugin out of process in its sandbox with a proxy of its own
// (kernel.StartTransport); a transport that cannot start is logged and
// leaves the others running.
func startTransports(ctx context.Context, k *kernel.Kernel, d *daemon.Daemon, log hclog.Logger) func() {
	cfg, err := k.Settings()
	if err != nil || len(cfg.Transports) == 0 {
		return func() {}
	}
	plugins := pluginHost(k.Home())
	var hosts []*daemon.TransportHost
	var running []*kernel.RunningTransport
	for _, tc := range cfg.Transports {
		if err := tc.Check(); err != nil {
			log.Warn("transport not started", "transport", tc.Name, "err", err)
			continue
		}
		r, err := launchTransport(ctx, k.Home(), plugins, tc, log.Named("transport-"+tc.Name))
		if err != nil {
			log.Warn("transport not started", "transport", tc.Name, "err", err)
			continue
		}
		running = append(running, r)
		agent := tc.Agent
		if agent == "" {
			agent = "claude-code"
		}
		h, err := d.AttachTransport(r, daemon.TransportConfig{Name: tc.Name, Operators: tc.Operators, Folder: tc.Folder, Agent: agent})
		if err != nil {
			log.Warn("transport not attached", "transport", tc.Name, "err", err)
			continue
		}
		hosts = append(hosts, h)
	}
	return func() {
		for _, h := range hosts {
			h.Close()
		}
		for _, r := range running {
			r.Close()
		}
		plugins.Close()
	}
}

// readTokens reads one value per name: without echo from a terminal, or
// one line each from a pipe. Never from an argument.
func readTokens(cmd *cobra.Command, names []string) ([]string, error) {
	in := cmd.InOrStdin()
	var out []string
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		for _, n := range names {
			v, err := readValue(cmd, n)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	sc := bufio.NewScanner(in)
	for _, n := range names {
		if !sc.Scan() {
			return nil, fmt.Errorf("transport add: no value for %s on standard input (one line each); nothing was kept", n)
		}
		out = append(out, strings.TrimSpace(sc.Text()))
	}
	return out, nil
}

func transportAddCommand() *cobra.Command {
	var tc kernel.TransportSettings
	var keep bool
	c := &cobra.Command{
		Use:   "add slack|discord|PLUGIN --channel ID --operator USER_ID [--operator …]",
		Short: "Connect a Slack workspace, a Discord server or an installed transport; tokens are read without echo and kept as secrets",
		Long: `Connect a chat cockpit. The tokens are typed without echo (or piped, one
line each: Slack's bot token then its app-level token; Discord's or an
installed transport plugin's bot token) and kept as secrets for the
service's hosts only (a plugin's: the hosts its manifest names). Only the
operators (chat user ids, never display names) may launch, answer, commit,
roll back or kill; anyone else's message is input, marked untrusted.
docs/transports.md says which scopes and intents each service needs.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tc.Name = args[0]
			root, err := kernel.DefaultHome()
			if err != nil {
				return err
			}
			hosts, ok := transportHosts[tc.Name]
			approved := true
			if !ok {
				if hosts, approved, err = installedTransportHosts(root, tc.Name); err != nil {
					return err
				}
			}
			names := []string{kernel.TransportSecretPrefix + strings.ToUpper(strings.ReplaceAll(tc.Name, "-", "_")) + "_BOT"}
			tc.BotSecret = names[0]
			if tc.Name == "slack" {
				tc.AppSecret = kernel.TransportSecretPrefix + "SLACK_APP"
				names = append(names, tc.AppSecret)
			}
			if err := tc.Check(); err != nil {
				return fmt.Errorf("transport add: %w; nothing was kept", err)
			}
			st, err := openSecrets()
			if err != nil {
				return err
			}
			if !keep {
				values, err := readTokens(cmd, names)
				if err != nil {
					return err
				}
				for i, n := range names {
					if values[i] == "" {
						return fmt.Errorf("transport add: %s is empty; nothing more was kept", n)
					}
					if _, err := st.Add(n, values[i], hosts); err != nil {
						return err
					}
				}
			} else {
				for _, n := range names {
					if _, err := st.Get(n); err != nil {
						return fmt.Errorf("transport add: --keep-tokens, but %s is not kept: %w", n, err)
					}
				}
			}
			cfg, err := kernel.LoadSettings(root)
			if err != nil {
				return err
			}
			cfg.SetTransport(tc)
			if err := kernel.SaveSettings(root, cfg); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "added %s: channel %s, operators %s; tokens kept as %s for %s\n", tc.Name, tc.Channel, strings.Join(tc.Operators, ", "), strings.Join(names, ", "), strings.Join(hosts, ", "))
			if !approved {
				fmt.Fprintf(cmd.OutOrStdout(), "the plugin %s waits for your approval and does not start until then: kule plugins show %s, kule plugins approve %s\n", tc.Name, tc.Name, tc.Name)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "next: kule transport test %s, then kule daemon (or kule app) connects it\n", tc.Name)
			return nil
		},
	}
	c.Flags().StringVar(&tc.Channel, "channel", "", "the channel id tasks are launched in")
	c.Flags().StringArrayVar(&tc.Operators, "operator", nil, "a chat user id that may approve, commit, roll back and kill (repeat for more)")
	c.Flags().StringVar(&tc.Folder, "folder", "", "the folder a message that names none works on (~/notes)")
	c.Flags().StringVar(&tc.Agent, "agent", "claude-code", "the agent a launch runs")
	c.Flags().StringVar(&tc.API, "api", "", "the service's API address (default: the service's own)")
	c.Flags().BoolVar(&keep, "keep-tokens", false, "use the tokens already kept instead of reading new ones")
	return c
}

func transportListCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the chat cockpits: channel, operators, whether their tokens are kept",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			root, err := kernel.DefaultHome()
			if err != nil {
				return err
			}
			cfg, err := kernel.LoadSettings(root)
			if err != nil {
				return err
			}
			if len(cfg.Transports) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no transports (kule transport add slack|discord)")
				return nil
			}
			st, err := openSecrets()
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tCHANNEL\tOPERATORS\tFOLDER\tAGENT\tTOKENS")
			for _, tc := range cfg.Transports {
				tokens := "kept"
				for _, n := range []string{tc.BotSecret, tc.AppSecret} {
					if n == "" {
						continue
					}
					if _, err := st.Get(n); err != nil {
						tokens = n + " missing"
					}
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", tc.Name, tc.Channel, strings.Join(tc.Operators, ","), orDash(tc.Folder), orDash(tc.Agent), tokens)
			}
			return w.Flush()
		},
	}
}

func transportTestCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "test NAME",
		Short: "Start the transport as the daemon does and post a message to the channel",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			root, err := kernel.DefaultHome()
			if err != nil {
				return err
			}
			cfg, err := kernel.LoadSettings(root)
			if err != nil {
				return err
			}
			tc, ok := cfg.Transport(args[0])
			if !ok {
				return fmt.Errorf("transport test: no transport %q (kule transport list)", args[0])
			}
			if err := tc.Check(); err != nil {
				return fmt.Errorf("transport test: %w (kule transport add %s fixes it)", err, tc.Name)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			plugins := pluginHost(root)
			defer plugins.Close()
			r, err := launchTransport(ctx, root, plugins, tc, kernelLogger())
			if err != nil {
				return fmt.Errorf("transport test: %w (nothing was posted; kule plugins show %s says why a plugin waits)", err, tc.Name)
			}
			defer r.Close()
			fmt.Fprintf(cmd.OutOrStdout(), "%s: started in its sandbox, its network through its own proxy\n", tc.Name)
			d, err := r.Deliver(ctx, transport.Event{ID: "kule-test", Notice: &transport.Notice{Text: "Kule is connected. Operators: " + strings.Join(tc.Operators, ", ") + ". Write `~/folder: what to do` to start a task."}}, "")
			if err != nil {
				return fmt.Errorf("transport test: posting to channel %s failed: %w (check the tokens, the network, and that the bot is in the channel: docs/transports.md)", tc.Channel, err)
			}
			if transportTested != nil {
				transportTested(r)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: posted to channel %s (message %s)\n", tc.Name, tc.Channel, d.Ref)
			return nil
		},
	}
}

func transportRemoveCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "remove NAME",
		Short: "Disconnect a chat cockpit (its kept tokens stay until kule secrets remove)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			root, err := kernel.DefaultHome()
			if err != nil {
				return err
			}
			cfg, err := kernel.LoadSettings(root)
			if err != nil {
				return err
			}
			tc, _ := cfg.Transport(args[0])
			if !cfg.RemoveTransport(args[0]) {
				return fmt.Errorf("transport remove: no transport %q; nothing changed", args[0])
			}
			if err := kernel.SaveSettings(root, cfg); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed %s (the daemon drops it when it next starts); its tokens stay kept: kule secrets remove %s\n", args[0], strings.TrimSpace(tc.BotSecret+" "+tc.AppSecret))
			return nil
		},
	}
}
