package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kulehq/kule/kernel"
)

func homeCommand() *cobra.Command {
	var all bool
	c := &cobra.Command{
		Use:   "home TASK [diff PATH | apply PATH | undo [AGENT:] | discard --all]",
		Short: "Review what the task's commands wrote in your home and its agents' (caught, never applied by commit)",
		Long: `Review what the task's commands wrote in your home (caught, never applied by commit).

What a run changed of its agent's instructions or settings in the agent's
home is kept aside the same way, and named AGENT:PATH (claude-code:settings.json):
diff shows it against the home Kule keeps for the agent, apply puts it there
for the agent's next runs, undo AGENT: takes the last such apply back.`,
		Args: cobra.RangeArgs(1, 3),
		RunE: withTask(func(k *kernel.Kernel, t *kernel.Task, cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			layer := kernel.HomeLayer(t)
			verb := ""
			if len(args) > 1 {
				verb = args[1]
			}
			arg := func() (string, error) {
				if len(args) < 3 {
					return "", fmt.Errorf("home: %s needs a path, e.g. kule home %s %s ~/.zshrc", verb, t.ID, verb)
				}
				p := strings.TrimPrefix(args[2], "~/")
				if filepath.IsAbs(p) { // the shell expanded ~
					home, _ := os.UserHomeDir()
					rel, err := filepath.Rel(home, p)
					if err != nil || strings.HasPrefix(rel, "..") {
						return "", fmt.Errorf("home: %s is not in your home", args[2])
					}
					p = rel
				}
				return filepath.ToSlash(filepath.Clean(p)), nil
			}
			agent, rel, isAgent := "", "", false
			if len(args) == 3 {
				agent, rel, isAgent = agentPath(t, args[2])
				if isAgent && verb != "undo" && (rel == "" || !filepath.IsLocal(rel)) {
					return fmt.Errorf("home: %s needs a path in %s's home, e.g. kule home %s %s %s:settings.json", verb, agent, t.ID, verb, agent)
				}
			}
			switch verb {
			case "":
				ch, err := kernel.HomeChanges(layer)
				if err != nil {
					return err
				}
				ach, aerr := kernel.AgentChanges(t)
				if len(ch) == 0 && len(ach) == 0 && aerr == nil {
					fmt.Fprintf(out, "task %s wrote nothing in your home: nothing to review\n", t.ID)
					return nil
				}
				v, err := homeVerdicts(k, t, ch)
				printHome(out, ch, v)
				if err != nil {
					fmt.Fprintf(out, "%v: no change can be applied until it can be read\n", err)
				}
				printAgentChanges(out, ach)
				return aerr
			case "diff":
				if isAgent {
					kept, run, err := kernel.AgentChangeDiff(t, agent, rel)
					if err != nil {
						return err
					}
					fmt.Fprintf(out, "--- %s:%s (the home Kule keeps for %s)\n+++ %s:%s (task %s's run)\n", safeLine(agent), safeLine(rel), safeLine(agent), safeLine(agent), safeLine(rel), t.ID)
					lineDiff(out, string(kept), string(run))
					fmt.Fprintf(out, "note: %s reads this as instructions or settings; apply puts it in every later run of %s\n", safeLine(agent), safeLine(agent))
					return nil
				}
				p, err := arg()
				if err != nil {
					return err
				}
				mine, theirs, err := kernel.HomeDiff(layer, p)
				if err != nil {
					return err
				}
				fmt.Fprintf(out, "--- ~/%s (yours)\n+++ ~/%s (task %s)\n", safeLine(p), safeLine(p), t.ID)
				lineDiff(out, string(mine), string(theirs))
				if kernel.RunsAtStart(p) {
					fmt.Fprintln(out, "note: this file runs at every start of a shell or tool")
				}
				return nil
			case "apply":
				if isAgent {
					if err := k.ApplyAgentChange(t, agent, rel); err != nil {
						return err
					}
					fmt.Fprintf(out, "applied %s:%s to the home Kule keeps for %s: its next runs read it · kule home %s undo %s: takes it back\n", safeLine(agent), safeLine(rel), safeLine(agent), t.ID, safeLine(agent))
					return nil
				}
				p, err := arg()
				if err != nil {
					return err
				}
				if err := k.ApplyHome(t, p); err != nil {
					return err
				}
				fmt.Fprintf(out, "applied ~/%s · kule home %s undo takes it back\n", safeLine(p), t.ID)
				return nil
			case "undo":
				if isAgent {
					p, err := k.UndoAgentChange(t, agent)
					if err != nil {
						return fmt.Errorf("home: %w", err)
					}
					fmt.Fprintf(out, "%s:%s is as it was before the apply\n", safeLine(agent), safeLine(p))
					return nil
				}
				p, err := k.UndoHome(t)
				if err != nil {
					return fmt.Errorf("home: %w", err)
				}
				fmt.Fprintf(out, "~/%s is as it was before the apply\n", safeLine(p))
				return nil
			case "discard":
				if !all {
					return fmt.Errorf("home: discard throws away every change the task made in its home; say --all")
				}
				if err := k.DiscardHome(t); err != nil {
					return err
				}
				fmt.Fprintln(out, "discarded the task's home changes; your home was never touched")
				return nil
			}
			return fmt.Errorf("home: unknown %q (diff, apply, undo, discard)", verb)
		}),
	}
	c.Flags().BoolVar(&all, "all", false, "with discard: every change")
	return c
}

