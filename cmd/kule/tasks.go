package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/kulehq/kule/kernel"
)

// openKernel opens $KULE_HOME.
func openKernel() (*kernel.Kernel, error) {
	root, err := kernel.DefaultHome()
	if err != nil {
		return nil, err
	}
	return kernel.New(kernel.Config{Home: root, Plugins: builtinPlugins(), PluginBinary: pluginsBinary(), Logger: kernelLogger(), PluginSandbox: pluginSandbox(root), Agents: builtinAgents()})
}

func withTask(fn func(k *kernel.Kernel, t *kernel.Task, cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		k, err := openKernel()
		if err != nil {
			return err
		}
		t, err := k.Resolve(args[0])
		if err != nil {
			return err
		}
		return fn(k, t, cmd, args)
	}
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func newCommand() *cobra.Command {
	var asJSON, yes bool
	c := &cobra.Command{
		Use:   "new FOLDER",
		Short: "Make a task: a copy of FOLDER that commands change instead of the folder",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, err := openKernel()
			if err != nil {
				return err
			}
			if err := checkCopyCost(args[0], yes, cmd.InOrStdin(), cmd.ErrOrStderr()); err != nil {
				return err
			}
			start := time.Now()
			var rep *kernel.NewReport
			err = withProgress(cmd.Context(), cmd.ErrOrStderr(), "copying", func(ctx context.Context) error {
				rep, err = k.NewTask(ctx, args[0])
				return err
			})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return printJSON(out, map[string]any{"id": rep.Task.ID, "folder": rep.Task.Folder, "copy": rep.Task.Paths.Copy, "backend": rep.Task.Backend, "files": rep.Files, "skipped": problemsJSON(rep.Problems), "notes": orEmpty(rep.Notes)})
			}
			fmt.Fprintf(out, "task %s · copy at %s\n", rep.Task.ID, rep.Task.Paths.Copy)
			fmt.Fprintf(out, "  %s from %s (%s, %s)\n", plural(rep.Files, "file"), rep.Task.Folder, backendWords(rep.Task.Backend), time.Since(start).Round(time.Millisecond))
			printProblems(out, rep.Problems)
			for _, n := range rep.Notes {
				fmt.Fprintln(out, "note: "+safeLine(n))
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the task as JSON")
	c.Flags().BoolVar(&yes, "yes", false, "make the task even when a plain copy of a large folder (over 10 GiB or 200,000 files) would take that space")
	return c
}

func backendWords(b string) string {
	if b == "reflink" {
		return "reflink copy: no extra space"
	}
	if b == "overlay" {
		return "plain copy, each command over an overlay of it"
	}
	return "plain copy: this file system has no reflinks"
}

func printProblems(w io.Writer, ps []kernel.Problem) {
	if len(ps) == 0 {
		return
	}
	fmt.Fprintf(w, "  passed over %s:\n", count(len(ps), "entry", "entries"))
	for i, p := range ps {
		if i == 20 {
			fmt.Fprintf(w, "    … and %d more\n", len(ps)-20)
			break
		}
		fmt.Fprintf(w, "    %s\n", safeLine(fmt.Sprint(p)))
	}
}

func execCommand() *cobra.Command {
	var sf sandboxFlags
	var pids int
	var allowHosts []string
	c := &cobra.Command{
		Use:   "exec TASK -- COMMAND [ARGS...]",
		Short: "Run a command in the task's copy, then list what it changed",
		Long: `Runs COMMAND with the task's copy as its working directory (the same
subdirectory when you are inside the folder), passes its exit code through,
and lists what it changed. Nothing reaches the folder until kule commit.`,
		Args: cobra.MinimumNArgs(2),
		RunE: withTask(func(k *kernel.Kernel, t *kernel.Task, cmd *cobra.Command, args []string) error {
			// The collector's goal is 400% from the start (main.go's
			// shortHeapCommands): an exec's heap (the proxy's policy and CA,
			// then the effect scan) sits at the first collection's goal at
			// 100%, and a collection there is a pause the sandbox's fork
			// waits for.
			argv := args[1:]
			if dash := cmd.ArgsLenAtDash(); dash >= 1 {
				argv = args[dash:]
			}
			if len(argv) == 0 {
				return errors.New("exec: no command given (kule exec TASK -- COMMAND)")
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			cfg, err := kernel.LoadSettings(k.Store().Root)
			if err != nil {
				return err
			}
			opt := kernel.ExecOptions{Args: argv, Subdir: subdirOf(t.Folder), Limits: kernel.LimitsFor(t, cfg.Limits), AllowHosts: allowHosts}
			switch {
			case pids < 0:
				return fmt.Errorf("exec: --pids %d is below zero (nothing was run)", pids)
			case pids > 0:
				opt.Limits.Pids = pids
			}
			opt.Spec.Stdin, opt.Spec.Stdout, opt.Spec.Stderr = os.Stdin, os.Stdout, os.Stderr
			r, err := sf.runnerFor(t, &opt.Spec)
			if err != nil {
				return err
			}
			k = k.With(kernel.RunHooks{Runner: r, Net: daemonNetHooks(ctx, k.Store().Root, strings.Join(argv, " "))})
			started := time.Now()
			code, st, err := k.Exec(ctx, t, opt)
			recordCLIStep(ctx, k.Store().Root, t, strings.Join(argv, " "), started, code, err, st)
			if st != nil {
				// No names and no policy marks: an exec stays quick, and
				// kule status has both.
				printStatus(cmd.ErrOrStderr(), st, false, nil, nil)
			}
			if errors.Is(err, kernel.ErrCommandNotFound) || errors.Is(err, kernel.ErrCommandCannotRun) {
				// The command's own error, with a shell's exit code.
				fmt.Fprintln(cmd.ErrOrStderr(), "kule: "+safeText(err.Error()))
				return exitCode(code)
			}
			if err != nil {
				return err
			}
			if code != 0 {
				return exitCode(code)
			}
			return nil
		}),
	}
	sf.add(c)
	c.Flags().IntVar(&pids, "pids", 0, "processes and threads this run may hold at once (over the task's and home's limit)")
	c.Flags().StringArrayVar(&allowHosts, "allow-host", nil, "let the command connect to HOST:PORT, on loopback or your network too (a local model: 127.0.0.1:11434; repeatable)")
	return c
}

// subdirOf is the working directory relative to folder, when it lies inside.
func subdirOf(folder string) string {
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	if real, err := filepath.EvalSymlinks(wd); err == nil {
		wd = real
	}
	rel, err := filepath.Rel(folder, wd)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return ""
	}
	return filepath.ToSlash(rel)
}

func statusCommand() *cobra.Command {
	var asJSON, full bool
	c := &cobra.Command{
		Use:   "status TASK",
		Short: "List the task's uncommitted changes",
		Args:  cobra.ExactArgs(1),
		RunE: withTask(func(k *kernel.Kernel, t *kernel.Task, cmd *cobra.Command, args []string) error {
			// A status holds ~40 MB of manifest and walk for 100,000 files
			// for a fraction of a second: fewer collections, each a pause
			// that waits for busy walkers on a loaded machine (the goal
			// is 400% from the start, main.go's shortHeapCommands).
			naming := k.OpenNames(cmd.Context(), t) // a differ may start while the copy is walked
			defer naming.Close()
			status := k.Status
			if full {
				status = k.StatusFull
			}
			st, err := status(cmd.Context(), t)
			if err != nil {
				return err
			}
			j, perr := k.JudgeStatus(t, st, false, false)
			names := naming.Review(cmd.Context(), st)
			naming.Close() // before printing: a plugin's exit may log
			notes, noteWarnings := reviewNotes(cmd.Context(), k, st, names)
			if asJSON {
				m := statusJSON(st).(map[string]any)
				if perr != nil {
					m["policy_error"] = perr.Error()
				} else {
					m["policy"] = j.Ruling.Verdicts
					m["ruling"] = j.Overall()
					m["reasons"] = j.Reasons()
				}
				m["names"] = names
				if len(notes) > 0 || len(noteWarnings) > 0 {
					m["extension_notes"] = notes
					m["extension_warnings"] = noteWarnings
				}
				addBudgetJSON(m, k, t)
				m["sandbox"] = refusalsJSON(t)
				m["env_tracked"] = orEmpty(t.EnvTracked)
				if ach, err := kernel.AgentChanges(t); len(ach) > 0 || err != nil {
					m["agent_changes"] = ach
				}
				return printJSON(cmd.OutOrStdout(), m)
			}
			var home []kernel.Verdict
			if perr == nil { // else it is said below, once
				home, _ = homeVerdicts(k, t, st.Home)
			}
			printStatus(cmd.OutOrStdout(), st, true, &names, home)
			ach, aerr := kernel.AgentChanges(t)
			printAgentChanges(cmd.OutOrStdout(), ach)
			if aerr != nil {
				fmt.Fprintf(cmd.OutOrStdout(), "note: what runs changed in agents' homes cannot be read: %s\n", safeLine(aerr.Error()))
			}
			printReviewNotes(cmd.OutOrStdout(), notes, noteWarnings)
			for _, rel := range t.EnvTracked {
				fmt.Fprintln(cmd.OutOrStdout(), "note: "+safeLine(kernel.EnvTrackedNote(rel)))
			}
			statusBudget(cmd.OutOrStdout(), k, t)
			found := noteInterrupted(cmd.Context(), cmd.OutOrStdout(), k, t.ID) // memory.go
			noteResumable(cmd.Context(), cmd.OutOrStdout(), k, t.ID, found)
			printRefusals(cmd.OutOrStdout(), t)
			if perr != nil {
				fmt.Fprintf(cmd.OutOrStdout(), "policy: cannot judge: %s\n", strings.TrimPrefix(dedupePrefixes(perr.Error()), "policy: "))
			} else if len(st.Pending(false)) > 0 || len(j.Git) > 0 {
				printRuling(cmd.OutOrStdout(), j.Ruling)
			}
			return nil
		}),
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the changes as JSON")
	c.Flags().BoolVar(&full, "full", false, "walk the whole copy (on the overlay backend, a status otherwise reads what the commands changed)")
	return c
}

// printStatus prints a task's changes; names, when given, adds the names
// that changed inside each file, where the task meets others, and notices;
// home, the policy's verdicts on the changes in the task's home.
func printStatus(w io.Writer, st *kernel.Status, header bool, names *namesView, home []kernel.Verdict) {
	if header {
		fmt.Fprintf(w, "task %s · %s\n", st.Task.ID, st.Task.Folder)
	}
	pending := st.Pending(false)
	fmt.Fprintln(w, kernel.EffectSummary(pending))
	byPath := names.ByPath()
	for _, e := range pending {
		fmt.Fprintln(w, "  "+effectLine(e))
		printNames(w, byPath[e.Path])
	}
	for _, l := range st.GitLines() {
		fmt.Fprintln(w, safeLine(l))
	}
	if n := st.IgnoredCount(); n > 0 {
		them := "them"
		if n == 1 {
			them = "it"
		}
		fmt.Fprintf(w, "%d ignored by the folder's .gitignore (kept in the copy; kule commit --include-ignored applies %s):\n", n, them)
		for _, e := range st.Effects {
			if e.Ignored {
				fmt.Fprintln(w, "  "+effectLine(e))
			}
		}
	}
	for _, l := range st.Network {
		fmt.Fprintln(w, safeLine(l))
	}
	printHome(w, st.Home, home)
	printProblems(w, st.Problems)
	printMeets(w, names)
}

func effectLine(e kernel.Effect) string {
	s := e.String()
	if e.Dir && e.Files > 0 {
		word := "files"
		if e.Files == 1 {
			word = "file"
		}
		s += fmt.Sprintf(" (%d %s)", e.Files, word)
	}
	return safeLine(s)
}

type effectView struct {
	Kind    kernel.EffectKind `json:"kind"`
	Path    kernel.RelPath    `json:"path"`
	From    *kernel.RelPath   `json:"from,omitempty"`
	Type    string            `json:"type"`
	OldType string            `json:"old_type,omitempty"`
	Mode    string            `json:"mode,omitempty"`
	OldMode string            `json:"old_mode,omitempty"`
	Size    int64             `json:"size"`
	Target  *kernel.RelPath   `json:"target,omitempty"`
	Dir     bool              `json:"dir,omitempty"`
	Files   int               `json:"files,omitempty"`
	Ignored bool              `json:"ignored,omitempty"`
}

func viewOf(e kernel.Effect) effectView {
	v := effectView{Kind: e.Kind, Path: kernel.RelPath(e.Path), Size: e.Size, Dir: e.Dir, Files: e.Files, Ignored: e.Ignored}
	v.Type = e.NewType.String()
	if e.Kind == kernel.KindDelete {
		v.Type = e.OldType.String()
	}
	if e.From != "" {
		f := kernel.RelPath(e.From)
		v.From = &f
	}
	if e.Kind == kernel.KindType {
		v.OldType = e.OldType.String()
	}
	if e.Kind != kernel.KindDelete && e.NewType != kernel.TypeLink {
		v.Mode = fmt.Sprintf("%04o", e.NewMode.Perm())
	}
	if e.Kind == kernel.KindMode {
		v.OldMode = fmt.Sprintf("%04o", e.OldMode.Perm())
	}
	if e.Target != "" {
		tg := kernel.RelPath(e.Target)
		v.Target = &tg
	}
	return v
}

func statusJSON(st *kernel.Status) any {
	views := []effectView{}
	for _, e := range st.Effects {
		views = append(views, viewOf(e))
	}
	c := kernel.CountEffects(st.Pending(false))
	return map[string]any{
		"task":     st.Task.ID,
		"folder":   st.Task.Folder,
		"summary":  map[string]int{"added": c.Added, "changed": c.Changed, "deleted": c.Deleted, "moved": c.Moved},
		"changes":  views,
		"ignored":  st.IgnoredCount(),
		"problems": problemsJSON(st.Problems),
		"git":      st.Git,
	}
}

func problemsJSON(ps []kernel.Problem) []map[string]any {
	out := []map[string]any{}
	for _, p := range ps {
		m := map[string]any{"path": kernel.RelPath(p.Path), "kind": p.Kind}
		if p.Err != nil {
			m["error"] = p.Err.Error()
		}
		out = append(out, m)
	}
	return out
}

func commitCommand() *cobra.Command {
	var includeIgnored, asJSON, approve, remember bool
	c := &cobra.Command{
		Use:   "commit TASK",
		Short: "Apply the task's changes to the folder, keeping a checkpoint for undo",
		Args:  cobra.ExactArgs(1),
		RunE: withTask(func(k *kernel.Kernel, t *kernel.Task, cmd *cobra.Command, args []string) error {
			if remember && !approve {
				return fmt.Errorf("commit: --remember keeps approvals, so it needs --approve; nothing was applied")
			}
			// --approve covers what of git waits too; a changed hook never
			// goes in (the policy denies hooks), and stays in the copy.
			opts := kernel.CommitOptions{IncludeIgnored: includeIgnored, Policy: true, Approve: approve}
			if approve {
				// The commit's own history entry says what was approved, and by whom.
				opts.Approval = &kernel.Approval{By: "cli", All: true}
			}
			var rep *kernel.CommitReport
			err := withProgress(cmd.Context(), cmd.ErrOrStderr(), "committing", func(ctx context.Context) (err error) {
				rep, err = k.Commit(ctx, t, opts)
				return err
			})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				applied, left := []effectView{}, []effectView{}
				for _, e := range rep.Applied {
					applied = append(applied, viewOf(e))
				}
				for _, e := range rep.Left {
					left = append(left, viewOf(e))
				}
				m := map[string]any{"task": t.ID, "checkpoint": rep.Checkpoint, "applied": applied, "left": left, "policy": verdictsOf(rep.Judgement), "git": rep.Git}
				if rep.Judgement != nil {
					w, d := rep.Judgement.GitHeld()
					m["git_held"] = append(w, d...)
				}
				return printJSON(out, m)
			}
			gitHeld := 0
			if rep.Judgement != nil {
				w, d := rep.Judgement.GitHeld()
				gitHeld = len(w) + len(d)
			}
			if len(rep.Applied) == 0 && len(rep.Git) == 0 && len(rep.Left) == 0 && gitHeld == 0 {
				fmt.Fprintln(out, "nothing to commit")
			} else if len(rep.Applied) == 0 && len(rep.Git) == 0 {
				fmt.Fprintln(out, "nothing was applied")
			} else {
				fmt.Fprintf(out, "committed to %s — %s\n", t.Folder, kernel.EffectSummary(rep.Applied))
				for _, e := range rep.Applied {
					fmt.Fprintln(out, "  "+effectLine(e))
				}
				for _, g := range rep.Git {
					for _, l := range g.Lines() {
						fmt.Fprintln(out, "  "+l)
					}
				}
				for _, m := range rep.Merged {
					fmt.Fprintln(out, "  merged "+safeLine(m))
				}
				fmt.Fprintf(out, "checkpoint %d kept · kule undo %s takes it back\n", rep.Checkpoint, t.ID)
			}
			ignored := 0
			for _, e := range rep.Left {
				if e.Ignored && !includeIgnored {
					ignored++
				}
			}
			if ignored > 0 {
				fmt.Fprintf(out, "%d stay in the copy (ignored by .gitignore; --include-ignored applies them)\n", ignored)
			}
			printHeld(out, t, rep.Judgement, rep.Applied)
			for _, l := range rep.GitRefused {
				fmt.Fprintln(out, l)
			}
			if remember && rep.Judgement != nil {
				r, err := k.Remember(t, rep.Judgement, rep.Applied)
				if err != nil {
					return err
				}
				printRemembered(out, t, r)
			}
			return nil
		}),
	}
	c.Flags().BoolVar(&approve, "approve", false, "also apply what the policy says waits for approval (never what it denies)")
	c.Flags().BoolVar(&remember, "remember", false, "with --approve: let later changes of those paths and hosts through on this folder (kule rules lists them)")
	c.Flags().BoolVar(&includeIgnored, "include-ignored", false, "also apply paths the folder's .gitignore excludes")
	c.Flags().BoolVar(&asJSON, "json", false, "print what was applied as JSON")
	return c
}

func verdictsOf(j *kernel.Judgement) []kernel.Verdict {
	if j == nil {
		return nil
	}
	return j.Ruling.Verdicts
}

func rollbackCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "rollback TASK",
		Short: "Throw away the task's uncommitted changes: the copy matches the folder again",
		Args:  cobra.ExactArgs(1),
		RunE: withTask(func(k *kernel.Kernel, t *kernel.Task, cmd *cobra.Command, args []string) error {
			rep, err := k.Rollback(cmd.Context(), t)
			if err != nil {
				return err
			}
			for _, line := range rep.Git {
				fmt.Fprintln(cmd.OutOrStdout(), line)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "rolled back %s · the copy matches %s again\n", plural(rep.Changes, "change"), t.Folder)
			return nil
		}),
	}
}

func undoCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "undo TASK",
		Short: "Revert the task's newest commit from its checkpoint (repeat to walk back)",
		Args:  cobra.ExactArgs(1),
		RunE: withTask(func(k *kernel.Kernel, t *kernel.Task, cmd *cobra.Command, args []string) error {
			var rep *kernel.UndoReport
			err := withProgress(cmd.Context(), cmd.ErrOrStderr(), "undoing", func(ctx context.Context) (err error) {
				rep, err = k.Undo(ctx, t)
				return err
			})
			if err != nil {
				return err
			}
			as := "are as they were"
			if rep.Paths == 1 {
				as = "is as it was"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "undid checkpoint %d · %s in %s %s before it\n", rep.Checkpoint, plural(rep.Paths, "path"), t.Folder, as)
			return nil
		}),
	}
}

func listCommand() *cobra.Command {
	var asJSON, fresh bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List the tasks, their changes and where they meet",
		Long: `Lists every task with its uncommitted changes and where it meets other
tasks on the same folder and your own edits in the folder. Each task's line
comes from what its last kule status or kule exec found (kept as the task's
summary), so kule list does not walk every copy; a task without one, or whose
base moved since (a commit, rollback or undo), is looked at now. Changes made
in a copy by hand since then show at its next status, or with --fresh.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			k, err := openKernel()
			if err != nil {
				return err
			}
			list, err := k.Summaries(cmd.Context(), fresh)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			var rows []map[string]any
			for _, r := range list {
				t := r.Task
				row := map[string]any{"id": t.ID, "folder": t.Folder, "created": t.Created, "backend": t.Backend, "name": t.Name}
				if r.Err != nil {
					row["error"] = r.Err.Error()
					rows = append(rows, row)
					continue
				}
				row["changes"] = r.Summary.Changes
				row["summary"] = r.Summary.Line
				row["as_of"] = r.Summary.Time
				row["named"] = r.Summary.Named
				row["meets"] = r.Meets
				rows = append(rows, row)
			}
			broken, err := k.Store().Broken()
			if err != nil {
				return err
			}
			for _, b := range broken {
				rows = append(rows, map[string]any{"id": b.ID, "broken": true, "reason": b.Reason, "dir": b.Dir, "busy": b.Busy})
			}
			if asJSON {
				if rows == nil {
					rows = []map[string]any{}
				}
				return printJSON(out, rows)
			}
			if len(rows) == 0 {
				fmt.Fprintln(out, "no tasks · kule new FOLDER makes one")
			}
			defer func() {
				for _, b := range broken {
					next := "kule delete " + b.ID + " removes it"
					if b.Busy {
						next = "it is listed as a task once it is made"
					}
					fmt.Fprintf(out, "%s  broken: %s · %s (%s)\n", b.ID, safeLine(b.Reason), next, safeLine(b.Dir))
				}
			}()
			// One line a task, in columns: id, name, folder, its changes, its
			// state; where it meets others below it.
			type line struct{ id, name, folder, changes, state string }
			var lines []line
			var wName, wFolder, wChanges int
			for i, r := range rows {
				if r["broken"] == true {
					continue // said last
				}
				t := list[i].Task
				l := line{id: t.ID, name: safeLine(t.Name), folder: safeLine(t.Folder)}
				if l.name == "" {
					l.name = "-"
				}
				if e, ok := r["error"].(string); ok {
					l.changes, l.state = "-", "error: "+safeLine(e)
				} else {
					l.changes, _ = r["summary"].(string)
					switch {
					case kernel.TaskBusy(t):
						l.state = "busy: a command or commit runs"
					case r["changes"] == 0:
						l.state = "clean"
					default:
						l.state = "to review"
					}
					if at, ok := r["as_of"].(time.Time); ok {
						l.state += " · as of " + ago(time.Since(at))
					}
				}
				wName, wFolder, wChanges = max(wName, len(l.name)), max(wFolder, len(l.folder)), max(wChanges, len(l.changes))
				lines = append(lines, l)
			}
			for i, l := range lines {
				r := rows[i]
				fmt.Fprintf(out, "%s  %-*s  %-*s  %-*s  %s\n", l.id, wName, l.name, wFolder, l.folder, wChanges, l.changes, l.state)
				ms, _ := r["meets"].([]kernel.Meet)
				for _, m := range ms {
					fmt.Fprintln(out, "    "+safeLine(m.Line))
				}
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the tasks as JSON")
	c.Flags().BoolVar(&fresh, "fresh", false, "look at every task's copy now instead of using its last status")
	return c
}

// ago says how long ago, as a person reads it: "just now", "5 min ago".
func ago(d time.Duration) string {
	switch {
	case d < 10*time.Second:
		return "just now"
	case d < time.Minute:
		return fmt.Sprintf("%d s ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d.Hours()))
	}
	return fmt.Sprintf("%d days ago", int(d.Hours()/24))
}

func deleteCommand() *cobra.Command {
	var yes bool
	c := &cobra.Command{
		Use:   "delete TASK",
		Short: "Delete a task and its copy (the folder is not touched)",
		Long: `Deletes the task's copy, base, checkpoints and history. The folder is not
touched. A broken task (what an interrupted kule new or kule delete left,
shown by kule list) is removed the same way, by its id.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, err := openKernel()
			if err != nil {
				return err
			}
			t, err := k.Resolve(args[0])
			if err != nil && !errors.Is(err, kernel.ErrBadID) && !errors.Is(err, kernel.ErrAmbiguous) {
				b, berr := k.Store().ResolveBroken(args[0])
				if berr != nil {
					return err
				}
				if err := k.DeleteBroken(b); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "deleted broken task %s (%s) · no folder was touched\n", b.ID, safeLine(b.Reason))
				return nil
			}
			if err != nil {
				return err
			}
			st, err := k.Status(cmd.Context(), t)
			if err == nil && len(st.Effects) > 0 && !yes {
				them := "them"
				if len(st.Effects) == 1 {
					them = "it"
				}
				return fmt.Errorf("delete: task %s has %s; commit %s, or run kule delete %s --yes to throw %s away (the folder is untouched either way)",
					t.ID, count(len(st.Effects), "uncommitted change", "uncommitted changes"), them, t.ID, them)
			}
			if err := k.Delete(cmd.Context(), t); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "deleted task %s · %s is untouched\n", t.ID, t.Folder)
			return nil
		},
	}
	c.Flags().BoolVarP(&yes, "yes", "y", false, "delete even with uncommitted changes")
	return c
}

