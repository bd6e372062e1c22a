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
		Use:   "home TASK [diff PATH | apply PATH | undo | discard --all]",
		Short: "Review what the task's commands wrote in your home (caught, never applied by commit)",
		Args:  cobra.RangeArgs(1, 3),
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
			switch verb {
			case "":
				ch, err := kernel.HomeChanges(layer)
				if err != nil {
					return err
				}
				v, err := homeVerdicts(k, t, ch)
				printHome(out, ch, v)
				if err != nil {
					fmt.Fprintf(out, "%v: no change can be applied until it can be read\n", err)
				}
				return nil
			case "diff":
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
