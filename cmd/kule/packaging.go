package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// packagingCommand writes what the packages install beside the binary:
// a man page for every command (man/kule-*.1) and the shell completions
// (completions/kule.bash, _kule, kule.fish). make dist runs it; the
// output depends on the command tree alone (no dates), so two builds
// give the same bytes.
func packagingCommand() *cobra.Command {
	return &cobra.Command{
		Use:    "__packaging DIR",
		Short:  "Write man pages and shell completions into DIR (make dist runs it)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return writePackaging(cmd.Root(), args[0])
		},
	}
}

func writePackaging(root *cobra.Command, dir string) error {
	for _, d := range []string{"man", "completions"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	var werr error
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || (!c.IsAvailableCommand() && c != root) || werr != nil {
			return
		}
		name := strings.ReplaceAll(c.CommandPath(), " ", "-")
		werr = os.WriteFile(filepath.Join(dir, "man", name+".1"), manPage(c), 0o644)
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	if werr != nil {
		return werr
	}
	var b bytes.Buffer
	if err := root.GenBashCompletionV2(&b, true); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "completions", "kule.bash"), b.Bytes(), 0o644); err != nil {
		return err
	}
	b.Reset()
	if err := root.GenZshCompletion(&b); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "completions", "_kule"), b.Bytes(), 0o644); err != nil {
		return err
	}
	b.Reset()
	if err := root.GenFishCompletion(&b, true); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "completions", "kule.fish"), b.Bytes(), 0o644)
}

// roff escapes text for a man page: backslashes, and a line that would
// start with a control character.
func roff(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
			lines[i] = `\&` + l
		}
	}
	return strings.Join(lines, "\n")
}

// manPage is c's man page in roff: name, synopsis, description, options,
// examples and the related pages.
func manPage(c *cobra.Command) []byte {
	var b strings.Builder
	name := strings.ReplaceAll(c.CommandPath(), " ", "-")
	fmt.Fprintf(&b, ".TH %s 1 \"\" \"kule %s\" \"Kule Manual\"\n", strings.ToUpper(name), roff(currentVersion().Version))
	fmt.Fprintf(&b, ".SH NAME\n%s \\- %s\n", roff(name), roff(c.Short))
	use := c.UseLine()
	fmt.Fprintf(&b, ".SH SYNOPSIS\n.nf\n\\fB%s\\fR\n.fi\n", roff(use))
	desc := c.Long
	if desc == "" {
		desc = c.Short
	}
	fmt.Fprintf(&b, ".SH DESCRIPTION\n.nf\n%s\n.fi\n", roff(desc))
	var flags []*pflag.Flag
	c.NonInheritedFlags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			flags = append(flags, f)
		}
	})
	if len(flags) > 0 {
		b.WriteString(".SH OPTIONS\n")
		for _, f := range flags {
			head := "--" + f.Name
			if f.Shorthand != "" {
				head = "-" + f.Shorthand + ", " + head
			}
			if f.Value.Type() != "bool" {
				head += " " + strings.ToUpper(f.Value.Type())
			}
			fmt.Fprintf(&b, ".TP\n\\fB%s\\fR\n%s\n", roff(head), roff(f.Usage))
		}
	}
	if c.Example != "" {
		fmt.Fprintf(&b, ".SH EXAMPLES\n.nf\n%s\n.fi\n", roff(c.Example))
	}
	var see []string
	if c.HasParent() {
		see = append(see, strings.ReplaceAll(c.Parent().CommandPath(), " ", "-")+"(1)")
	}
	for _, s := range c.Commands() {
		if s.IsAvailableCommand() {
			see = append(see, strings.ReplaceAll(s.CommandPath(), " ", "-")+"(1)")
		}
	}
	sort.Strings(see)
	if len(see) > 0 {
		fmt.Fprintf(&b, ".SH SEE ALSO\n%s\n", roff(strings.Join(see, ", ")))
	}
	return []byte(b.String())
}
