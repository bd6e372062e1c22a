package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kulehq/kule/kernel"
)

// kuleHome is $KULE_HOME, created if missing.
func kuleHome() (string, error) {
	root, err := kernel.DefaultHome()
	if err != nil {
		return "", err
	}
	s, err := kernel.OpenTasks(root)
	if err != nil {
		return "", err
	}
	return s.Root, nil
}

// folderArg is the folder a policy command is about: --folder, or the
// current directory, absolute with links resolved (as tasks keep it).
func folderArg(f string) (string, error) {
	if f == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		f = wd
	}
	abs, err := filepath.Abs(f)
	if err != nil {
		return "", err
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	return abs, nil
}

func printRuling(w io.Writer, r kernel.Ruling) {
	for _, l := range r.Summary() {
		fmt.Fprintln(w, l)
	}
}

func policyCommand() *cobra.Command {
	var folderFlag string
	var schema bool
	c := &cobra.Command{
		Use:   "policy [balanced|careful]",
		Short: "Show the rules that judge changes and connections, or choose a built-in policy",
		Long: `kule policy prints the rules in force for a folder, by id, and the layer
each comes from. kule policy balanced|careful chooses the built-in policy
(stored in config.toml). A policy of your own in $KULE_HOME/policy.cedar
replaces the built-ins; Kule never writes that file.`,
		Args:      cobra.MaximumNArgs(1),
		ValidArgs: kernel.PolicyChoices,
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			if schema {
				fmt.Fprint(out, kernel.PolicySchema())
				return nil
			}
			home, err := kuleHome()
			if err != nil {
				return err
			}
			if len(args) == 1 {
				return choosePolicy(out, home, args[0])
			}
			folder, err := folderArg(folderFlag)
			if err != nil {
				return err
			}
			k, err := openKernel()
			if err != nil {
				return err
			}
			eng, err := k.LoadPolicy(folder)
			if err != nil {
				return err
			}
			if ch := eng.Choice(); ch != "" {
				fmt.Fprintf(out, "policy: %s (built-in) · kule policy %s switches\n", ch, other(ch))
			} else {
				fmt.Fprintf(out, "policy: your own, %s (it replaces the built-ins)\n", kernel.PersonPolicyPath(home))
			}
			fmt.Fprintf(out, "rules in force for %s, by id:\n", folder)
			remembered, massDeletes := 0, false
			for _, r := range eng.Rules() {
				massDeletes = massDeletes || r.ID == "mass-deletes"
				if r.Layer == kernel.LayerRemembered {
					remembered++
					continue
				}
				word := "pass"
				if r.Effect == "forbid" {
					word = map[kernel.Outcome]string{kernel.Ask: "ask", kernel.Deny: "deny"}[r.Verdict]
				}
				where := string(r.Layer)
				if r.Layer != kernel.LayerBuiltin {
					where += fmt.Sprintf(", line %d", r.Line)
				}
				line := fmt.Sprintf("  %-4s  %-26s %s", word, r.ID, where)
				if r.Reason != "" {
					line += " · " + r.Reason
				}
				fmt.Fprintln(out, line)
			}
			if massDeletes {
				fmt.Fprintln(out, "mass-deletes counts the files a task deletes or truncates (leaves with less than a tenth of their size) over all its commits, since it was made or a mass delete of it was last approved")
			}
			fmt.Fprintf(out, "remembered approvals for this folder: %d (kule rules lists them)\n", remembered)
			return nil
		},
	}
	c.Flags().StringVar(&folderFlag, "folder", "", "the folder whose rules to show (default: the current directory)")
	c.Flags().BoolVar(&schema, "schema", false, "print the Cedar schema a policy is checked against")
	return c
}

func other(choice string) string {
	if choice == kernel.PolicyCareful {
		return kernel.PolicyBalanced
	}
	return kernel.PolicyCareful
}

