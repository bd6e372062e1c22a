package kernel

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/kulehq/kule/kernel/internal/clone"
	"github.com/kulehq/kule/kernel/internal/crashpoint"
	"github.com/kulehq/kule/kernel/internal/effects"
	"github.com/kulehq/kule/kernel/internal/gitstate"
	"github.com/kulehq/kule/kernel/internal/homelayer"
	"github.com/kulehq/kule/kernel/internal/ignore"
	"github.com/kulehq/kule/kernel/internal/limits"
	"github.com/kulehq/kule/kernel/internal/manifest"
	"github.com/kulehq/kule/kernel/internal/relpath"
	"github.com/kulehq/kule/kernel/internal/runner"
	"github.com/kulehq/kule/kernel/internal/scan"
	"github.com/kulehq/kule/kernel/internal/task"
	"github.com/kulehq/kule/kernel/internal/walk"
)

// Status is a task's uncommitted changes.
type Status struct {
	Task     *task.Task
	Effects  []effects.Effect
	Problems []walk.Problem
	// Git holds, per repository in the folder, what the task did to it by
	// meaning (kernel/internal/gitstate); its Lines go under the file changes and
	// each is the `git` object of status --json.
	Git     []*gitstate.Effects
	gitBase *gitstate.Base
	// Network says where the last run connected, one line a host (set by
	// Exec only).
	Network []string
	// Home lists what the task's commands changed in their home layer:
	// caught for review, never part of a commit.
	Home []homelayer.Change

	manifest *manifest.Manifest // partial: only the entries the effects name (foldrecord.go)
	partial  bool
	gitDirs  []string // the directories holding a .git, as the scan found them
	ignore   *ignore.Matcher
	folder   bool       // compared the real folder, not the copy (FolderStatus)
	judged   *Judgement // set by JudgeStatus: the git lines carry its verdicts
}

// Pending returns the effects a commit would apply: all but the ignored ones
// unless includeIgnored.
func (s *Status) Pending(includeIgnored bool) []effects.Effect {
	var out []effects.Effect
	for _, e := range s.Effects {
		if includeIgnored || !e.Ignored {
			out = append(out, e)
		}
	}
	return out
}

// IgnoredCount counts the effects the folder's .gitignore excludes.
func (s *Status) IgnoredCount() int {
	n := 0
	for _, e := range s.Effects {
		if e.Ignored {
			n++
		}
	}
	return n
}

// Status finds what a task changed in its copy since the last sync. ctx
// ends the walk of the copy early (the error is then ctx's).
func (k *Kernel) Status(ctx context.Context, t *task.Task) (*Status, error) {
	if overlayPending(t) {
		// A command's changes a killed kule left in the overlay's upper
		// layer: folded now unless a command holds the task (then its
		// layer is live, and it folds it itself when it ends).
		if l, err := task.TryLockFile(t.Paths.Lock); err == nil && l != nil {
			ferr := foldOverlay(t)
			l.Unlock()
			if ferr != nil {
				return nil, ferr
			}
		}
	}
	if _, err := os.Stat(t.Paths.Journal); err == nil {
		l, err := k.lock(t)
		if err != nil {
			return nil, err
		}
		defer l.Unlock()
		return k.statusOf(ctx, t, true)
	}
	if t.Backend == clone.Overlay {
		// Held while the copy is walked, a walk may begin the record of
		// the folds (foldrecord.go); a command holding it folds later.
		if l, err := task.TryLockFile(t.Paths.Lock); err == nil && l != nil {
			defer l.Unlock()
			return k.statusOf(ctx, t, true)
		}
	}
	return k.statusOf(ctx, t, false)
}

// StatusFull is Status from a walk of the whole copy, never from the
// record of the overlay backend's folds: it sees what a person changed in
// the copy with a program of their own, and begins the record anew.
func (k *Kernel) StatusFull(ctx context.Context, t *task.Task) (*Status, error) {
	if err := forgetFolds(t); err != nil {
		return nil, err
	}
	return k.Status(ctx, t)
}

