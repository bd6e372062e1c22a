package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kulehq/kule/kernel"
)

// memoryCommand: kule memory list|search|show|forget|export.
func memoryCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "memory",
		Short: "What Kule remembers of past runs: list, search, show, forget, export",
		Long: `Kule keeps a record of every kule exec and kule run in $KULE_HOME/memory.db:
what ran, how it ended, what it cost, what it changed, what you answered, and
whether its changes were committed, rolled back or undone; the failures among
them and the later runs that fixed them. kule run recalls it before a run
(a proposed budget, notes for the agent). docs/memory.md says what is kept.`,
	}
	c.AddCommand(memoryListCommand(), memorySearchCommand(), memoryShowCommand(), memoryForgetCommand(), memoryExportCommand())
	return c
}

func withMemory(fn func(k *kernel.Kernel, st *kernel.MemoryStore, cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		k, err := openKernel()
		if err != nil {
			return err
		}
		st, err := k.Memory()
		if err != nil {
			return err
		}
		defer k.CloseMemory()
		return fn(k, st, cmd, args)
	}
}

func memoryListCommand() *cobra.Command {
	var taskID, folder string
	var limit int
	var asJSON bool
	c := &cobra.Command{
		Use:   "list",
		Short: "The newest runs Kule remembers",
		Args:  cobra.NoArgs,
		RunE: withMemory(func(k *kernel.Kernel, st *kernel.MemoryStore, cmd *cobra.Command, args []string) error {
			f := kernel.MemoryFilter{Task: taskFilter(k, taskID), Folder: folderFilter(folder), Limit: limit}
			runs, err := st.Runs(cmd.Context(), f)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), runs)
			}
			if len(runs) == 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), "memory: no runs remembered yet")
				return nil
			}
			printRuns(cmd.OutOrStdout(), runs)
			return nil
		}),
	}
	c.Flags().StringVar(&taskID, "task", "", "only this task's runs")
	c.Flags().StringVar(&folder, "folder", "", "only runs on this folder")
	c.Flags().IntVar(&limit, "limit", 50, "how many runs at most")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func memorySearchCommand() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "search TEXT",
		Short: "Runs whose prompt or command, error or paths match TEXT (any of its words), best first",
		Args:  cobra.MinimumNArgs(1),
		RunE: withMemory(func(k *kernel.Kernel, st *kernel.MemoryStore, cmd *cobra.Command, args []string) error {
			runs, err := st.Search(cmd.Context(), strings.Join(args, " "), 20)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), runs)
			}
			if len(runs) == 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), "memory: nothing matches")
				return nil
			}
			printRuns(cmd.OutOrStdout(), runs)
			return nil
		}),
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func memoryShowCommand() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "show ID",
		Short: "One run's whole record, its failures and the fixes that followed",
		Args:  cobra.ExactArgs(1),
		RunE: withMemory(func(k *kernel.Kernel, st *kernel.MemoryStore, cmd *cobra.Command, args []string) error {
			id, err := memoryID(args[0])
			if err != nil {
				return err
			}
			r, err := st.Run(cmd.Context(), id)
			if err != nil {
				return fmt.Errorf("memory: %w (kule memory list shows the ids)", err)
			}
			fs, err := st.FailuresOfRun(cmd.Context(), id)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), struct {
					Run      *kernel.MemoryRecord    `json:"run"`
					Failures []*kernel.MemoryFailure `json:"failures"`
				}{r, fs})
			}
			showRun(cmd.OutOrStdout(), r, fs)
			return nil
		}),
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func memoryForgetCommand() *cobra.Command {
	var taskID, folder string
	c := &cobra.Command{
		Use:   "forget ID | --task TASK | --folder FOLDER",
		Short: "Erase runs from the memory, and from its index and file, for good",
		Long: `Erases a run (or every run of a task, or on a folder, with their notes), the
failures it had and the fix links to and from it. Nothing of them is left in
memory.db's bytes: freed pages are zeroed, the full-text index is scrubbed and
the file rebuilt. The task, its copy and its history are not touched.`,
		Args: cobra.MaximumNArgs(1),
		RunE: withMemory(func(k *kernel.Kernel, st *kernel.MemoryStore, cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			var got kernel.MemoryForgotten
			var err error
			var what string
			switch {
			case len(args) == 1 && taskID == "" && folder == "":
				id, perr := memoryID(args[0])
				if perr != nil {
					return perr
				}
				got, err = st.Forget(ctx, id)
				what = "run " + args[0]
			case len(args) == 0 && taskID != "" && folder == "":
				what = "task " + taskID
				got, err = st.ForgetTask(ctx, taskFilter(k, taskID))
			case len(args) == 0 && folder != "" && taskID == "":
				f := folderFilter(folder)
				what = "folder " + f
				got, err = st.ForgetFolder(ctx, f)
			default:
				return errors.New("memory forget: name one run ID, or --task TASK, or --folder FOLDER (nothing was forgotten)")
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "forgot %s: %s, %s, %s, %s\n", safeLine(what),
				plural(got.Runs, "run"), plural(got.Failures, "failure"), count(got.Links, "fix link", "fix links"), plural(got.Notes, "note"))
			return nil
		}),
	}
	c.Flags().StringVar(&taskID, "task", "", "forget every run of this task")
	c.Flags().StringVar(&folder, "folder", "", "forget every run on this folder")
	return c
}

func memoryExportCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "export",
		Short: "Everything Kule remembers, as JSON lines on stdout",
		Args:  cobra.NoArgs,
		RunE: withMemory(func(k *kernel.Kernel, st *kernel.MemoryStore, cmd *cobra.Command, args []string) error {
			return st.Export(cmd.Context(), cmd.OutOrStdout())
		}),
	}
}

func memoryID(s string) (int64, error) {
	id, err := strconv.ParseInt(strings.TrimPrefix(s, "#"), 10, 64)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("memory: %q is not a run id (kule memory list shows them)", s)
	}
	return id, nil
}

// taskFilter is a task's id from a prefix; a task that is gone (deleted,
// its runs still remembered) is taken as written.
func taskFilter(k *kernel.Kernel, s string) string {
	if s == "" {
		return ""
	}
	if t, err := k.Resolve(s); err == nil {
		return t.ID
	}
	return s
}

// folderFilter is a folder as tasks keep it: absolute, links resolved.
func folderFilter(s string) string {
	if s == "" {
		return ""
	}
	if abs, err := filepath.Abs(s); err == nil {
		s = abs
	}
	if real, err := filepath.EvalSymlinks(s); err == nil {
		s = real
	}
	return s
}

// runEnd says in a word or two how a run ended.
func runEnd(r *kernel.MemoryRecord) string {
	switch {
	case r.How == "limit":
		return "limit " + r.Limit
	case r.Exit != nil && r.Kind == "exec":
		return fmt.Sprintf("%s (%d)", r.How, *r.Exit)
	}
	return r.How
}

// outcomeOf is what became of a run's changes, in words: a commit that
// held some of its paths back says how many it applied.
func outcomeOf(r *kernel.MemoryRecord) string {
	if r.Outcome == kernel.MemoryOutcomePartly {
		return fmt.Sprintf("partly committed (%d of %s)", r.OutcomePaths, plural(r.OutcomeOf, "path"))
	}
	if r.Outcome == "committed" && r.OutcomeOf > 0 {
		return fmt.Sprintf("committed (%d of %s)", r.OutcomePaths, plural(r.OutcomeOf, "path"))
	}
	return r.Outcome
}

func printRuns(w io.Writer, runs []*kernel.MemoryRecord) {
	for _, r := range runs {
		what := r.Prompt
		if r.Kind == "agent" {
			what = r.Agent + ": " + what
		}
		first, _, _ := strings.Cut(what, "\n")
		if len(first) > 70 {
			first = first[:70] + "…"
		}
		cost := ""
		if r.Cost > 0 {
			cost = fmt.Sprintf(" %.2f %s", r.Cost, r.Currency)
		}
		out := outcomeOf(r)
		if out == "" {
			out = "-"
		}
		trust := ""
		if r.Trust == kernel.MemoryUntrusted {
			trust = " [untrusted]"
		}
		fmt.Fprintln(w, safeLine(fmt.Sprintf("%6d  %s  %s  %-5s  %-14s %-11s%s%s  %s", r.ID, r.Started.Local().Format("2006-01-02 15:04"), r.Task, r.Kind, runEnd(r), out, cost, trust, first)))
	}
}

