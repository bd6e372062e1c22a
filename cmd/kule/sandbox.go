package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kulehq/kule/kernel"
)

// sandboxFlags are kule exec's isolation flags.
type sandboxFlags struct {
	noSandbox   bool
	allowWrite  []string
	reveal      []string
	hide        []string
	noNetwork   bool
	openNetwork bool
}

func (f *sandboxFlags) add(c *cobra.Command) {
	fl := c.Flags()
	fl.BoolVar(&f.noSandbox, "no-sandbox", false, "run WITHOUT isolation: the command can read your credentials and write anywhere you can")
	fl.StringArrayVar(&f.allowWrite, "allow-write", nil, "let the command also write PATH (repeatable)")
	fl.StringArrayVar(&f.reveal, "reveal", nil, "open PATH read-only for this command (repeatable; relative to the folder)")
	fl.StringArrayVar(&f.hide, "hide", nil, "hide PATH from this command too (repeatable)")
	fl.BoolVar(&f.noNetwork, "no-network", false, "no TCP connections at all")
	fl.BoolVar(&f.openNetwork, "open-network", false, "the host's network, without proxy or policy")
}

// options are the flags as the kernel takes them.
func (f *sandboxFlags) options() kernel.SandboxOptions {
	return kernel.SandboxOptions{NoSandbox: f.noSandbox, AllowWrite: f.allowWrite, Reveal: f.reveal, Hide: f.hide, NoNetwork: f.noNetwork, OpenNetwork: f.openNetwork}
}

// runnerFor picks how exec runs a command in t and fills spec with the
// isolation flags (kernel.SandboxRunner).
func (f *sandboxFlags) runnerFor(t *kernel.Task, spec *kernel.Spec) (kernel.Runner, error) {
	root, err := kernel.DefaultHome()
	if err != nil {
		return nil, err
	}
	return kernel.SandboxRunner(root, t, spec, f.options())
}

func isolationCommand() *cobra.Command {
	var weaker string
	c := &cobra.Command{
		Use:   "isolation [--accept-weaker on|off]",
		Short: "Show how commands are isolated here; accept weaker isolation where a part is missing",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			root, err := kernel.DefaultHome()
			if err != nil {
				return err
			}
			if err := os.MkdirAll(root, 0o700); err != nil {
				return err
			}
			cfg, err := kernel.LoadSettings(root)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if weaker != "" {
				switch weaker {
				case "on":
					cfg.Sandbox.AcceptWeaker = true
				case "off":
					cfg.Sandbox.AcceptWeaker = false
				default:
					return fmt.Errorf("isolation: --accept-weaker takes on or off, not %q", weaker)
				}
				if err := kernel.SaveSettings(root, cfg); err != nil {
					return err
				}
			}
			a := kernel.ProbeSandbox()
			fmt.Fprintf(out, "user namespaces: %s\n", yesNo(a.UserNS, a.UserNSWhy))
			fmt.Fprintf(out, "landlock:        %s\n", landlockWords(a.LandlockABI))
			fmt.Fprintf(out, "accept weaker:   %v\n", onOff(cfg.Sandbox.AcceptWeaker))
			if m := a.Missing(); len(m) > 0 {
				if cfg.Sandbox.AcceptWeaker {
					fmt.Fprintln(out, "commands run with WEAKER isolation (every run says so):")
				} else {
					fmt.Fprintln(out, "commands will NOT run until this is fixed or `kule isolation --accept-weaker on`:")
				}
				for _, s := range m {
					fmt.Fprintln(out, "  -", s)
				}
			}
			return nil
		},
	}
	c.Flags().StringVar(&weaker, "accept-weaker", "", "on: run commands with the isolation available, saying what is missing; off: refuse (the default)")
	return c
}