func choosePolicy(out io.Writer, home, choice string) error {
	if _, err := kernel.BuiltinPolicyText(choice); err != nil {
		return err
	}
	cfg, err := kernel.LoadSettings(home)
	if err != nil {
		return err
	}
	cfg.Policy.Choice = choice
	if err := kernel.SaveSettings(home, cfg); err != nil {
		return err
	}
	fmt.Fprintf(out, "policy: %s from now on\n", choice)
	if _, err := os.Lstat(kernel.PersonPolicyPath(home)); err == nil {
		fmt.Fprintf(out, "note: %s replaces the built-ins; it still holds until you move it away\n", kernel.PersonPolicyPath(home))
	}
	return nil
}

func rulesCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "rules",
		Short: "List the approvals Kule remembered, numbered",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			home, err := kuleHome()
			if err != nil {
				return err
			}
			rs, err := kernel.ReadRemembered(home)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if len(rs) == 0 {
				fmt.Fprintln(out, "no remembered approvals (kule commit --approve --remember and kule rules allow add them)")
				return nil
			}
			for _, r := range rs {
				fmt.Fprintln(out, r.String())
			}
			return nil
		},
	}
	c.AddCommand(rulesAllowCommand(), rulesForgetCommand(), rulesProposalsCommand(), rulesAcceptCommand())
	return c
}

func rulesAllowCommand() *cobra.Command {
	var yes bool
	var folderFlag string
	c := &cobra.Command{
		Use:   "allow HOST:PORT",
		Short: "Let connections to HOST:PORT pass for a folder's tasks (first shows what it would have let through)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			home, err := kuleHome()
			if err != nil {
				return err
			}
			folder, err := folderArg(folderFlag)
			if err != nil {
				return err
			}
			past, err := kernel.WouldLet(home, folder, args[0])
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if len(past) == 0 {
				fmt.Fprintf(out, "no past task on %s was stopped connecting to %s\n", folder, args[0])
			} else {
				fmt.Fprintf(out, "this allowance would have let through, in past tasks on %s:\n", folder)
				for _, p := range past {
					word := "connections"
					if p.Count == 1 {
						word = "connection"
					}
					fmt.Fprintf(out, "  task %s · %d %s (%s … %s, last %s)\n", p.Task, p.Count, word, p.First, p.Last, p.Verdict)
				}
			}
			if !yes {
				fmt.Fprintf(out, "nothing was kept; kule rules allow %s --yes keeps it\n", args[0])
				return nil
			}
			r, err := kernel.AllowHost(home, folder, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "kept: %s\n", r.String())
			return nil
		},
	}
	c.Flags().BoolVar(&yes, "yes", false, "keep the allowance")
	c.Flags().StringVar(&folderFlag, "folder", "", "the folder whose tasks it holds for (default: the current directory)")
	return c
}

func rulesForgetCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "forget N",
		Short: "Take back remembered approval number N (as kule rules numbers them)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := strconv.Atoi(strings.TrimSpace(args[0]))
			if err != nil {
				return fmt.Errorf("rules forget: %q is not a number (kule rules lists them)", args[0])
			}
			home, err := kuleHome()
			if err != nil {
				return err
			}
			gone, err := kernel.Forget(home, n)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "forgot: %s\n", gone.String())
			return nil
		},
	}
}

// printHeld says what the policy kept in the copy at a commit.
func printHeld(w io.Writer, t *kernel.Task, j *kernel.Judgement, applied []kernel.Effect) {
	if j == nil {
		return
	}
	waiting, denied := j.Held(applied)
	gitWaiting, gitDenied := j.GitHeld()
	list := func(vs []kernel.Verdict, git []kernel.GitItem) {
		n := 0
		for _, v := range vs {
			if v.Request.Effect < 0 {
				continue // a repository's item, listed below by its line
			}
			if n++; n > 40 {
				fmt.Fprintf(w, "  … and more (kule status %s lists them)\n", t.ID)
				break
			}
			fmt.Fprintln(w, "  "+safeLine(v.String()))
		}
		for _, it := range git {
			line := "  " + it.Line + " · " + it.Verdict.Outcome.String()
			if len(it.Verdict.Rules) > 0 {
				line += " (" + strings.Join(it.Verdict.Rules, ", ") + ")"
			}
			if it.Verdict.Reason != "" {
				line += ": " + it.Verdict.Reason
			}
			fmt.Fprintln(w, line)
		}
	}
	if len(waiting) > 0 {
		fmt.Fprintf(w, "policy: %d wait for approval and stay in the copy (kule commit %s --approve applies them):\n", len(waiting), t.ID)
		list(waiting, gitWaiting)
	}
	if len(denied) > 0 {
		fmt.Fprintf(w, "policy: %d denied, never applied; they stay in the copy:\n", len(denied))
		list(denied, gitDenied)
	}
}