func showRun(w io.Writer, r *kernel.MemoryRecord, fs []*kernel.MemoryFailure) {
	line := func(k, v string) {
		if v != "" {
			fmt.Fprintln(w, safeLine(fmt.Sprintf("%-12s %s", k+":", v)))
		}
	}
	line("run", strconv.FormatInt(r.ID, 10))
	line("task", r.Task)
	line("folder", r.Folder)
	line("kind", r.Kind)
	line("agent", strings.TrimSpace(r.Agent+" "+r.AgentVersion))
	line("session", r.Session)
	line("conversation", r.Conversation)
	line("source", r.Source+" ("+r.Trust+")")
	for _, in := range r.Inputs {
		line("input", in)
	}
	line("started", r.Started.Local().Format(time.RFC3339))
	if !r.Ended.IsZero() {
		line("ended", r.Ended.Local().Format(time.RFC3339)+" ("+r.Ended.Sub(r.Started).Round(time.Millisecond).String()+")")
	}
	line("how", runEnd(r))
	if r.Tokens > 0 {
		line("tokens", strconv.FormatInt(r.Tokens, 10))
	}
	if r.Cost > 0 {
		line("cost", fmt.Sprintf("%.4f %s", r.Cost, r.Currency))
	}
	for kind, n := range r.Effects {
		line("effects", fmt.Sprintf("%s %d", kind, n))
	}
	for id, u := range r.Rules {
		line("rule", fmt.Sprintf("%s: asked %d, approved %d, denied %d", id, u.Asked, u.Approved, u.Denied))
	}
	for _, q := range r.Questions {
		line("question", q.Title+" → "+q.Answer)
	}
	if r.Outcome != "" {
		line("outcome", fmt.Sprintf("%s %s", outcomeOf(r), r.OutcomeAt.Local().Format(time.RFC3339)))
		line("approved by", r.ApprovedBy)
	}
	if r.ResumedBy != 0 {
		line("resumed by", "run "+strconv.FormatInt(r.ResumedBy, 10))
	}
	if r.How == "interrupted" {
		for i, st := range r.Progress.Steps {
			line("step", fmt.Sprintf("%d) [%s] %s: %s %s", i+1, orDash(st.Kind), orDash(st.Status), st.Title, strings.Join(st.Changed, ", ")))
		}
		for _, q := range r.Progress.Pending {
			line("waiting", q.Title+" (never answered)")
		}
	}
	if len(r.Paths) > 0 {
		line("paths", strings.Join(r.Paths, ", "))
	}
	fmt.Fprintln(w, "prompt:")
	fmt.Fprintln(w, indent(safeText(r.Prompt)))
	if r.ErrorTail != "" {
		fmt.Fprintln(w, "error (last lines):")
		fmt.Fprintln(w, indent(safeText(r.ErrorTail)))
	}
	for _, f := range fs {
		fmt.Fprintln(w, safeLine(fmt.Sprintf("failure %d: %s, signature %s (%s)", f.ID, f.Kind, f.Signature, f.Trust)))
		for _, l := range f.Links {
			fmt.Fprintln(w, safeLine(fmt.Sprintf("  prevented by run %d (%s) since %s", l.FixRunID, l.State, l.Created.Local().Format("2006-01-02 15:04"))))
		}
	}
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}

// recallFlags are kule run's flags for memory.
type recallFlags struct {
	noRecall, acceptBudget bool
}

func (f *recallFlags) add(c *cobra.Command) {
	c.Flags().BoolVar(&f.noRecall, "no-recall", false, "give the agent no notes from earlier runs, and propose no budget")
	c.Flags().BoolVar(&f.acceptBudget, "accept-budget", false, "set the budget memory proposes as this run's (the task's cap: spent so far plus the proposal)")
}

