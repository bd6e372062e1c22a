package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/kulehq/kule/kernel"
)

// addCompletions makes the shell complete what a command's Use line names
// where cobra cannot know it: a TASK (its id, with the task's name and
// folder as the description), an agent's NAME (kule agents and the
// --agent flag), a plugin's NAME and an extension's ID (kule ext show,
// approve, remove) or ID.COMMAND (kule ext run). It walks the tree, so a command added
// later with TASK first in its Use completes task ids too.
func addCompletions(c *cobra.Command) {
	if c.ValidArgsFunction == nil {
		words := strings.Fields(c.Use)
		if len(words) > 1 {
			switch {
			case words[1] == "TASK" || words[1] == "[TASK]":
				c.ValidArgsFunction = completeFirst(completeTasks)
			case words[1] == "NAME" && c.HasParent() && c.Parent().Name() == "agents" && c.Name() != "add":
				c.ValidArgsFunction = completeFirst(completeAgents)
			case words[1] == "NAME" && c.HasParent() && c.Parent().Name() == "plugins":
				c.ValidArgsFunction = completeFirst(completePlugins)
			case words[1] == "ID" && c.HasParent() && c.Parent().Name() == "ext" && c.Name() != "new":
				c.ValidArgsFunction = completeFirst(completeExtensions)
			case words[1] == "ID.COMMAND" && c.HasParent() && c.Parent().Name() == "ext":
				c.ValidArgsFunction = completeFirst(completeExtensionCommands)
			}
		}
	}
	if c.Flags().Lookup("agent") != nil {
		_ = c.RegisterFlagCompletionFunc("agent", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return completeAgents(), cobra.ShellCompDirectiveNoFileComp
		})
	}
	for _, s := range c.Commands() {
		addCompletions(s)
	}
}

// completeFirst completes the first argument with list's words, and
// nothing (no file names) after it.
func completeFirst(list func() []string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveDefault
		}
		return list(), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeTasks lists "id\tname · folder" for every task, reading task.json
// files only (no copy is walked, no lock taken).
func completeTasks() []string {
	home, err := kernel.DefaultHome()
	if err != nil {
		return nil
	}
	s, err := kernel.OpenTasks(home)
	if err != nil {
		return nil
	}
	ts, err := s.List()
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		desc := safeLine(t.Folder)
		if t.Name != "" {
			desc = safeLine(t.Name) + " · " + desc
		}
		out = append(out, t.ID+"\t"+desc)
	}
	return out
}

func completeAgents() []string {
	set, _, err := loadAgents()
	if err != nil {
		return nil
	}
	var out []string
	for _, p := range set.Profiles {
		d := p.Description
		if d == "" {
			d = strings.Join(p.Command, " ")
		}
		out = append(out, p.Name+"\t"+safeLine(d))
	}
	return out
}

func completePlugins() []string {
	h, err := openPluginHost()
	if err != nil {
		return nil
	}
	var out []string
	for _, b := range h.Builtins() {
		out = append(out, b.Name+"\tbuilt-in "+b.Kind)
	}
	names, err := h.List()
	if err != nil {
		return out
	}
	for _, n := range names {
		out = append(out, n+"\tinstalled")
	}
	return out
}

// completeExtensions lists the installed extensions' ids, each with its
// version and whether it may run.
func completeExtensions() []string {
	s, _, err := extStore()
	if err != nil {
		return nil
	}
	list, err := s.List()
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(list))
	for _, st := range list {
		out = append(out, st.Manifest.ID+"\t"+safeLine(st.Manifest.Version+" · "+extState(st)))
	}
	return out
}

// completeExtensionCommands lists ID.COMMAND for each command of each
// installed extension, with the command's title.
func completeExtensionCommands() []string {
	s, _, err := extStore()
	if err != nil {
		return nil
	}
	list, err := s.List()
	if err != nil {
		return nil
	}
	var out []string
	for _, st := range list {
		for _, c := range st.Manifest.Commands {
			out = append(out, st.Manifest.ID+"."+c.ID+"\t"+safeLine(c.Title))
		}
	}
	return out
}
