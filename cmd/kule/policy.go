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
	"github.com/kulehq/kule/kernel/config"
	"github.com/kulehq/kule/kernel/effects"
	"github.com/kulehq/kule/kernel/group"
	"github.com/kulehq/kule/kernel/policy"
	"github.com/kulehq/kule/kernel/task"
)

// kuleHome is $KULE_HOME, created if missing.
func kuleHome() (string, error) {
	root, err := task.DefaultRoot()
	if err != nil {
		return "", err
	}
	s, err := task.Open(root)
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

// loadPolicy reads the policy that judges a task's changes: the person's
// choice from config.toml, their policy.cedar, and the real folder's own
// .kule/policy.cedar (never the copy's).
func loadPolicy(home, folder string) (*policy.Engine, error) {
	cfg, err := config.Load(home)
	if err != nil {
		return nil, err
	}
	return policy.Load(home, folder, cfg.Policy.Choice)
}

// loadPolicyFor reads the policy of a task: its group's when its group has
// one of its own (kernel/group), else the home's for its folder.
func loadPolicyFor(home string, t *task.Task) (*policy.Engine, error) {
	cfg, err := config.Load(home)
	if err != nil {
		return nil, err
	}
	return group.Open(home).LoadPolicy(t.Group, t.Folder, cfg.Policy.Choice)
}

// taskInfo is what the policy knows of a task.
func taskInfo(t *task.Task) policy.TaskInfo {
	_, err := os.Lstat(filepath.Join(t.Folder, ".git"))
	return policy.TaskInfo{ID: t.ID, Group: t.Group, FolderIsGit: err == nil}
}

// judge rules on the effects a commit would apply.
func judge(home string, t *task.Task, pending []effects.Effect) (policy.Ruling, error) {
	eng, err := loadPolicyFor(home, t)
	if err != nil {
		return policy.Ruling{}, err
	}
	facts := policy.GatherFacts(t.Paths.Copy, t.Folder, pending)
	return eng.Judge(taskInfo(t), policy.FromEffects(pending, facts)), nil
}

// effectKey identifies an effect between a judgement and the commit.
func effectKey(e effects.Effect) string {
	return string(e.Kind) + "\x00" + e.Path + "\x00" + e.From
}

func printRuling(w io.Writer, r policy.Ruling) {
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
		ValidArgs: policy.Choices,
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			if schema {
				fmt.Fprint(out, policy.Schema())
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
			eng, err := loadPolicy(home, folder)
			if err != nil {
				return err
			}
			if ch := eng.Choice(); ch != "" {
				fmt.Fprintf(out, "policy: %s (built-in) · kule policy %s switches\n", ch, other(ch))
			} else {
				fmt.Fprintf(out, "policy: your own, %s (it replaces the built-ins)\n", policy.PersonPath(home))
			}
			fmt.Fprintf(out, "rules in force for %s, by id:\n", folder)
			remembered := 0
			for _, r := range eng.Rules() {
				if r.Layer == policy.LayerRemembered {
					remembered++
					continue
				}
				word := "pass"
				if r.Effect == "forbid" {
					word = map[policy.Outcome]string{policy.Ask: "ask", policy.Deny: "deny"}[r.Verdict]
				}
				where := string(r.Layer)
				if r.Layer != policy.LayerBuiltin {
					where += fmt.Sprintf(", line %d", r.Line)
				}
				line := fmt.Sprintf("  %-4s  %-26s %s", word, r.ID, where)
				if r.Reason != "" {
					line += " · " + r.Reason
				}
				fmt.Fprintln(out, line)
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
	if choice == policy.Careful {
		return policy.Balanced
	}
	return policy.Careful
}

func choosePolicy(out io.Writer, home, choice string) error {
	if _, err := policy.BuiltinText(choice); err != nil {
		return err
	}
	cfg, err := config.Load(home)
	if err != nil {
		return err
	}
	cfg.Policy.Choice = choice
	if err := config.Save(home, cfg); err != nil {
		return err
	}
	fmt.Fprintf(out, "policy: %s from now on\n", choice)
	if _, err := os.Lstat(policy.PersonPath(home)); err == nil {
		fmt.Fprintf(out, "note: %s replaces the built-ins; it still holds until you move it away\n", policy.PersonPath(home))
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
			rs, err := policy.ReadRemembered(home)
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
	c.AddCommand(rulesAllowCommand(), rulesForgetCommand())
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
			past, err := policy.WouldLet(home, folder, args[0])
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
			r, err := policy.AllowHost(home, folder, args[0])
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
			gone, err := policy.Forget(home, n)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "forgot: %s\n", gone.String())
			return nil
		},
	}
}

// policyCommit is a commit's ruling and what it lets the commit apply.
type policyCommit struct {
	ruling  policy.Ruling
	pending []effects.Effect
	approve bool
	allowed map[string]bool // by effectKey
}

// judgeCommit judges what a commit would apply. A policy that cannot be
// read stops the commit before anything is applied.
func judgeCommit(k *kernel.Kernel, t *task.Task, includeIgnored, approve bool) (*policyCommit, error) {
	st, err := k.Status(t)
	if err != nil {
		return nil, err
	}
	pending := st.Pending(includeIgnored)
	ruling, err := judge(k.Store.Root, t, pending)
	if err != nil {
		return nil, fmt.Errorf("commit: %w", err)
	}
	pc := &policyCommit{ruling: ruling, pending: pending, approve: approve, allowed: map[string]bool{}}
	for _, v := range ruling.Verdicts {
		e, ok := pc.effectOf(v)
		if ok && (v.Outcome == policy.Pass || (approve && v.Outcome == policy.Ask)) {
			pc.allowed[effectKey(e)] = true
		}
	}
	// An effect is applied only if every request about it lets it through
	// (today one request an effect; git's own requests will add more).
	for _, v := range ruling.Verdicts {
		if e, ok := pc.effectOf(v); ok && !(v.Outcome == policy.Pass || (approve && v.Outcome == policy.Ask)) {
			delete(pc.allowed, effectKey(e))
		}
	}
	return pc, nil
}

// effectOf is the effect a verdict is about, if it is about one.
func (pc *policyCommit) effectOf(v policy.Verdict) (effects.Effect, bool) {
	i := v.Request.Effect
	if i < 0 || i >= len(pc.pending) {
		return effects.Effect{}, false
	}
	return pc.pending[i], true
}

// selects is the commit's Select: only what the ruling lets through, and
// nothing it did not see (an effect that appeared since stays in the copy).
func (pc *policyCommit) selects(e effects.Effect) bool { return pc.allowed[effectKey(e)] }

// report says what the policy kept in the copy.
func (pc *policyCommit) report(w io.Writer, t *task.Task, applied []effects.Effect) {
	done := map[string]bool{}
	for _, e := range applied {
		done[effectKey(e)] = true
	}
	var waiting, denied, unseen []policy.Verdict
	for _, v := range pc.ruling.Verdicts {
		e, ok := pc.effectOf(v)
		if !ok || done[effectKey(e)] {
			continue
		}
		switch {
		case v.Outcome == policy.Deny:
			denied = append(denied, v)
		case v.Outcome == policy.Ask && !pc.approve:
			waiting = append(waiting, v)
		case pc.allowed[effectKey(e)]:
			unseen = append(unseen, v)
		}
	}
	list := func(vs []policy.Verdict) {
		for i, v := range vs {
			if i == 40 {
				fmt.Fprintf(w, "  … and %d more (kule status %s lists them)\n", len(vs)-40, t.ID)
				break
			}
			fmt.Fprintln(w, "  "+v.String())
		}
	}
	if len(waiting) > 0 {
		fmt.Fprintf(w, "policy: %d wait for approval and stay in the copy (kule commit %s --approve applies them):\n", len(waiting), t.ID)
		list(waiting)
	}
	if len(denied) > 0 {
		fmt.Fprintf(w, "policy: %d denied, never applied; they stay in the copy:\n", len(denied))
		list(denied)
	}
	if len(unseen) > 0 {
		fmt.Fprintf(w, "%d changed while the commit ran and stay in the copy (kule status %s, then commit again):\n", len(unseen), t.ID)
		list(unseen)
	}
}

// remember keeps the approvals of what asked and was applied.
func (pc *policyCommit) remember(w io.Writer, home string, t *task.Task, applied []effects.Effect) error {
	done := map[string]bool{}
	for _, e := range applied {
		done[effectKey(e)] = true
	}
	var approved []policy.Verdict
	skipped := 0
	for _, v := range pc.ruling.Verdicts {
		e, ok := pc.effectOf(v)
		if v.Outcome != policy.Ask || !ok || !done[effectKey(e)] {
			continue
		}
		if !v.Rememberable {
			skipped++
			continue
		}
		approved = append(approved, v)
	}
	added, notKept, err := policy.Remember(home, t.Folder, approved)
	if err != nil {
		return fmt.Errorf("the commit was applied, but %w", err)
	}
	fmt.Fprintf(w, "remembered %s for %s (kule rules lists them)\n", plural(len(added), "approval"), t.Folder)
	if skipped > 0 {
		fmt.Fprintf(w, "not remembered: %s (mass deletes, history rewrites, links and .kule/ always ask)\n", plural(skipped, "approval"))
	}
	for _, s := range notKept {
		fmt.Fprintf(w, "not remembered: %s (its name cannot be written as a rule)\n", effects.Quote(s))
	}
	return nil
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