func (k *Kernel) status(ctx context.Context, t *task.Task) (*Status, error) {
	// The repositories the base knows are judged while the files are
	// compared: the two read different parts of the copy. Repositories the
	// task made are found by the file walk itself (it sees every `.git`).
	type gitResult struct {
		base *gitstate.Base
		effs []*gitstate.Effects
		err  error
	}
	gitDone := make(chan gitResult, 1)
	go func() {
		gb, effs, err := compareGit(t)
		gitDone <- gitResult{gb, effs, err}
	}()
	walking := scan.Start(ctx, t.Paths.Copy) // walks while the manifest loads
	m, err := manifest.Load(manifestPath(t.Paths))
	if err != nil {
		walking.Wait()
		<-gitDone
		return nil, fmt.Errorf("status %s: %w (the task's base is damaged; the folder itself is untouched — `kule rollback` cannot help here, make a new task)", t.ID, err)
	}
	ign := ignoreRules(t, func(yield func(string) bool) {
		for i := range m.Entries {
			if !yield(m.Entries[i].Path) {
				return
			}
		}
	})
	res, err := walking.Compare(m, baseOf(t), scan.Options{Ignore: ign})
	gr := <-gitDone
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("status %s: the task's copy is gone (%s); the folder is untouched — delete the task and make a new one", t.ID, t.Paths.Copy)
		}
		return nil, fmt.Errorf("status %s: %w", t.ID, err)
	}
	if gr.err != nil {
		return nil, fmt.Errorf("status %s: git: %w", t.ID, gr.err)
	}
	return finishStatus(t, res, gr.base, gr.effs, m, ign)
}

// compareGit loads the task's git base and compares the repositories it
// knows with the copy.
func compareGit(t *task.Task) (*gitstate.Base, []*gitstate.Effects, error) {
	gb, err := gitstate.LoadBase(gitBasePath(t.Paths))
	if err != nil {
		return nil, nil, err
	}
	effs, err := gb.CompareRepos(t.Paths.Copy)
	return gb, effs, err
}

// finishStatus is the end of a status, from a walk or from the record of
// the folds: the repositories the task made (the scan's GitDirs), their
// config described, and the home layer's changes. m is the manifest the
// scan compared with (the part of it read, for a status from the record).
func finishStatus(t *task.Task, res *scan.Result, gb *gitstate.Base, git []*gitstate.Effects, m *manifest.Manifest, ign *ignore.Matcher) (*Status, error) {
	found, err := gitstate.ProbeDirs(t.Paths.Copy, res.GitDirs)
	if err != nil {
		return nil, fmt.Errorf("status %s: git: %w", t.ID, err)
	}
	git = append(git, gb.Made(found)...)
	gitstate.DescribeConfig(t.Folder, t.Paths.Copy, git)
	home, _ := homelayer.Changes(HomeLayer(t)) // a task made before home layers has none
	return &Status{Task: t, Effects: res.Effects, Problems: res.Problems, Git: git, gitBase: gb, Home: home, manifest: m, gitDirs: res.GitDirs, ignore: ign}, nil
}

// ignoreRules reads the .gitignore files among the base's paths — from
// the real folder, never from the copy.
func ignoreRules(t *task.Task, paths iter.Seq[string]) *ignore.Matcher {
	var rels []string
	for p := range paths {
		if relpath.Base(p) == ".gitignore" && !scan.IsGitPath(p) {
			rels = append(rels, p)
		}
	}
	return ignore.Load(t.Folder, rels)
}

// ExecOptions are what `kule exec` passes beyond the command.
type ExecOptions struct {
	Args   []string
	Subdir string // working directory relative to the folder root ("" = root)
	Spec   runner.Spec
	Limits limits.Limits // what the run may take; zero fields are no limit
	// AllowHosts are host:port the person named for this command (kule
	// exec --allow-host): they pass where the policy would ask, and may
	// be on loopback or a private network (a local model).
	AllowHosts []string
	// Supervised, when set, is given the run's supervisor before the
	// command starts: the daemon reads its Usage for the app's Live view.
	Supervised func(*limits.Run)
}

// Exec runs a command in the task's copy and returns its exit code and the
// task's status afterwards. The task is locked while the command runs, so a
// commit never applies a half-written copy. The run is remembered
// (memory.go); memory never changes what Exec returns.
func (k *Kernel) Exec(ctx context.Context, t *task.Task, opt ExecOptions) (int, *Status, error) {
	go warmProcessStart()
	rec, tail := k.memExecStart(t, opt.Args), withStderrTail(&opt.Spec)
	code, st, err := k.exec(ctx, t, opt, rec)
	k.memExecEnd(t, rec, code, st, err, tail)
	return code, st, err
}