// homeVerdicts are the policy's verdicts on applying ch, in its order (none
// when ch is empty: the policy is not loaded for nothing).
func homeVerdicts(k *kernel.Kernel, t *kernel.Task, ch []kernel.HomeChange) ([]kernel.Verdict, error) {
	if len(ch) == 0 {
		return nil, nil
	}
	paths := make([]string, len(ch))
	for i, c := range ch {
		paths[i] = c.Path
	}
	return k.JudgeHome(t, paths)
}

func printHome(w io.Writer, ch []kernel.HomeChange, verdicts []kernel.Verdict) {
	if len(ch) == 0 {
		return
	}
	fmt.Fprintf(w, "in your home, caught for review (%d; kule home TASK diff PATH):\n", len(ch))
	for i, c := range ch {
		mark := map[string]string{"add": "+", "modify": "~", "delete": "-"}[c.Kind]
		line := fmt.Sprintf("  %s ~/%s", mark, safeLine(c.Path))
		if c.RunsAtStart {
			line += "  (runs at every start)"
		}
		if i < len(verdicts) && verdicts[i].Outcome == kernel.Deny {
			line += "  · denied by the policy: " + safeLine(verdicts[i].Reason)
		}
		fmt.Fprintln(w, line)
	}
}

// agentPath reads AGENT:PATH, a path in the home of an agent whose runs
// in t changed it (PATH may be empty, as undo takes it); ok is false for
// anything else, a path in the person's home.
func agentPath(t *kernel.Task, arg string) (agent, rel string, ok bool) {
	agent, rel, ok = strings.Cut(arg, ":")
	if !ok || !kernel.KeepsAgentChanges(t, agent) {
		return "", "", false
	}
	if rel != "" {
		rel = filepath.ToSlash(filepath.Clean(rel))
	}
	return agent, rel, true
}

// printAgentChanges lists what runs changed of agents' instructions and
// settings in their homes, kept aside for review.
func printAgentChanges(w io.Writer, ch []kernel.AgentChange) {
	if len(ch) == 0 {
		return
	}
	fmt.Fprintf(w, "in agents' homes, changed by a run and kept aside — no run reads them until you apply one (%d; kule home TASK diff AGENT:PATH):\n", len(ch))
	for _, c := range ch {
		mark := map[string]string{"add": "+", "modify": "~", "delete": "-"}[c.Kind]
		fmt.Fprintf(w, "  %s %s:%s\n", mark, safeLine(c.Agent), safeLine(c.Path))
	}
}

// lineDiff prints a minimal line diff: the common head and tail kept out,
// the middle shown as removed and added lines.
func lineDiff(w io.Writer, a, b string) {
	al, bl := strings.SplitAfter(a, "\n"), strings.SplitAfter(b, "\n")
	i := 0
	for i < len(al) && i < len(bl) && al[i] == bl[i] {
		i++
	}
	j := 0
	for j < len(al)-i && j < len(bl)-i && al[len(al)-1-j] == bl[len(bl)-1-j] {
		j++
	}
	for _, l := range al[i : len(al)-j] {
		if l != "" {
			fmt.Fprint(w, "-"+safeLine(strings.TrimSuffix(l, "\n"))+"\n")
		}
	}
	for _, l := range bl[i : len(bl)-j] {
		if l != "" {
			fmt.Fprint(w, "+"+safeLine(strings.TrimSuffix(l, "\n"))+"\n")
		}
	}
}
