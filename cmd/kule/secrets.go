package main

import (
	"errors"
	"fmt"
	"github.com/kulehq/kule/kernel"
	"io"
	"net"
	"os"
	"strings"
	"time"

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
	c.AddCommand(secretsAddCommand(), secretsListCommand(), secretsRemoveCommand(), secretsLeasesCommand(), secretsGrantCommand())
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
	var lease time.Duration
	var renew int
	var mint, revoke string
	c := &cobra.Command{
		Use:   "add NAME --host HOST [--host HOST]",
		Short: "Keep a secret for the hosts it may be sent to; the value is read without echo or from a pipe",
		Long: "Keep a secret. The value is typed without echo, or piped in (`pass show x | kule secrets add X --host h`);\n" +
			"it is never taken from an argument, where it would land in the shell's history.\n" +
			"Commands in a task see a placeholder in $NAME; the task's proxy puts the value into\n" +
			"credential headers of requests to the hosts named here, and nowhere else.\n\n" +
			"With --lease a task holds the secret only as a lease: the proxy puts it in while the\n" +
			"lease is valid, Kule renews it on its own up to --renew times, and once that budget is\n" +
			"spent the proxy refuses (nothing is sent) until a person grants more. With --mint CMD\n" +
			"nothing is stored: each lease runs CMD (outside every sandbox, as you) for a token of\n" +
			"its own from its first line, and --revoke CMD (the token on its stdin and in\n" +
			"$KULE_LEASE_TOKEN) when the lease ends or is renewed. `kule secrets leases` lists them.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(hosts) == 0 {
				return fmt.Errorf("%w; name each host the secret may be sent to", kernel.ErrNoSecretHost)
			}
			for _, h := range hosts {
				if ip := net.ParseIP(strings.Trim(strings.TrimSpace(h), "[]")); ip != nil {
					return fmt.Errorf("secrets: --host %s is an address: the proxy puts a secret in only where it reads the request inside TLS, and the run's certificate authority signs no certificate for an address, so %s could never be sent there; name the host by its DNS name, or for a model on this machine point the agent at it (kule agents set NAME base_url=http://%s:PORT), which keeps its key for that endpoint (nothing was kept)", h, args[0], h)
				}
				if _, err := kernel.CheckSecretHost(h); err != nil {
					return err
				}
			}
			if lease == 0 && (mint != "" || revoke != "" || cmd.Flags().Changed("renew")) {
				return fmt.Errorf("secrets add: --mint, --revoke and --renew go with --lease DURATION (nothing was kept)")
			}
			if revoke != "" && mint == "" {
				return fmt.Errorf("secrets add: --revoke goes with --mint: a kept value is not revoked by Kule (nothing was kept)")
			}
			st, err := openSecrets()
			if err != nil {
				return err
			}
			value := ""
			if mint == "" {
				if value, err = readValue(cmd, args[0]); err != nil {
					return err
				}
			}
			var replaced bool
			if lease > 0 {
				replaced, err = st.AddLeased(args[0], value, hosts, kernel.LeaseSpec{Every: lease, Renewals: renew, Mint: mint, Revoke: revoke})
			} else {
				replaced, err = st.Add(args[0], value, hosts)
			}
			if err != nil {
				return err
			}
			verb := "kept"
			if replaced {
				verb = "replaced"
			}
			how := ""
			if lease > 0 {
				how = fmt.Sprintf("; leased %s at a time, renewed up to %s", lease, plural(renew, "time"))
				if mint != "" {
					how += ", minted for each lease"
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s for %s (sealed with the %s%s)\n", verb, args[0], strings.Join(hosts, ", "), st.Sealer().Describe(), how)
			return nil
		},
	}
	c.Flags().StringArrayVar(&hosts, "host", nil, "a host the secret may be sent to (repeat for more)")
	c.Flags().DurationVar(&lease, "lease", 0, "hold the secret only as a lease this long (e.g. 1h)")
	c.Flags().IntVar(&renew, "renew", 0, "renewals Kule may make on its own before it asks (with --lease)")
	c.Flags().StringVar(&mint, "mint", "", "a command that prints a fresh token for each lease (nothing is stored)")
	c.Flags().StringVar(&revoke, "revoke", "", "a command that revokes a minted token given on its stdin")
	return c
}

func secretsLeasesCommand() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "leases",
		Short: "List the leases held now: which task holds which secret until when, and the budget left",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			k, err := openKernel()
			if err != nil {
				return err
			}
			list, err := k.Leases()
			if err != nil {
				return err
			}
			if asJSON {
				if list == nil {
					list = []kernel.Lease{}
				}
				return printJSON(cmd.OutOrStdout(), list)
			}
			w := cmd.OutOrStdout()
			if len(list) == 0 {
				fmt.Fprintln(w, "no leases held")
				return nil
			}
			for _, l := range list {
				state := "held"
				if !kernel.LeaseHolderAlive(l) {
					state = "orphaned (its holder is gone; the daemon revokes it at its next start)"
				}
				fmt.Fprintf(w, "%-20s task %s · until %s · %s left · %s\n", l.Secret, l.Holder, l.Expires.Local().Format("2006-01-02 15:04"), plural(l.Left, "renewal"), state)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
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

func secretsGrantCommand() *cobra.Command {
	var renew int
	c := &cobra.Command{
		Use:   "grant TASK NAME --renew N",
		Short: "Give a task's lease of a secret N more renewals (the answer to a spent lease)",
		Args:  cobra.ExactArgs(2),
		RunE: withTask(func(k *kernel.Kernel, t *kernel.Task, cmd *cobra.Command, args []string) error {
			n, err := k.GrantLease(t, args[1], renew)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "granted %s of %s to task %s (%s held now)\n", count(renew, "more renewal", "more renewals"), args[1], t.ID, plural(n, "lease"))
			return nil
		}),
	}
	c.Flags().IntVar(&renew, "renew", 1, "how many renewals to add")
	return c
}