// recall says what memory recalls before a run and returns the notes for
// the agent ("" for none). Memory is advisory: an error is a note and the
// run goes on without it. resume, when set, is the interrupted run this one
// resumes (kule run --resume): what memory kept of it goes in the notes
// even with --no-recall, which leaves out the rest.
func (f *recallFlags) recall(ctx context.Context, errw io.Writer, k *kernel.Kernel, t *kernel.Task, prompt string, resume *kernel.MemoryRecord) string {
	interrupted := noteInterrupted(ctx, errw, k, "")
	if resume == nil {
		resume = lastInterrupted(interrupted, t.ID)
	}
	var rec *kernel.MemoryRecall
	if f.noRecall {
		if f.acceptBudget {
			fmt.Fprintln(errw, "memory: --accept-budget with --no-recall: no budget is proposed, none was set")
		}
	} else {
		var err error
		if rec, err = k.Recall(ctx, t, prompt); err != nil {
			fmt.Fprintln(errw, "memory: "+safeLine(err.Error())+" (the run goes on without recall)")
			rec = nil
		}
	}
	if rec != nil {
		f.proposeBudget(errw, k, t, rec)
	} else {
		rec = &kernel.MemoryRecall{}
		if f.noRecall && resume == nil {
			return ""
		}
	}
	text := rec.Text()
	if f.noRecall {
		text = ""
	}
	if note := kernel.MemoryResumeNote(resume); note != "" {
		if text == "" {
			text = kernel.MemoryNotesHeader + "\n"
		}
		text += "- " + note + "\n"
		rec.Notes = append(rec.Notes, kernel.MemoryNote{Text: note})
	}
	if len(rec.Notes) > 0 {
		goes, leaves := "go", "--no-recall leaves them out"
		if len(rec.Notes) == 1 {
			goes, leaves = "goes", "--no-recall leaves it out"
		}
		if f.noRecall {
			leaves = "--no-recall left out the rest"
		}
		fmt.Fprintf(errw, "memory: %s from earlier runs %s to the agent after your prompt, as Kule's data (%s):\n", plural(len(rec.Notes), "note"), goes, leaves)
		for _, n := range rec.Notes {
			fmt.Fprintln(errw, "  · "+safeLine(n.Text))
		}
	}
	return text
}

// proposeBudget says the budget memory proposes, and sets it with
// --accept-budget.
func (f *recallFlags) proposeBudget(errw io.Writer, k *kernel.Kernel, t *kernel.Task, rec *kernel.MemoryRecall) {
	line := rec.BudgetLine()
	switch {
	case line != "" && f.acceptBudget:
		c, before, err := k.AcceptBudget(t, rec)
		switch {
		case err != nil:
			fmt.Fprintln(errw, "memory: "+line+"; not set: "+safeLine(err.Error()))
		case before != nil:
			fmt.Fprintf(errw, "memory: %s; the task's budget is now %s (it was %s)\n", line, c, before)
		default:
			fmt.Fprintf(errw, "memory: %s; the task's budget is now %s\n", line, c)
		}
	case line != "":
		fmt.Fprintf(errw, "memory: %s — --accept-budget sets it, or kule budget %s AMOUNT sets your own\n", line, t.ID)
	case f.acceptBudget:
		fmt.Fprintln(errw, "memory: no similar run had a cost, so no budget is proposed; none was set")
	}
}

// lastInterrupted is the task's newest agent run among runs (those just
// found interrupted): the next run on the task is told of it.
func lastInterrupted(runs []*kernel.MemoryRecord, task string) *kernel.MemoryRecord {
	for i := len(runs) - 1; i >= 0; i-- {
		if r := runs[i]; r.Task == task && r.Kind == "agent" {
			return r
		}
	}
	return nil
}

// resumeNote tells the agent that its task's last turn was interrupted,
// what it was asked and where it was (only when the operator asked it: an
// untrusted prompt never reaches the notes).
func resumeNote(runs []*kernel.MemoryRecord, task string) string {
	return kernel.MemoryResumeNote(lastInterrupted(runs, task))
}

