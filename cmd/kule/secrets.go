package main

import (
	"errors"
	"fmt"
	"github.com/kulehq/kule/kernel"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

func openSecrets() (*kernel.SecretStore, error) {
	root, err := kernel.DefaultHome()
	if err != nil {
		return nil, err
	}
	return kernel.OpenSecrets(root)
}

func secretsCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "secrets",
		Short: "Keep secrets that commands use through placeholders, never seeing the values",
	}
	c.AddCommand(secretsAddCommand(), secretsListCommand(), secretsRemoveCommand())
	return c
}

// readValue reads a secret's value without echo from a terminal, or whole
// from a pipe (one trailing newline dropped). Never from an argument.
func readValue(cmd *cobra.Command, name string) (string, error) {
	in := cmd.InOrStdin()
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		// Echo goes off before the prompt shows, so a value typed (or
		// pasted) the moment the prompt appears is never echoed.
		fd := int(f.Fd())
		restore := echoOff(fd)
		fmt.Fprintf(cmd.ErrOrStderr(), "Value of %s (not shown): ", name)
		b, err := term.ReadPassword(fd)
		restore()
		fmt.Fprintln(cmd.ErrOrStderr())
		if err != nil {
			return "", fmt.Errorf("secrets add: read the value: %w", err)
		}
		return string(b), nil
	}
	b, err := io.ReadAll(io.LimitReader(in, 1<<20+1))
	if err != nil {
		return "", fmt.Errorf("secrets add: read the value: %w", err)
	}
	if len(b) > 1<<20 {
		return "", errors.New("secrets add: the value is over 1 MiB; nothing was kept")
	}
	s := strings.TrimSuffix(string(b), "\n")
	return strings.TrimSuffix(s, "\r"), nil
}

func secretsAddCommand() *cobra.Command {
	var hosts []string
	c := &cobra.Command{
		Use:   "add NAME --host HOST [--host HOST]",
		Short: "Keep a secret for the hosts it may be sent to; the value is read without echo or from a pipe",
		Long: "Keep a secret. The value is typed without echo, or piped in (`pass show x | kule secrets add X --host h`);\n" +
			"it is never taken from an argument, where it would land in the shell's history.\n" +
			"Commands in a task see a placeholder in $NAME; the task's proxy puts the value into\n" +
			"credential headers of requests to the hosts named here, and nowhere else.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(hosts) == 0 {
				return fmt.Errorf("%w; name each host the secret may be sent to", kernel.ErrNoSecretHost)
			}
			for _, h := range hosts {
				if _, err := kernel.CheckSecretHost(h); err != nil {
					return err
				}
			}
			st, err := openSecrets()
			if err != nil {
				return err
			}
			value, err := readValue(cmd, args[0])
			if err != nil {
				return err
			}
			replaced, err := st.Add(args[0], value, hosts)
			if err != nil {
				return err
			}
			verb := "kept"
			if replaced {
				verb = "replaced"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s for %s (sealed with the %s)\n", verb, args[0], strings.Join(hosts, ", "), st.Sealer().Describe())
			return nil
		},
	}
	c.Flags().StringArrayVar(&hosts, "host", nil, "a host the secret may be sent to (repeat for more)")
	return c
}

func secretsListCommand() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List kept secrets (names and hosts, never values) and how they are sealed",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := openSecrets()
			if err != nil {
				return err
			}
			list, err := st.List()
			if err != nil {
				return err
			}
			if asJSON {
				type item struct {
					Name  string   `json:"name"`
					Hosts []string `json:"hosts"`
					Added string   `json:"added"`
				}
				out := struct {
					Sealing string `json:"sealing"`
					Sealed  string `json:"sealed_with"`
					Secrets []item `json:"secrets"`
				}{Sealing: st.Sealer().Kind(), Sealed: st.Sealer().Describe(), Secrets: []item{}}
				for _, s := range list {
					out.Secrets = append(out.Secrets, item{s.Name, s.Hosts, s.Added.Format("2006-01-02T15:04:05Z")})
				}
				return printJSON(cmd.OutOrStdout(), out)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "sealed with the %s\n", st.Sealer().Describe())
			if len(list) == 0 {
				fmt.Fprintln(w, "no secrets kept; add one with `kule secrets add NAME --host HOST`")
			}
			for _, s := range list {
				fmt.Fprintf(w, "%-24s %s  (added %s)\n", s.Name, strings.Join(s.Hosts, ", "), s.Added.Format("2006-01-02"))
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func secretsRemoveCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "remove NAME",
		Short: "Forget a secret",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := openSecrets()
			if err != nil {
				return err
			}
			if err := st.Remove(args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed %s\n", args[0])
			return nil
		},
	}
}

// echoOff turns the terminal's echo off and returns what turns it back on.
func echoOff(fd int) func() {
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return func() {}
	}
	quiet := *old
	quiet.Lflag &^= unix.ECHO
	if unix.IoctlSetTermios(fd, unix.TCSETS, &quiet) != nil {
		return func() {}
	}
	return func() { _ = unix.IoctlSetTermios(fd, unix.TCSETS, old) }
}
