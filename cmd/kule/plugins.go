package main

import (
	"fmt"
	"github.com/kulehq/kule/kernel"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/kulehq/kule/plugins/builtin"
)

// pluginsBinary is the executable that serves the built-in plugins:
// kule-plugins beside this kule (make install and the packages put them
// together). The tests of this package serve them from their own binary.
var pluginsBinary = func() string {
	exe, err := os.Executable()
	if err != nil {
		return "kule-plugins"
	}
	return filepath.Join(filepath.Dir(exe), "kule-plugins")
}

// kernelLogger is Kule's log on stderr; KULE_LOG=debug|info|warn|error sets
// its level (warn by default). Plugins log under their own names in it.
func kernelLogger() hclog.Logger {
	level := hclog.LevelFromString(os.Getenv("KULE_LOG"))
	if level == hclog.NoLevel {
		level = hclog.Warn
	}
	return hclog.New(&hclog.LoggerOptions{Name: "kule", Level: level, Output: os.Stderr})
}

// builtinPlugins is plugins/builtin's table as the plugin host takes it.
func builtinPlugins() []kernel.BuiltinPlugin {
	var bs []kernel.BuiltinPlugin
	for _, b := range builtin.Differs {
		kind, name, _ := strings.Cut(b.Name, "/")
		bs = append(bs, kernel.BuiltinPlugin{Kind: kind, Name: name, Accepts: b.Accepts})
	}
	for _, p := range builtin.Previewers {
		kind, name, _ := strings.Cut(p.Name, "/")
		bs = append(bs, kernel.BuiltinPlugin{Kind: kind, Name: name, Accepts: p.Accepts})
	}
	return bs
}

// pluginSandbox is the sandbox every plugin starts in; with isolation
// missing none starts, unless the person accepted weaker isolation (kule
// isolation --accept-weaker on).
func pluginSandbox(home string) *kernel.Sandbox {
	sb := &kernel.Sandbox{Exe: pluginsBinary()}
	if cfg, err := kernel.LoadSettings(home); err == nil {
		sb.AcceptWeaker = cfg.Sandbox.AcceptWeaker
	}
	return sb
}

// pluginHost is the plugin host on home with the built-in plugins.
func pluginHost(home string) *kernel.PluginHost {
	return kernel.NewPluginHost(home, kernel.PluginHostOptions{Self: pluginsBinary(), Builtins: builtinPlugins(), Logger: kernelLogger(), Sandbox: pluginSandbox(home)})
}

func openPluginHost() (*kernel.PluginHost, error) {
	home, err := kernel.DefaultHome()
	if err != nil {
		return nil, err
	}
	return pluginHost(home), nil
}

func pluginsCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "plugins",
		Short: "List, install, approve and remove plugins",
		Long: `Plugins read file formats (differs) and more, each in a process of its own.
Built-in plugins come with kule. A plugin you install runs only once you
approve that exact version and executable; if either changes, it waits for
your approval again and kule says why.`,
	}
	c.AddCommand(pluginsListCommand(), pluginsShowCommand(), pluginsApproveCommand(), pluginsRemoveCommand(), pluginsInstallCommand())
	return c
}

func pluginsListCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List built-in and installed plugins and whether they may run",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := openPluginHost()
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tKIND\tVERSION\tSTATE")
			for _, b := range h.Builtins() {
				state := "built-in"
				if h.IsBuiltinReplaced(b.Name) {
					state = "built-in, replaced by the installed plugin " + b.Name
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", b.Name, b.Kind, "-", state)
			}
			names, err := h.List()
			if err != nil {
				return err
			}
			for _, n := range names {
				st, err := h.Status(n)
				if err != nil {
					fmt.Fprintf(w, "%s\t?\t?\tbroken: %v\n", n, err)
					continue
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", n, st.Manifest.Kind, st.Manifest.Version, stateWords(st))
			}
			return w.Flush()
		},
	}
}

func stateWords(st kernel.PluginStatus) string {
	if st.Approved {
		return "approved"
	}
	return "waits for approval: " + st.Reason
}

func pluginsShowCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "show NAME",
		Short: "Show a plugin's manifest, hashes and approval",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			h, err := openPluginHost()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			name := args[0]
			st, err := h.Status(name)
			if err != nil {
				for _, b := range h.Builtins() {
					if b.Name == name {
						fmt.Fprintf(out, "%s: built-in %s, part of Kule (runs as `kule-plugins __plugin %s/%s`, trusted as kule itself)\n", name, b.Kind, b.Kind, name)
						fmt.Fprintf(out, "sandbox:     %s\n", kernel.PluginProfiles[b.Kind].Says)
						return nil
					}
				}
				return err
			}
			showStatus(out, h, st)
			return nil
		},
	}
}

func showStatus(out io.Writer, h *kernel.PluginHost, st kernel.PluginStatus) {
	m := st.Manifest
	fmt.Fprintf(out, "name:        %s\nkind:        %s\nversion:     %s\n", m.Name, m.Kind, m.Version)
	if m.Description != "" {
		fmt.Fprintf(out, "description: %s\n", m.Description)
	}
	fmt.Fprintf(out, "installed:   %s\n", h.Dir(m.Name))
	fmt.Fprintf(out, "executable:  %s (sha256 %s)\n", m.Executable, st.ExeSHA256)
	fmt.Fprintf(out, "manifest:    sha256 %s\n", st.ManifestSHA256)
	if len(m.Differ.Patterns) > 0 {
		fmt.Fprintf(out, "reads:       %s\n", strings.Join(m.Differ.Patterns, " "))
	}
	perms := "none"
	if len(m.Permissions) > 0 {
		perms = strings.Join(m.Permissions, ", ")
	}
	fmt.Fprintf(out, "asks for:    %s\n", perms)
	if p, ok := kernel.PluginProfiles[m.Kind]; ok {
		fmt.Fprintf(out, "sandbox:     %s\n", p.Says)
	}
	if a := st.Approval; a != nil {
		fmt.Fprintf(out, "approved:    version %s, sha256 %s, on %s\n", a.Version, a.SHA256, a.ApprovedAt.Format("2006-01-02 15:04 MST"))
	}
	fmt.Fprintf(out, "state:       %s\n", stateWords(st))
}

func pluginsApproveCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "approve NAME",
		Short: "Approve an installed plugin's exact version and executable",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			h, err := openPluginHost()
			if err != nil {
				return err
			}
			a, err := h.Approve(args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "approved %s %s %s (sha256 %s); it runs from now on, until its executable or manifest changes\n", a.Kind, a.Name, a.Version, a.SHA256)
			return nil
		},
	}
}

func pluginsRemoveCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "remove NAME",
		Short: "Uninstall a plugin and forget its approval",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			h, err := openPluginHost()
			if err != nil {
				return err
			}
			if err := h.Remove(args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed %s and forgot its approval\n", args[0])
			return nil
		},
	}
}

func pluginsInstallCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "install PATH",
		Short: "Install a plugin (a directory with plugin.toml and the executable); it waits for approval",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			h, err := openPluginHost()
			if err != nil {
				return err
			}
			m, err := h.Install(args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "installed %s %s %s into %s\nnothing of it has run; it waits for your approval: read `kule plugins show %s`, then `kule plugins approve %s`\n",
				m.Kind, m.Name, m.Version, h.Dir(m.Name), m.Name, m.Name)
			return nil
		},
	}
}