func historyCommand() *cobra.Command {
	var verify, asJSON bool
	c := &cobra.Command{
		Use:   "history TASK",
		Short: "Show the task's signed history of commits and undos",
		Args:  cobra.ExactArgs(1),
		RunE: withTask(func(k *kernel.Kernel, t *kernel.Task, cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			log, err := k.HistoryLog(t)
			if err != nil {
				return err
			}
			if verify {
				if err := k.VerifyHistory(t); err != nil {
					return fmt.Errorf("history of task %s does not verify: %w", t.ID, err)
				}
			}
			entries, err := log.Entries()
			if err != nil {
				return err
			}
			if asJSON {
				if entries == nil {
					entries = []kernel.HistoryEntry{}
				}
				return printJSON(out, entries)
			}
			if verify {
				fmt.Fprintf(out, "history verifies: %s, each signed and chained to the one before\n", count(len(entries), "entry", "entries"))
			}
			for _, e := range entries {
				var d kernel.HistoryData
				_ = json.Unmarshal(e.Data, &d)
				fmt.Fprintf(out, "%3d  %s  %-6s  checkpoint %d", e.Seq, e.Time.Local().Format("2006-01-02 15:04:05"), e.Kind, d.Checkpoint)
				if e.Kind == "commit" {
					fmt.Fprintf(out, "  +%d ~%d -%d", d.Counts.Added, d.Counts.Changed, d.Counts.Deleted)
					if d.Counts.Moved > 0 {
						fmt.Fprintf(out, " »%d", d.Counts.Moved)
					}
				}
				fmt.Fprintln(out)
			}
			return nil
		}),
	}
	c.Flags().BoolVar(&verify, "verify", false, "check every signature and the hash chain")
	c.Flags().BoolVar(&asJSON, "json", false, "print the entries as JSON")
	return c
}

// orEmpty is ss, or an empty list where it is nil: JSON says [] not null.
func orEmpty(ss []string) []string {
	if ss == nil {
		return []string{}
	}
	return ss
}