func yesNo(ok bool, why string) string {
	if ok {
		return "yes"
	}
	return "NO (" + why + ")"
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func landlockWords(abi int) string {
	switch {
	case abi <= 0:
		return "NO"
	case abi < 4:
		return fmt.Sprintf("ABI %d (no TCP rules: the network namespace alone keeps the network shut)", abi)
	case abi < 6:
		return fmt.Sprintf("ABI %d (no signal/abstract-socket scoping: the PID and network namespaces do it)", abi)
	}
	return fmt.Sprintf("ABI %d", abi)
}

func revealCommand() *cobra.Command {
	var folder string
	c := &cobra.Command{
		Use:   "reveal",
		Short: "List the projects beside this folder that its tasks may read; suggest ones its manifests name",
		Long: `Commands see only their copy; the projects beside the folder are hidden.
kule reveal lists what is opened (read-only) for this folder's tasks and
what go.mod, Cargo.toml, package.json and .csproj files suggest opening.
Only you open one: kule reveal add ../shared.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			root, f, cfg, err := revealSetup(folder)
			_ = root
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			open := cfg.Sandbox.RevealsFor(f)
			fmt.Fprintf(out, "revealed for %s:\n", f)
			if len(open) == 0 {
				fmt.Fprintln(out, "  (none)")
			}
			for _, p := range open {
				fmt.Fprintf(out, "  %s\n", p)
			}
			sugg, errs := kernel.SuggestReveal(f)
			var shown int
			for _, s := range sugg {
				if contains(open, s.Path) {
					continue
				}
				if shown == 0 {
					fmt.Fprintln(out, "suggested (kule reveal add PATH):")
				}
				shown++
				fmt.Fprintf(out, "  %-30s named in %s\n", s.Rel, s.Manifest)
			}
			for _, e := range errs {
				fmt.Fprintf(cmd.ErrOrStderr(), "kule: %v\n", e)
			}
			return nil
		},
	}
	c.PersistentFlags().StringVar(&folder, "folder", "", "the folder (default: the current directory)")
	change := func(use, short string, add bool) *cobra.Command {
		return &cobra.Command{
			Use: use + " PATH", Short: short, Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				root, f, cfg, err := revealSetup(folder)
				if err != nil {
					return err
				}
				p := args[0]
				if !filepath.IsAbs(p) {
					p = filepath.Join(f, p)
				}
				p = filepath.Clean(p)
				if add {
					if real, err := filepath.EvalSymlinks(p); err != nil {
						return fmt.Errorf("reveal: %s: %w", args[0], err)
					} else {
						p = real
					}
					if p == f || strings.HasPrefix(f, p+"/") {
						return fmt.Errorf("reveal: %s contains the folder itself; reveal the project beside it instead", args[0])
					}
					if !cfg.Sandbox.AddReveal(f, p) {
						fmt.Fprintf(cmd.OutOrStdout(), "%s was already revealed\n", p)
						return nil
					}
				} else {
					if real, err := filepath.EvalSymlinks(p); err == nil && !contains(cfg.Sandbox.RevealsFor(f), p) {
						p = real
					}
					if !cfg.Sandbox.RemoveReveal(f, p) {
						return fmt.Errorf("reveal: %s is not revealed for %s (kule reveal lists what is)", args[0], f)
					}
				}
				if err := kernel.SaveSettings(root, cfg); err != nil {
					return err
				}
				verb := "revealed (read-only) to"
				if !add {
					verb = "hidden again from"
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s %s the tasks of %s\n", p, verb, f)
				return nil
			},
		}
	}
	c.AddCommand(change("add", "Open PATH read-only for this folder's tasks", true),
		change("remove", "Hide PATH again from this folder's tasks", false))
	return c
}

func revealSetup(folder string) (root, f string, cfg *kernel.Settings, err error) {
	if folder == "" {
		if folder, err = os.Getwd(); err != nil {
			return
		}
	}
	if f, err = filepath.Abs(folder); err != nil {
		return
	}
	if real, e := filepath.EvalSymlinks(f); e == nil {
		f = real
	}
	if root, err = kernel.DefaultHome(); err != nil {
		return
	}
	if err = os.MkdirAll(root, 0o700); err != nil {
		return
	}
	cfg, err = kernel.LoadSettings(root)
	return
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
