// Package kernel is Kule's trusted core as one value: it makes tasks on a
// folder, runs commands in their copies, finds what they changed, and
// commits, rolls back and undoes those changes crash-safely, keeping a
// checkpoint of everything it replaces and a signed history of what it did.
//
// cmd/kule only wires flags to these methods; every rule lives here or in the
// kernel/... packages it holds together.
package kernel

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/kulehq/kule/kernel/internal/apply"
	"github.com/kulehq/kule/kernel/internal/atomicfile"
	"github.com/kulehq/kule/kernel/internal/checkpoint"
	"github.com/kulehq/kule/kernel/internal/clone"
	"github.com/kulehq/kule/kernel/internal/crashpoint"
	"github.com/kulehq/kule/kernel/internal/effects"
	"github.com/kulehq/kule/kernel/internal/history"
	"github.com/kulehq/kule/kernel/internal/homelayer"
	"github.com/kulehq/kule/kernel/internal/limits"
	"github.com/kulehq/kule/kernel/internal/manifest"
	"github.com/kulehq/kule/kernel/internal/overlay"
	"github.com/kulehq/kule/kernel/internal/pluginhost"
	"github.com/kulehq/kule/kernel/internal/review"
	"github.com/kulehq/kule/kernel/internal/runner"
	"github.com/kulehq/kule/kernel/internal/sandbox"
	"github.com/kulehq/kule/kernel/internal/task"
	"github.com/kulehq/kule/kernel/internal/walk"
)

// Errors a caller can test for.
var (
	ErrNotFolder         = errors.New("not a folder")
	ErrChangedUnderneath = errors.New("the folder changed underneath")
	ErrNothingToUndo     = errors.New("nothing to undo")
	ErrUndoBlocked       = errors.New("the folder no longer holds what that commit wrote")
	ErrInsideKuleHome    = errors.New("the folder is inside Kule's home")
	// ErrCopyChanged: the copy changed between judging and applying (a
	// command still writing to it); nothing was applied.
	ErrCopyChanged = apply.ErrSourceChanged
)

// Config builds a Kernel.
type Config struct {
	Home    string        // $KULE_HOME
	Runner  runner.Runner // how exec starts commands; runner.Direct when nil
	Backend string        // force a workspace backend ("reflink", "copy", "overlay"); "" picks
	// OverlayFrom is how many entries a folder without reflinks must have
	// to get the overlay backend when none is forced (0: DefaultOverlayFrom).
	OverlayFrom int

	// Plugins are the built-in plugins the plugin host may start (cmd/kule
	// hands over plugins/builtin's table: the kernel never imports plugins).
	Plugins []pluginhost.Builtin
	// PluginBinary is the executable that serves Plugins (kule-plugins
	// beside kule); "" is this process's own binary.
	PluginBinary string
	// PluginSandbox is the sandbox every plugin starts in (nil: the zero
	// sandbox, which fails closed where isolation is missing).
	PluginSandbox *sandbox.Sandbox
	// Logger is the kernel's log; plugins log under their names in it.
	Logger hclog.Logger
	// Differs, when set, reads file formats instead of the plugin host
	// (tests give review.InProcess).
	Differs review.Differs
	// Agents is the catalogue of agents that ship with Kule, one <name>.toml
	// of profiles each (cmd/kule hands over plugins/agent's: the kernel holds
	// how profiles are read, checked and approved, never which agents exist).
	// Nil: no built-in agents, only the person's agents.toml.
	Agents fs.FS
}

// Kernel is Kule's core. It does not change once New returns it, so one
// value serves any number of goroutines: what a single run needs of its own
// (its runner, its network hooks) comes from With, which returns a new value
// sharing this one's core.
type Kernel struct {
	store   *task.Store
	runner  runner.Runner
	net     NetHooks // how a run's connections reach a person (the daemon); zero: refused at once
	backend string
	key     *signingKey // shared by every value With derives
	mem     *memHandle  // the memory of runs (memory.go), shared likewise
	cfg     Config
}

// RunHooks are what one run of a task needs of its own: how its commands
// start and how its connections reach a person.
type RunHooks struct {
	Runner runner.Runner // nil: the Kernel's own runner
	Net    NetHooks      // zero: a connection the policy asks about is refused at once
}