func (k *Kernel) exec(ctx context.Context, t *task.Task, opt ExecOptions, rec *execRecord) (int, *Status, error) {
	l, err := k.lock(t)
	if err != nil {
		return -1, nil, err
	}
	defer l.Unlock()
	dir := t.Paths.Copy
	if opt.Subdir != "" {
		if err := relpath.Check(opt.Subdir); err != nil {
			return -1, nil, fmt.Errorf("exec: %w", err)
		}
		d := filepath.Join(t.Paths.Copy, opt.Subdir)
		if st, err := os.Lstat(d); err == nil && st.IsDir() {
			dir = d
		}
	}
	spec := opt.Spec
	spec.Args = opt.Args
	spec.Dir = dir
	spec.Task = runner.Task{ID: t.ID, Dir: t.Paths.Dir, Copy: t.Paths.Copy, Folder: t.Folder, Tmp: t.Paths.Tmp, Home: t.Paths.Home, KuleDir: k.store.Root}
	if spec.Task.Upper, spec.Task.Work, err = prepareOverlay(t); err != nil { // see overlayexec.go
		return -1, nil, fmt.Errorf("exec: %w (the command did not run)", err)
	}
	if spec.Env == nil {
		spec.Env = os.Environ()
	}
	// A fresh copy has new inodes and change times: git trusts size and
	// mtime alone there, set through the environment, never the copy's config.
	spec.Env = gitstate.CommandEnv(spec.Env)
	if homelayer.Ready(HomeLayer(t)) == nil {
		spec.Env = withEnv(spec.Env, "HOME", t.Paths.Home)
		spec.Env = withEnv(spec.Env, "XDG_CONFIG_HOME", filepath.Join(t.Paths.Home, ".config"))
	}
	lim := opt.Limits
	if lim.Disk > 0 && t.DiskBase == 0 {
		// Measured once, at the first run with a disk limit (a walk of
		// the whole copy is not worth paying when the task is made).
		t.DiskBase = limits.DiskUsage(DiskPaths(t)...)
		if err := k.store.Save(t); err != nil {
			return -1, nil, err
		}
	}
	// Every run is supervised: its time is the task's (--task-time).
	sup, err := limits.Supervise(ctx, lim, limits.Task{Dir: t.Paths.Dir, DiskPaths: DiskPaths(t), DiskBase: t.DiskBase}, nil)
	if err != nil {
		return -1, nil, fmt.Errorf("exec: %w", err)
	}
	spec.FileSizeLimit = sup.FileSizeLimit()
	if opt.Supervised != nil {
		opt.Supervised(sup)
	}
	started := spec.Started
	spec.Started = func(pid int) {
		sup.Started(pid)
		if started != nil {
			started(pid)
		}
	}
	if _, err := k.maskEnv(t); err != nil { // see envmask.go
		return -1, nil, fmt.Errorf("exec: %w (the command did not run)", err)
	}
	stopProxy, err := k.withProxy(ctx, t, &spec, opt.AllowHosts, rec)
	if err != nil {
		return -1, nil, err
	}
	if _, layered := k.runner.(runner.Layered); !layered && spec.Task.Upper != "" {
		// The command writes the copy itself (--no-sandbox): no fold
		// will note what it changed.
		if err := forgetFolds(t); err != nil {
			return -1, nil, fmt.Errorf("exec: %w (the command did not run)", err)
		}
	}
	code, runErr := k.runner.Run(ctx, spec)
	netLines := stopProxy()
	crashpoint.Hit("exec.ran")
	if ferr := foldOverlay(t); ferr != nil && runErr == nil {
		runErr = fmt.Errorf("exec: %w", ferr)
	}
	// The command's end is reported even when ctx ended it (an interrupt):
	// what it did before is still what the person reviews.
	st, err := k.statusOf(context.WithoutCancel(ctx), t, true)
	if st != nil {
		st.Network = netLines
		k.SaveWholeSummary(st) // what kule list shows, until the next status
	}
	if lerr := sup.Wait(); lerr != nil {
		return code, st, fmt.Errorf("exec: %w", lerr)
	}
	if runErr != nil {
		return code, st, runErr
	}
	return code, st, err
}

// withEnv sets key=value in env, replacing any earlier value.
func withEnv(env []string, key, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return append(out, key+"="+value)
}

// warmProcessStart makes the Go runtime's one-time check that pidfds work
// now, on a goroutine beside the task's lock and loading. The check is a
// vfork of kule whose child exits at once, made when kule first starts a
// process; left to the sandbox helper's start, it came while the other
// core made the run's proxy ready and took 1.0–1.3 ms there (0.2–0.3 ms in
// a program doing nothing else), and the whole exec 1.6 ms more. Once a
// process: the daemon runs many execs, and the check is made once.
var warmProcessStart = sync.OnceFunc(func() {
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		_ = p.Release()
	}
})