// printRemembered says what --remember kept.
func printRemembered(w io.Writer, t *kernel.Task, r *kernel.Remembered) {
	fmt.Fprintf(w, "remembered %s for %s (kule rules lists them)\n", plural(r.Added, "approval"), t.Folder)
	if r.Skipped > 0 {
		fmt.Fprintf(w, "not remembered: %s (mass deletes, history rewrites, links and .kule/ always ask)\n", plural(r.Skipped, "approval"))
	}
	for _, s := range r.NotKept {
		fmt.Fprintf(w, "not remembered: %s (its name cannot be written as a rule)\n", kernel.QuotePath(s))
	}
}

func plural(n int, word string) string { return count(n, word, word+"s") }

// count says n with the word that agrees with it: "1 entry", "2 entries".
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func rulesProposalsCommand() *cobra.Command {
	var asJSON bool
	var folderFlag string
	c := &cobra.Command{
		Use:   "proposals",
		Short: "List the questions Kule proposes to ask no more, with the evidence it saw",
		Long: `kule rules proposals lists the categories (an asking rule on a folder, or on one host or
file) whose changes you approved in runs that Kule saw succeed, whose commits were kept,
often enough, in enough tasks and over long enough ([graduation] in config.toml; by default
5 successes in 3 tasks over 7 days, each commit kept a day). Nothing changes until you run
kule rules accept ID. It also says which categories a failure demoted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			k, err := openKernel()
			if err != nil {
				return err
			}
			defer k.CloseMemory()
			folder := ""
			if folderFlag != "" {
				if folder, err = folderArg(folderFlag); err != nil {
					return err
				}
			}
			rep, err := k.ReviewGraduation(cmd.Context(), folder)
			if err != nil {
				return err
			}
			if asJSON {
				out := struct {
					Proposals []kernel.GraduationProposal `json:"proposals"`
					Demotions []kernel.GraduationDemotion `json:"demotions"`
				}{append([]kernel.GraduationProposal{}, rep.Proposals...), append([]kernel.GraduationDemotion{}, rep.Demotions...)}
				return printJSON(cmd.OutOrStdout(), out)
			}
			w := cmd.OutOrStdout()
			for _, d := range rep.Demotions {
				fmt.Fprintln(w, "demoted: "+safeLine(d.Line()))
			}
			if len(rep.Proposals) == 0 {
				fmt.Fprintln(w, "no proposals: no category has met the thresholds yet")
				return nil
			}
			for _, p := range rep.Proposals {
				fmt.Fprintln(w, safeLine(p.Line()))
				for _, e := range p.Evidence {
					fmt.Fprintf(w, "  run %d · task %s · ended %s · committed %s, kept since\n", e.Run, e.Task, e.Ended.Local().Format("2006-01-02 15:04"), e.Kept.Local().Format("2006-01-02 15:04"))
				}
				fmt.Fprintf(w, "  kule rules accept %s makes it a remembered rule: %s\n", p.ID, safeLine(p.Scope()))
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	c.Flags().StringVar(&folderFlag, "folder", "", "only this folder's categories (default: every folder)")
	return c
}

func rulesAcceptCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "accept ID",
		Short: "Make a graduation proposal a remembered rule (kule rules proposals lists them)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, err := openKernel()
			if err != nil {
				return err
			}
			defer k.CloseMemory()
			p, r, err := k.AcceptGraduation(cmd.Context(), strings.TrimSpace(args[0]))
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "kept: %s\n", safeLine(r.String()))
			fmt.Fprintln(w, safeLine(p.Scope()))
			fmt.Fprintf(w, "from %s in %s since %s; one failure in %s withdraws it (kule rules forget %d takes it back now)\n",
				count(p.Successes, "success", "successes"), plural(p.Tasks, "task"), p.Since.Local().Format("2006-01-02"), safeLine(p.Category.String()), r.N)
			return nil
		},
	}
}