// With returns a Kernel that runs commands with h's runner and asks a
// person through h's network hooks. It shares k's home, settings and
// signing key; k itself is not changed, so runs on other goroutines keep
// their own hooks.
func (k *Kernel) With(h RunHooks) *Kernel {
	kk := *k
	if h.Runner != nil {
		kk.runner = h.Runner
	}
	kk.net = h.Net
	return &kk
}

// Store is the home's task store.
func (k *Kernel) Store() *task.Store { return k.store }

// Home is the Kule home the Kernel opened ($KULE_HOME).
func (k *Kernel) Home() string { return k.store.Root }

// signingKey is the history's signing key, read (or made) on first use
// under a lock: opening a Kernel never writes to keys/, and two goroutines
// committing on a fresh Kernel read it once.
type signingKey struct {
	mu  sync.Mutex
	key ed25519.PrivateKey
}

// New opens the Kule home.
func New(cfg Config) (*Kernel, error) {
	s, err := task.Open(cfg.Home)
	if err != nil {
		return nil, err
	}
	r := cfg.Runner
	if r == nil {
		r = runner.Direct{}
	}
	b := cfg.Backend
	if b == "" {
		b = os.Getenv("KULE_BACKEND")
	}
	k := &Kernel{store: s, runner: r, backend: b, key: &signingKey{}, mem: &memHandle{}, cfg: cfg}
	// A misspelt name is refused by every command, not only by the kule
	// new it would change: one that ignored it would let the person think
	// their tasks are made some other way.
	if clone.CheckBackend(b) != nil {
		return nil, fmt.Errorf("%s=%q is %w (%s): unset it to let Kule pick by the file system, or set one of those (nothing was changed)", k.backendSource(), b, clone.ErrUnknownBackend, strings.Join(clone.Backends, ", "))
	}
	return k, nil
}

func (k *Kernel) signingKey() (ed25519.PrivateKey, error) {
	k.key.mu.Lock()
	defer k.key.mu.Unlock()
	if k.key.key == nil {
		key, err := history.LoadKey(k.store.KeysDir())
		if err != nil {
			return nil, err // not kept: the next call tries again
		}
		k.key.key = key
	}
	return k.key.key, nil
}

// HistoryLog opens a task's signed history.
func (k *Kernel) HistoryLog(t *task.Task) (*history.Log, error) {
	key, err := k.signingKey()
	if err != nil {
		return nil, err
	}
	return history.Open(t.Paths.History, key), nil
}

// VerifyHistory checks every signature and the hash chain of a task's
// history, and that no entry was removed from its end.
func (k *Kernel) VerifyHistory(t *task.Task) error {
	key, err := k.signingKey()
	if err != nil {
		return err
	}
	return history.Verify(t.Paths.History, key.Public().(ed25519.PublicKey))
}

// LimitsFor is what a task's runs may take: the task's own fields over the
// home's [limits] settings, with the defaults every run has (a process
// count of limits.DefaultPids) where neither sets one.
func LimitsFor(t *task.Task, home limits.Limits) limits.Limits {
	return t.Limits.Over(home).Resolved()
}

// DiskPaths are the folders a task's runs grow, measured for its disk
// limit: the copy, its tmp, its home layer and its caches (what package
// managers and build tools keep for the task, which grows as much as the
// copy does), and on the overlay backend the overlay's layers, where a
// running command's writes land until they are folded into the copy.
func DiskPaths(t *task.Task) []string {
	ps := []string{t.Paths.Copy, t.Paths.Tmp, t.Paths.Home, filepath.Join(t.Paths.Dir, "cache")}
	if t.Backend == clone.Overlay {
		ps = append(ps, filepath.Join(t.Paths.Dir, "overlay"))
	}
	return ps
}

// NewReport is what making a task learned.
type NewReport struct {
	Task     *task.Task
	Files    int
	Problems []walk.Problem // passed over: special files, unreadable entries
	// Notes are what a person should know of the new task: settings files
	// whose values git holds (see EnvTrackedNote).
	Notes []string
}

