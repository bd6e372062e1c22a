package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kulehq/kule/cmd/internal/daemon"
	"github.com/kulehq/kule/kernel"
)

// groupCommand: kule group list | new | move, the groups of the app from a
// terminal (kernel/internal/group).
func groupCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "group",
		Short: "Groups of tasks: a name, a colour and a policy of their own",
		Long: `A group's tasks are judged by the group's policy: the default (as for every
task), balanced, careful, or a Cedar file written for the group (checked
before it is kept). kule app shows the groups in its task list.`,
	}
	c.AddCommand(groupListCommand(), groupNewCommand(), groupMoveCommand())
	return c
}

func groupListCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the groups and their tasks",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			k, err := openKernel()
			if err != nil {
				return err
			}
			gs, err := kernel.OpenGroups(k.Store().Root).List()
			if err != nil {
				return err
			}
			ts, err := k.Store().List()
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			if len(gs) == 0 {
				fmt.Fprintln(w, "no groups (kule group new NAME makes one)")
			}
			for _, g := range gs {
				var ids []string
				for _, t := range ts {
					if t.Group == g.ID {
						ids = append(ids, t.ID)
					}
				}
				pol := g.Policy
				if pol == "" {
					pol = "default"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", g.ID, g.Name, orNone(g.Colour), pol, orNone(strings.Join(ids, " ")))
			}
			return w.Flush()
		},
	}
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func groupNewCommand() *cobra.Command {
	var colour, pol, file string
	c := &cobra.Command{
		Use:   "new NAME",
		Short: "Make a group",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, err := openKernel()
			if err != nil {
				return err
			}
			name := strings.Join(args, " ")
			e := kernel.GroupEdit{Name: &name}
			if colour != "" {
				if !slices.Contains(daemon.Colours, colour) {
					return fmt.Errorf("group: %q is not a colour Kule knows; pick one of %s", colour, strings.Join(daemon.Colours[1:], ", "))
				}
				e.Colour = &colour
			}
			switch {
			case file != "":
				b, err := os.ReadFile(file)
				if err != nil {
					return fmt.Errorf("group: %w", err)
				}
				own := string(b)
				e.OwnPolicy = &own
			case pol == "default":
			case pol == kernel.GroupBalance || pol == kernel.GroupCareful:
				e.Policy = &pol
			default:
				return fmt.Errorf("group: --policy %q: choose default, balanced or careful, or give --policy-file", pol)
			}
			g, err := kernel.OpenGroups(k.Store().Root).Create(e)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "group %s %s\n", g.ID, g.Name)
			return nil
		},
	}
	c.Flags().StringVar(&colour, "colour", "", "the group's colour")
	c.Flags().StringVar(&pol, "policy", "default", "default, balanced or careful")
	c.Flags().StringVar(&file, "policy-file", "", "a Cedar file that becomes the group's own policy (checked first)")
	return c
}

func groupMoveCommand() *cobra.Command {
	var yes bool
	c := &cobra.Command{
		Use:   "move TASK GROUP|none",
		Short: "Move a task into a group (asks first when that changes what its policy says of a pending change)",
		Args:  cobra.ExactArgs(2),
		RunE: withTask(func(k *kernel.Kernel, t *kernel.Task, cmd *cobra.Command, args []string) error {
			to, err := findGroup(k.Store().Root, args[1])
			if err != nil {
				return err
			}
			if !yes {
				cs, err := daemon.VerdictChanges(k, t, to)
				if err != nil {
					return err
				}
				if len(cs) > 0 {
					var b strings.Builder
					for _, c := range cs {
						fmt.Fprintf(&b, "\n  %s: %s → %s", c.Path, c.From, c.To)
					}
					return fmt.Errorf("group: moving task %s changes what its policy says of pending changes:%s\nnothing was moved; run it again with --yes to move it", t.ID, b.String())
				}
			}
			if err := editTask(k, t, func(t *kernel.Task) { t.Group = to }); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "task %s is in %s\n", t.ID, orNone(args[1]))
			return nil
		}),
	}
	c.Flags().BoolVar(&yes, "yes", false, "move it even when pending verdicts change")
	return c
}

// findGroup reads a group given by id (or a unique prefix) or exact name;
// "none" is no group.
func findGroup(home, s string) (string, error) {
	if s == "none" || s == "" {
		return "", nil
	}
	gs, err := kernel.OpenGroups(home).List()
	if err != nil {
		return "", err
	}
	var hits []kernel.Group
	for _, g := range gs {
		if g.ID == s || g.Name == s || strings.HasPrefix(g.ID, s) {
			hits = append(hits, g)
		}
	}
	switch len(hits) {
	case 1:
		return hits[0].ID, nil
	case 0:
		return "", fmt.Errorf("group %q: %w (kule group list shows them)", s, kernel.ErrGroupNotFound)
	}
	return "", errors.New("group " + s + ": more than one group matches; give its id")
}