// noteInterrupted says which runs (of the task only, when task is set)
// were interrupted: found still marked running with nobody holding their
// task. Memory is advisory: when it cannot be read this says nothing.
func noteInterrupted(ctx context.Context, w io.Writer, k *kernel.Kernel, task string) []*kernel.MemoryRecord {
	runs, err := k.InterruptedRuns(ctx, task)
	if err != nil {
		return nil
	}
	for _, r := range runs {
		what := "kule memory show " + strconv.FormatInt(r.ID, 10) + " says where it was"
		if r.Kind == "agent" {
			what += ", kule run " + r.Task + " --resume resumes it"
		}
		fmt.Fprintln(w, safeLine(fmt.Sprintf("memory: run %d (%s on task %s, started %s) was interrupted before it ended; %s",
			r.ID, r.Kind, r.Task, r.Started.Local().Format("2006-01-02 15:04"), what)))
	}
	return runs
}

// noteResumable says, after noteInterrupted, which of the task's agent
// runs found interrupted before still wait to be resumed (kule status says
// so until the run is resumed or the task runs its agent again).
func noteResumable(ctx context.Context, w io.Writer, k *kernel.Kernel, task string, justFound []*kernel.MemoryRecord) {
	runs, err := k.ResumableRuns(ctx, task)
	if err != nil {
		return
	}
	for _, r := range runs {
		if slices.ContainsFunc(justFound, func(j *kernel.MemoryRecord) bool { return j.ID == r.ID }) {
			continue
		}
		fmt.Fprintln(w, safeLine(fmt.Sprintf("memory: run %d (%s on task %s, started %s) was interrupted and waits to be resumed: kule run %s --resume",
			r.ID, r.Agent, r.Task, r.Started.Local().Format("2006-01-02 15:04"), r.Task)))
	}
}

// promptOf is the run's prompt: the words after the task, a file
// (--prompt-file F), or stdin (a lone - or --prompt-file -).
func promptOf(args []string, file string, stdin io.Reader) (string, error) {
	read := func(name string) (string, error) {
		var b []byte
		var err error
		if name == "-" {
			b, err = io.ReadAll(io.LimitReader(stdin, 1<<20+1))
		} else {
			b, err = os.ReadFile(name)
		}
		if err != nil {
			return "", fmt.Errorf("run: the prompt: %w (nothing was started)", err)
		}
		if len(b) > 1<<20 {
			return "", fmt.Errorf("run: the prompt from %s is over 1 MiB (nothing was started)", name)
		}
		return string(b), nil
	}
	var p string
	var err error
	switch {
	case file != "" && len(args) > 0:
		return "", errors.New("run: give the prompt as words or with --prompt-file, not both (nothing was started)")
	case file != "":
		p, err = read(file)
	case len(args) == 1 && args[0] == "-":
		p, err = read("-")
	default:
		p = strings.Join(args, " ")
	}
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(p) == "" {
		return "", errors.New("run: the prompt is empty (kule run TASK --agent NAME PROMPT, --prompt-file F, or - for stdin; nothing was started)")
	}
	return p, nil
}

// useConversation makes the run continue the conversation named name: the
// task's last session in it, when memory has one (fresh false); else a new
// conversation under that name (fresh true).
func useConversation(ctx context.Context, errw io.Writer, k *kernel.Kernel, t *kernel.Task, agent, name string) (fresh bool) {
	id, ok, err := k.ConversationSession(ctx, t, agent, name)
	if err != nil {
		fmt.Fprintln(errw, "memory: "+safeLine(err.Error())+" (a new conversation starts)")
		return true
	}
	if !ok {
		fmt.Fprintln(errw, safeLine(fmt.Sprintf("conversation %q: new", name)))
		return true
	}
	if err := k.UseSession(t, agent, id); err != nil {
		fmt.Fprintln(errw, "run: "+safeLine(err.Error())+" (a new conversation starts)")
		return true
	}
	fmt.Fprintln(errw, safeLine(fmt.Sprintf("conversation %q: continuing session %s", name, id)))
	return false
}