// NewTask makes a task on folder: its copy, its base, its manifest. Nothing
// in the folder is written. A failure leaves no half-made task behind; so
// does ctx ending before the task is in place (it is looked at between the
// steps: a copy under way runs to its end first).
func (k *Kernel) NewTask(ctx context.Context, folder string) (*NewReport, error) {
	abs, err := filepath.Abs(folder)
	if err != nil {
		return nil, fmt.Errorf("new: %w", err)
	}
	st, err := os.Stat(abs)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("new: %s does not exist (check the path; nothing was made)", abs)
	}
	if err != nil {
		return nil, fmt.Errorf("new: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("new: %s: %w — Kule works on a whole folder; give the folder that holds it (nothing was made)", abs, ErrNotFolder)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("new: %w", err)
	}
	if err := k.checkBackend(); err != nil {
		return nil, fmt.Errorf("new: %w", err)
	}
	if folderGuard {
		personHome, _ := os.UserHomeDir() // none: only the root and Kule's home are checked
		if err := CheckTaskFolder(real, personHome, k.store.Root); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("new: %w (nothing was made)", err)
	}
	id, err := k.store.NewID()
	if err != nil {
		return nil, err
	}
	// The task is made under a temporary name and renamed into place last:
	// an interrupted new leaves tasks/.new-<id>, which kule list shows as
	// broken and kule delete removes, never a task that is only half there.
	// Its lock says a new is still at work on it.
	dir := k.store.NewDir(id)
	paths := task.LayoutOf(dir)
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(dir)
		}
	}()
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("new: %w (nothing was made)", err)
	}
	lk, err := task.LockFile(paths.Lock)
	if err != nil {
		return nil, fmt.Errorf("new: %w (nothing was made)", err)
	}
	defer lk.Unlock()
	for _, d := range []string{paths.Base, paths.Home, paths.Tmp, paths.Checkpoints} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("new: %w", err)
		}
	}
	crashpoint.Hit("new.made")
	res, err := clone.Tree(real, paths.Copy, paths.Base, clone.Options{Backend: k.backend, OverlayFrom: k.overlayFrom(), Progress: progressFrom(ctx)})
	if err != nil {
		return nil, fmt.Errorf("new: copy %s: %w (nothing in the folder was changed)", real, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("new: %w (nothing was made)", err)
	}
	crashpoint.Hit("new.copied")
	if err := manifest.Save(manifestPath(paths), res.Manifest); err != nil {
		return nil, fmt.Errorf("new: %w", err)
	}
	// The task's own home: writes to ~ wait for review instead of landing.
	if realHome, err := os.UserHomeDir(); err == nil && realHome != "/" {
		if err := os.Remove(paths.Home); err == nil {
			if err := homelayer.Build(homeLayerOf(paths), realHome); err != nil {
				return nil, fmt.Errorf("new: home layer: %w", err)
			}
		}
	}
	t := &task.Task{ID: id, Folder: real, Created: time.Now().UTC(), Backend: res.Manifest.Backend, Paths: paths}
	if err := saveGitBase(t); err != nil { // .git is judged by meaning: see git.go
		return nil, fmt.Errorf("new: judge the folder's git repositories: %w (nothing was made)", err)
	}
	masked, err := k.maskEnv(t) // .env values the agent never sees: see envmask.go
	if err != nil {
		return nil, fmt.Errorf("new: %w (nothing was made)", err)
	}
	if t.Backend == clone.Overlay {
		// The copy is the base (bar the masked files): the first status
		// need not walk it (foldrecord.go).
		es := make([]overlay.RecordEntry, len(masked))
		for i, p := range masked {
			es[i] = overlay.RecordEntry{Path: p}
		}
		writeFoldRecord(t, es)
	}
	var notes []string
	tracked, err := envTracked(real) // what masking cannot hide: see envtracked.go
	if err != nil && hasDotenv(res.Manifest) {
		notes = append(notes, fmt.Sprintf("could not tell whether git tracks the folder's .env files (%v): if it does, their values are in the repository the agent can read", err))
	}
	t.EnvTracked = tracked
	for _, rel := range tracked {
		notes = append(notes, EnvTrackedNote(rel))
	}
	if err := k.store.SaveIn(dir, t); err != nil {
		return nil, fmt.Errorf("new: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("new: %w (nothing was made)", err)
	}
	crashpoint.Hit("new.saved")
	final := filepath.Join(k.store.TasksDir(), id)
	if err := os.Rename(dir, final); err != nil {
		return nil, fmt.Errorf("new: %w (nothing was made)", err)
	}
	dir, t.Paths = final, task.LayoutOf(final) // a failure from here removes the task whole
	if err := atomicfile.SyncDir(k.store.TasksDir()); err != nil {
		return nil, fmt.Errorf("new: %w", err)
	}
	crashpoint.Hit("new.renamed")
	files := 0
	for _, e := range res.Manifest.Entries {
		if e.Type == effects.TypeFile || e.Type == effects.TypeLink {
			files++
		}
	}
	ok = true
	return &NewReport{Task: t, Files: files, Problems: res.Problems, Notes: notes}, nil
}

func manifestPath(p task.Paths) string { return filepath.Join(p.Base, "manifest") }

func baseOf(t *task.Task) clone.Base {
	return clone.Base{Dir: t.Paths.Base, Backend: t.Backend, Folder: t.Folder}
}

// Resolve finds a task by a unique prefix of its id.
func (k *Kernel) Resolve(prefix string) (*task.Task, error) { return k.store.Resolve(prefix) }

// lock takes the task's lock and finishes any change a crash interrupted.
func (k *Kernel) lock(t *task.Task) (*task.Lock, error) {
	l, err := task.LockFile(t.Paths.Lock)
	if err != nil {
		return nil, err
	}
	if err := k.recover(t); err != nil {
		l.Unlock()
		return nil, err
	}
	if err := foldOverlay(t); err != nil { // a command's changes a killed kule left unfolded
		l.Unlock()
		return nil, err
	}
	return l, nil
}

// recover rolls an interrupted commit or undo forward or back. It needs the
// folder lock too: the folder is what it repairs.
func (k *Kernel) recover(t *task.Task) error {
	if _, err := os.Stat(t.Paths.Journal); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	fl, err := task.LockFile(k.store.FolderLockPath(t.Folder))
	if err != nil {
		return err
	}
	defer fl.Unlock()
	j, forward, err := apply.Recover(t.Folder, t.Paths.Journal, func(j *apply.Journal) error { return k.finish(t, j) })
	if err != nil {
		return fmt.Errorf("recover task %s: %w", t.ID, err)
	}
	if j != nil && !forward && j.Kind == "commit" {
		// Rolled back: the commit never happened, so undo must not take
		// its checkpoint back.
		var d journalData
		if json.Unmarshal(j.Data, &d) == nil && d.Checkpoint > 0 {
			cp, err := checkpoint.Open(t.Paths.Checkpoints)
			if err != nil {
				return err
			}
			defer cp.Close()
			return cp.MarkUndone(d.Checkpoint)
		}
	}
	return nil
}

// Delete removes a task and everything Kule kept for it. The folder is not
// touched; uncommitted changes in the copy are lost, which the CLI says first.
// ctx ends it only before anything is removed.
func (k *Kernel) Delete(ctx context.Context, t *task.Task) error {
	l, err := k.lock(t)
	if err != nil {
		return err
	}
	defer l.Unlock()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete %s: %w (nothing was removed)", t.ID, err)
	}
	// Make the copy writable everywhere first: a command may have left
	// read-only directories that would stop RemoveAll.
	_ = filepath.WalkDir(t.Paths.Dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	trash := t.Paths.Dir + ".deleting"
	if err := os.Rename(t.Paths.Dir, trash); err != nil {
		return fmt.Errorf("delete %s: %w", t.ID, err)
	}
	return os.RemoveAll(trash)
}

// DeleteBroken removes what an interrupted kule new or kule delete left
// under tasks/ (see task.Store.Broken). It refuses while a kule new is
// still making that task. Nothing outside the directory is touched: links
// inside it are removed, never followed.
func (k *Kernel) DeleteBroken(b *task.Broken) error {
	lockPath := filepath.Join(b.Dir, "lock")
	if _, err := os.Lstat(lockPath); err == nil {
		l, err := task.TryLockFile(lockPath)
		if err != nil {
			return fmt.Errorf("delete %s: %w", b.ID, err)
		}
		if l == nil {
			return fmt.Errorf("delete %s: %w; wait for it to end (nothing was removed)", b.ID, task.ErrBusy)
		}
		defer l.Unlock()
	}
	_ = filepath.WalkDir(b.Dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	if err := os.RemoveAll(b.Dir); err != nil {
		return fmt.Errorf("delete %s: %w (what is left stays listed in kule list)", b.ID, err)
	}
	return nil
}

// Progress counts the files and bytes of a long piece of work as it is
// done (today: the copy NewTask makes), for a caller that shows a progress
// bar. See [clone.Progress].
type Progress = clone.Progress

type progressKey struct{}

// WithProgress has the kernel count into p the work done under ctx.
func WithProgress(ctx context.Context, p *Progress) context.Context {
	return context.WithValue(ctx, progressKey{}, p)
}

func progressFrom(ctx context.Context) *Progress {
	p, _ := ctx.Value(progressKey{}).(*Progress)
	return p
}
