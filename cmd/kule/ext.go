package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kulehq/kule/cmd/internal/daemon/client"
	"github.com/kulehq/kule/extensions/skeleton"
	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/sdk/extension"
)

func extCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "ext",
		Short: "Make, pack, install, approve and run JavaScript extensions",
		Long: `Extensions are JavaScript, packed as .kulext files. An installed extension
runs only once you approve that exact package (kule ext show says what it
asks for and its sha256; kule ext approve); any change to it waits for your
approval again. Its code runs out of process, in the plugin sandbox, with
no network and no writes, and every call it makes into Kule is checked
against the permissions you approved.`,
	}
	c.AddCommand(extNewCommand(), extPackCommand(), extInstallCommand(), extListCommand(), extShowCommand(),
		extApproveCommand(), extDisableCommand(true), extDisableCommand(false), extRemoveCommand(), extRunCommand(), extDevCommand())
	return c
}

func extStore() (*kernel.ExtensionStore, string, error) {
	home, err := kernel.DefaultHome()
	if err != nil {
		return nil, "", err
	}
	return kernel.NewExtensionStore(home), home, nil
}

func extNewCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "new ID",
		Short: "Write a working extension skeleton into the folder ./ID",
		Long: `Writes ./ID with a manifest, a command, a panel, a review-notes hook and the
SDK's TypeScript declarations. ID is publisher.name (me.hello).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			m := extension.Manifest{ID: id, Name: "x", Version: "0.1.0"}
			if err := m.Validate(); err != nil {
				return fmt.Errorf("ext new: %q is not an extension id: publisher.name, lower-case letters, digits and '-' (me.hello)", id)
			}
			_, name, _ := strings.Cut(id, ".")
			name = strings.ToUpper(name[:1]) + name[1:]
			files, err := skeleton.Files(id, name)
			if err != nil {
				return err
			}
			if err := os.Mkdir(id, 0o755); err != nil {
				return fmt.Errorf("ext new: %w (nothing was written; pick another id or remove the folder)", err)
			}
			for rel, b := range files {
				if err := kernel.WriteFileAtomic(filepath.Join(id, rel), b, 0o644); err != nil {
					return fmt.Errorf("ext new: %w", err)
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s/ (extension.json, main.js, panel.html, panel.js, kule.d.ts)\nnext: kule ext pack %s && kule ext install %s-0.1.0.kulext\n", id, id, id)
			return nil
		},
	}
}

func extPackCommand() *cobra.Command {
	var out string
	c := &cobra.Command{
		Use:   "pack PATH",
		Short: "Pack the extension folder PATH into ID-VERSION.kulext",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, pkg, err := extension.Pack(args[0])
			if err != nil {
				return err
			}
			if out == "" {
				out = pkg.Manifest.FileName()
			}
			if err := kernel.WriteFileAtomic(out, data, 0o644); err != nil {
				return fmt.Errorf("ext pack: %w", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "packed %s %s into %s (%s, sha256 %s)\n", pkg.Manifest.ID, pkg.Manifest.Version, out, plural(len(pkg.Files), "file"), pkg.SHA256)
			return nil
		},
	}
	c.Flags().StringVarP(&out, "output", "o", "", "the file to write (ID-VERSION.kulext)")
	return c
}

func extInstallCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "install FILE.kulext",
		Short: "Install a .kulext into Kule's home; it waits for your approval",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, _, err := extStore()
			if err != nil {
				return err
			}
			f, err := os.Open(args[0])
			if err != nil {
				return fmt.Errorf("ext install: %w", err)
			}
			defer f.Close()
			data, err := io.ReadAll(io.LimitReader(f, extension.MaxPackageSize+1))
			if err != nil {
				return fmt.Errorf("ext install: %w", err)
			}
			pkg, err := s.Install(data)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "installed %s %s (sha256 %s); it waits for your approval: kule ext show %s, then kule ext approve %s\n",
				pkg.Manifest.ID, pkg.Manifest.Version, pkg.SHA256, pkg.Manifest.ID, pkg.Manifest.ID)
			return nil
		},
	}
}

func extState(st kernel.ExtensionStatus) string {
	switch {
	case !st.Approved:
		return "waits for approval: " + st.Reason
	case st.Disabled:
		return "approved, disabled"
	}
	return "approved"
}

func extListCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List installed extensions and whether they may run",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, _, err := extStore()
			if err != nil {
				return err
			}
			list, err := s.List()
			if err != nil {
				return err
			}
			if len(list) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no extensions installed (kule ext install FILE.kulext)")
				return nil
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tVERSION\tSTATE")
			for _, st := range list {
				fmt.Fprintf(w, "%s\t%s\t%s\n", st.Manifest.ID, st.Manifest.Version, extState(st))
			}
			return w.Flush()
		},
	}
}

func extShowCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "Show an extension's manifest, its permissions in words, its sha256 and approval",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, _, err := extStore()
			if err != nil {
				return err
			}
			st, err := s.Status(args[0])
			if err != nil {
				return err
			}
			printExtension(cmd.OutOrStdout(), st)
			return nil
		},
	}
}

func printExtension(out io.Writer, st kernel.ExtensionStatus) {
	m := st.Manifest
	fmt.Fprintf(out, "id:          %s\nname:        %s\nversion:     %s\n", m.ID, safeLine(m.Name), m.Version)
	if m.Description != "" {
		fmt.Fprintf(out, "description: %s\n", safeLine(m.Description))
	}
	fmt.Fprintf(out, "sha256:      %s\n", st.SHA256)
	fmt.Fprintln(out, "asks to:")
	if len(m.Permissions) == 0 {
		fmt.Fprintln(out, "  nothing")
	}
	for _, p := range m.Permissions {
		fmt.Fprintf(out, "  %-13s %s\n", p, p.Describe())
	}
	fmt.Fprintln(out, "never:       read secrets or answers, commit, roll back, undo, change policies or remembered rules, reach Kule's home or the network")
	for _, c := range m.Commands {
		fmt.Fprintf(out, "command:     %s.%s  %s\n", m.ID, c.ID, safeLine(c.Title))
	}
	for _, p := range m.Panels {
		fmt.Fprintf(out, "panel:       %s  %s\n", p.ID, safeLine(p.Title))
	}
	for _, t := range m.Themes {
		fmt.Fprintf(out, "theme:       %s  %s\n", t.ID, safeLine(t.Title))
	}
	for _, s := range m.Settings {
		fmt.Fprintf(out, "setting:     %s (%s)  %s\n", s.ID, s.Type, safeLine(s.Title))
	}
	if m.ReviewNotes {
		fmt.Fprintln(out, "review:      adds notes to reviews")
	}
	for _, p := range st.Parts {
		state := "waits for its own approval (kule ext approve " + m.ID + " --" + p.Kind + " " + p.Name + ")"
		if p.Kind == "agent" {
			state = "waits for its own approval, as any profile (kule agents show " + p.Name + ", then kule agents approve " + p.Name + ")"
		}
		if p.Approved {
			state = "approved"
		}
		fmt.Fprintf(out, "%-12s %s (sha256 %s): %s\n", map[string]string{"agent": "agent:", "mcp": "mcp server:"}[p.Kind], p.Name, p.SHA256[:12], state)
	}
	if st.Approved {
		fmt.Fprintf(out, "approved:    on %s\n", st.ApprovedAt.Format("2006-01-02 15:04 MST"))
	}
	fmt.Fprintf(out, "state:       %s\n", extState(st))
}

func extApproveCommand() *cobra.Command {
	var sum, agent, mcp string
	c := &cobra.Command{
		Use:   "approve ID",
		Short: "Approve an installed extension's exact package (or one of its agent profiles or MCP servers)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, _, err := extStore()
			if err != nil {
				return err
			}
			id := args[0]
			if agent != "" && mcp == "" {
				// The same act as kule agents approve, for this extension's profile only.
				set, home, err := loadAgents()
				if err != nil {
					return err
				}
				p, err := set.Get(agent)
				if err != nil {
					return err
				}
				if !strings.HasPrefix(p.Source, "extension "+id+" ") {
					return fmt.Errorf("ext approve: %s offers no agent profile %q (an approved, enabled extension's profiles are in kule agents)", id, agent)
				}
				if err := kernel.ApproveAgent(home, p, set.Profiles); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "approved agent profile %s of %s (sha256 %s); it runs until its profile changes\n", p.Name, id, p.Hash()[:16])
				return nil
			}
			if agent != "" || mcp != "" {
				kind, name := "agent", agent
				if mcp != "" {
					kind, name = "mcp", mcp
				}
				p, err := s.ApprovePart(id, kind, name)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "approved %s %s of %s (sha256 %s)\n", kind, p.Name, id, p.SHA256)
				return nil
			}
			st, err := s.Approve(id, sum)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "approved %s %s (sha256 %s); it runs from now on, until its package changes\n", st.Manifest.ID, st.Manifest.Version, st.SHA256)
			for _, p := range st.Parts {
				switch {
				case p.Approved:
				case p.Kind == "agent":
					fmt.Fprintf(cmd.OutOrStdout(), "its agent profile %s waits for its own approval, as any profile: kule agents show %s, then kule agents approve %s\n", p.Name, p.Name, p.Name)
				default:
					fmt.Fprintf(cmd.OutOrStdout(), "its %s %s waits for its own approval: kule ext approve %s --%s %s\n", p.Kind, p.Name, id, p.Kind, p.Name)
				}
			}
			return nil
		},
	}
	c.Flags().StringVar(&sum, "sha256", "", "approve only if the package still has this sha256 (the one kule ext show printed)")
	c.Flags().StringVar(&agent, "agent", "", "approve the extension's agent profile NAME: as any profile (the same as kule agents approve NAME)")
	c.Flags().StringVar(&mcp, "mcp", "", "approve the extension's MCP server NAME")
	return c
}

func extDisableCommand(disable bool) *cobra.Command {
	use, short, done := "enable ID", "Enable a disabled extension", "enabled"
	if disable {
		use, short, done = "disable ID", "Disable an extension; its approval stays", "disabled"
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, _, err := extStore()
			if err != nil {
				return err
			}
			if err := s.SetDisabled(args[0], disable); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", done, args[0])
			return nil
		},
	}
}

func extRemoveCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "remove ID",
		Short: "Uninstall an extension and forget its approvals",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, _, err := extStore()
			if err != nil {
				return err
			}
			if err := s.Remove(args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed %s and forgot its approvals\n", args[0])
			return nil
		},
	}
}

// extRunner starts extensions on home in the plugin sandbox; their notices
// go to w.
func extRunner(k *kernel.Kernel, home string, w io.Writer) *kernel.ExtensionRunner {
	return &kernel.ExtensionRunner{
		Store:    kernel.NewExtensionStore(home),
		Launch:   kernel.ExtensionHostLauncher(pluginHost(home)),
		Services: k.ExtensionServices(func(ext, text string) { fmt.Fprintf(w, "%s: %s\n", ext, safeLine(text)) }),
	}
}

func extRunCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "run ID.COMMAND [ARGS...]",
		Short: "Run an approved extension's command",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			i := strings.LastIndex(args[0], ".")
			if i <= 0 {
				return fmt.Errorf("ext run: %q is not ID.COMMAND (kule ext show ID lists its commands)", args[0])
			}
			id, command := args[0][:i], args[0][i+1:]
			k, err := openKernel()
			if err != nil {
				return err
			}
			r := extRunner(k, k.Home(), cmd.ErrOrStderr())
			x, err := r.Start(cmd.Context(), id)
			if err != nil {
				return err
			}
			defer x.Close()
			rest := args[1:]
			if rest == nil {
				rest = []string{}
			}
			a, _ := json.Marshal(rest)
			v, err := x.Run(cmd.Context(), command, a)
			if err != nil {
				return err
			}
			var s string
			if json.Unmarshal(v, &s) == nil {
				fmt.Fprintln(cmd.OutOrStdout(), safeText(s))
				return nil
			}
			fmt.Fprintln(cmd.OutOrStdout(), safeText(string(v)))
			return nil
		},
	}
}

// reviewNotes asks every approved, enabled extension with a review-notes
// hook for its notes on st. An extension that fails costs its own notes
// only, and says why in the warnings.
func reviewNotes(ctx context.Context, k *kernel.Kernel, st *kernel.Status, names kernel.Names) (notes []kernel.ExtensionNote, warnings []string) {
	s := kernel.NewExtensionStore(k.Home())
	list, err := s.List()
	if err != nil {
		return nil, []string{"extensions: " + err.Error()}
	}
	hooks := 0
	for _, e := range list {
		if e.Approved && !e.Disabled && e.Manifest.ReviewNotes {
			hooks++
		}
	}
	if hooks == 0 {
		return nil, nil
	}
	// A running daemon keeps the extensions' hosts: ask it, and pay the
	// hooks alone. Without one (or if it cannot answer) each host starts
	// here, for this command.
	if cl := client.New(k.Home()); cl.Running(ctx) {
		var out struct {
			Notes    []kernel.ExtensionNote `json:"notes"`
			Warnings []string               `json:"warnings"`
		}
		err := cl.Do(ctx, "POST", "/api/tasks/"+st.Task.ID+"/notes", map[string]any{"names": kernel.EntityNames(names)}, &out)
		if err == nil {
			return out.Notes, out.Warnings
		}
	}
	var r *kernel.ExtensionRunner
	for _, e := range list {
		if !e.Approved || e.Disabled || !e.Manifest.ReviewNotes {
			continue
		}
		if r == nil {
			r = extRunner(k, k.Home(), io.Discard)
		}
		x, err := r.Start(ctx, e.Manifest.ID)
		if err != nil {
			warnings = append(warnings, err.Error())
			continue
		}
		ns, dropped, err := x.ReviewNotes(ctx, kernel.ExtensionReviewOf(st, kernel.EntityNames(names)))
		x.Close()
		if err != nil {
			warnings = append(warnings, err.Error())
			continue
		}
		if dropped > 0 {
			warnings = append(warnings, fmt.Sprintf("%s: %s dropped (a path outside the review, or text too long or not printable)", e.Manifest.ID, plural(dropped, "note")))
		}
		notes = append(notes, ns...)
	}
	return notes, warnings
}

// printReviewNotes prints extensions' notes after a status.
func printReviewNotes(w io.Writer, notes []kernel.ExtensionNote, warnings []string) {
	if len(notes) > 0 {
		fmt.Fprintln(w, "notes from extensions:")
	}
	for _, n := range notes {
		where := n.Path
		if n.Entity != "" {
			where += " (" + n.Entity + ")"
		}
		fmt.Fprintf(w, "  %s: %s  [%s]\n", safeLine(where), safeLine(n.Text), n.Extension)
	}
	for _, m := range warnings {
		fmt.Fprintln(w, "note: extensions: "+safeLine(m))
	}
}
