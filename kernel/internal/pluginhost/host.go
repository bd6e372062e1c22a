// Package pluginhost runs Kule's plugins: it installs them into
// $KULE_HOME/plugins, keeps the person's approvals (name + exact version +
// sha256 of the executable and of the manifest), and starts approved plugins
// out of process with hashicorp/go-plugin over gRPC. Built-in plugins take
// the very same path: the kernel starts the binary that serves them
// (Options.Self: kule-plugins beside kule) as `kule-plugins __plugin
// differ/<name>`, trusted as part of the Kule installation it belongs to.
//
// Lifecycle of a third-party plugin:
//  1. Install copies its executable and plugin.toml into
//     $KULE_HOME/plugins/<name>/ (read-only; the executable must match the
//     sha256 its manifest states). Nothing is executed.
//  2. Until Approve records its name, kind, version, executable sha256 and
//     manifest sha256, it waits for approval and Status says why.
//  3. At every launch the host reads the executable once into a sealed
//     in-memory file, hashes what it read, and executes that very copy only
//     if the hash, version and manifest match the approval. A changed binary
//     or manifest waits for approval again.
//  4. The plugin starts in the sandbox with what its kind needs (see
//     sandboxed.go); if the sandbox cannot be set up it does not start at
//     all (ErrSandbox) unless the person accepted weaker isolation.
//  5. Each call has a deadline; a plugin that crashes, hangs or answers
//     garbage costs the one file it was reading (an error for that file) and
//     is restarted for the next one, a few times at most.
//  6. Close ends every plugin process.
//
// Precedence of differs for a file: an approved third-party differ whose
// manifest patterns match and whose Accepts agrees comes first (several: by
// name); then the built-in differs in their table's order. A third-party
// plugin named like a built-in ("markdown") replaces that built-in.
package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/kulehq/kule/kernel/internal/sandbox"
)

// Sentinel errors.
var (
	// ErrManifest: a plugin.toml that does not parse or breaks a rule.
	ErrManifest = errors.New("plugin manifest")
	// ErrApprovals: the approval store cannot be read or written.
	ErrApprovals = errors.New("plugin approvals")
	// ErrNotInstalled: no plugin of that name is installed.
	ErrNotInstalled = errors.New("plugin not installed")
	// ErrNotApproved: the plugin waits for the person's approval.
	ErrNotApproved = errors.New("plugin waits for approval")
	// ErrExecutable: the executable is missing, not a regular file (e.g. a
	// symlink), or does not match its manifest.
	ErrExecutable = errors.New("plugin executable refused")
	// ErrHandshake: the plugin process could not be started or did not finish
	// the go-plugin handshake.
	ErrHandshake = errors.New("plugin handshake failed")
	// ErrCall: one call to a plugin failed (crash, deadline, error).
	ErrCall = errors.New("plugin call failed")
	// ErrGarbage: a plugin answered something that cannot be trusted
	// (entities outside the file).
	ErrGarbage = errors.New("plugin answered garbage")
	// ErrGivenUp: the plugin failed too often and is not started again in
	// this run.
	ErrGivenUp = errors.New("plugin failed too often")
)

// Builtin is a plugin compiled into the kule binary.
type Builtin struct {
	Kind string // "differ"
	Name string // "go"; started as `kule-plugins __plugin <kind>/<name>`
	// Accepts is the differ's own Accepts, evaluated in the kule process:
	// it reads only a path, and the kule binary is trusted code.
	Accepts func(path string) bool
}

// LaunchSpec is what the host asks a CmdFactory to start.
type LaunchSpec struct {
	Name, Kind string
	// Path is what to execute: /proc/self/fd/N of the verified in-memory
	// copy (Exe), or the kule binary itself for a built-in.
	Path string
	// Args is argv, Args[0] included.
	Args []string
	// Exe is the verified, sealed in-memory copy of a third-party plugin's
	// executable (nil for built-ins). A factory that wraps the command in
	// another process passes it on in ExtraFiles and executes
	// /proc/self/fd/<3+index> instead of Path.
	Exe *os.File
	// Permissions are what the plugin's approved manifest asks for.
	Permissions []string
	// ProxyAddr and ProxyToken are the proxy a kind with network (a
	// transport) reaches it through; Reads are more files it may read.
	ProxyAddr, ProxyToken string
	Reads                 []string
}

// CmdFactory builds the command that starts a plugin outside the sandbox.
// go-plugin adds its handshake variables to Env and takes over Stdout and
// Stderr. A host given one starts every plugin through it instead of the
// sandbox: tests of what is not isolation use DirectCmd.
type CmdFactory func(ctx context.Context, spec LaunchSpec) (*exec.Cmd, error)

// DirectCmd starts a plugin without a sandbox, with an empty environment.
// It is for tests; Kule itself never starts a plugin unsandboxed.
func DirectCmd(_ context.Context, spec LaunchSpec) (*exec.Cmd, error) {
	cmd := &exec.Cmd{Path: spec.Path, Args: spec.Args, Env: []string{}}
	return cmd, nil
}

// Options configure a Host. Zero values take the defaults.
type Options struct {
	// Self is the executable that serves the built-ins (kule-plugins);
	// "/proc/self/exe", this process's own binary, when empty.
	Self string
	// Builtins are the built-in plugins, in precedence order.
	Builtins []Builtin
	// Sandbox is the sandbox every plugin starts in (see sandboxed.go for
	// what each kind is given); nil means the zero sandbox.Sandbox, which
	// re-executes the kule binary as its helper and refuses to run a plugin
	// when isolation is missing, unless AcceptWeaker is set.
	Sandbox *sandbox.Sandbox
	// CmdFactory, when set, starts plugins through it instead of the
	// sandbox (tests only; see DirectCmd).
	CmdFactory CmdFactory
	// Logger is the kernel's log; each plugin logs under Named(name).
	Logger hclog.Logger
	// StartTimeout bounds the handshake; 10s.
	StartTimeout time.Duration
	// CallTimeout bounds one call; 10s.
	CallTimeout time.Duration
	// MaxStarts is how often one plugin is started in one Host's life
	// before it is given up on; 3.
	MaxStarts int
}

// Host installs, approves and runs plugins for one kule process.
type Host struct {
	home string
	opts Options

	mu      sync.Mutex
	procs   map[string]*proc // by "kind/name"
	starts  map[string]int
	notices []string
	noticed map[string]bool
	third   []installed // differ candidates, read once
	scanned bool

	selfOnce sync.Once // what the kule binary links, for built-ins
	selfList []string
	selfErr  error

	// unpinned takes the host's certificate pin away (any certificate a
	// plugin presents is taken): the guard removed, for attack tests.
	unpinned bool
	// autoMTLS starts plugins with go-plugin's AutoMTLS, the scheme
	// sdk/plugintls replaced: the peer of the start benchmark.
	autoMTLS bool
}

// New returns a host on the Kule home root (KULE_HOME).
func New(home string, opts Options) *Host {
	if opts.Self == "" {
		opts.Self = "/proc/self/exe"
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 10 * time.Second
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = 10 * time.Second
	}
	if opts.MaxStarts <= 0 {
		opts.MaxStarts = 3
	}
	h := &Host{home: home, opts: opts, procs: map[string]*proc{}, starts: map[string]int{}, noticed: map[string]bool{}}
	sb := sandbox.Sandbox{}
	if opts.Sandbox != nil {
		sb = *opts.Sandbox
	}
	if sb.Warn == nil {
		sb.Warn = weakerWarn{h}
	}
	if sb.Exe == "" {
		// The sandbox's PID 1 is the binary that serves the built-ins,
		// not the small kule-sandbox helper: the plugin's confine step
		// executes PID 1's own /proc/self/exe, which must be the binary
		// that has the built-in plugins and the confine stage.
		if opts.Self != "/proc/self/exe" {
			sb.Exe = opts.Self
		} else if self, err := os.Executable(); err == nil {
			sb.Exe = self
		}
	}
	h.opts.Sandbox = &sb
	return h
}

// Sandboxed reports whether this host starts plugins in the sandbox.
func (h *Host) Sandboxed() bool { return h.opts.CmdFactory == nil }

func (h *Host) pluginsDir() string { return filepath.Join(h.home, "plugins") }

// Dir is where the plugin name is installed.
func (h *Host) Dir(name string) string { return filepath.Join(h.pluginsDir(), name) }

// Notices are what a person should hear about plugins in this run (a plugin
// that waits for approval, one that failed), each once.
func (h *Host) Notices() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.notices...)
}

func (h *Host) notice(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.noticed[msg] {
		h.noticed[msg] = true
		h.notices = append(h.notices, msg)
	}
}

// Close ends every plugin process this host started.
func (h *Host) Close() {
	h.mu.Lock()
	procs := h.procs
	h.procs = map[string]*proc{}
	h.mu.Unlock()
	// In parallel: each kill may wait for its plugin to exit (go-plugin
	// gives it two seconds), and the person waits for the last.
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.kill()
		}()
	}
	wg.Wait()
}

// Status is what Kule knows of an installed plugin without running it.
type Status struct {
	Manifest       Manifest
	ManifestSHA256 string
	// ExeSHA256 is the sha256 of the installed executable as it is now.
	ExeSHA256 string
	// Approved is true when a launch would be allowed.
	Approved bool
	// Approval is the recorded approval, if any (maybe of another version).
	Approval *Approval
	// Reason says why the plugin waits for approval or cannot run.
	Reason string
}

// installed is a plugin as read from its directory.
type installed struct {
	dir          string
	manifest     Manifest
	manifestHash string
	approved     bool // by the approval record; the executable is checked at launch
}

// readInstalled reads the manifest of the plugin installed as name.
func (h *Host) readInstalled(name string) (installed, error) {
	if !nameRe.MatchString(name) {
		return installed{}, fmt.Errorf("%w: %q", ErrNotInstalled, name)
	}
	dir := h.Dir(name)
	data, err := readRegular(filepath.Join(dir, ManifestFile), maxManifest+1)
	if errors.Is(err, os.ErrNotExist) {
		return installed{}, fmt.Errorf("%w: %q (kule plugins install PATH)", ErrNotInstalled, name)
	}
	if err != nil {
		return installed{}, fmt.Errorf("%w: %s: %v", ErrManifest, name, err)
	}
	m, err := ParseManifest(data)
	if err != nil {
		return installed{}, fmt.Errorf("%s: %w", name, err)
	}
	if m.Name != name {
		return installed{}, fmt.Errorf("%w: %s: the manifest in this directory names %q", ErrManifest, name, m.Name)
	}
	return installed{dir: dir, manifest: m, manifestHash: hashBytes(data)}, nil
}

// Status reads the plugin name's manifest and executable (never running it)
// and says whether it may run, and if not, why.
func (h *Host) Status(name string) (Status, error) {
	in, err := h.readInstalled(name)
	if err != nil {
		return Status{}, err
	}
	st := Status{Manifest: in.manifest, ManifestSHA256: in.manifestHash}
	sum, err := hashRegular(filepath.Join(in.dir, in.manifest.Executable))
	if err != nil {
		st.Reason = err.Error()
		return st, nil
	}
	st.ExeSHA256 = sum
	aps, err := h.approvals()
	if err != nil {
		return Status{}, err
	}
	if a, ok := aps[name]; ok {
		st.Approval = &a
	}
	st.Reason = reason(in, sum, st.Approval)
	st.Approved = st.Reason == ""
	return st, nil
}

// reason says why the installed plugin with executable hash sum may not run
// under approval a (nil: none), or "" when it may.
func reason(in installed, sum string, a *Approval) string {
	m := in.manifest
	switch {
	case a == nil && sum != m.SHA256:
		return fmt.Sprintf("its executable does not match the sha256 its manifest states (manifest %s, executable %s)", short(m.SHA256), short(sum))
	case a == nil:
		return "never approved (kule plugins approve " + m.Name + ")"
	case a.Kind != m.Kind:
		return fmt.Sprintf("kind changed since approval: %s → %s", a.Kind, m.Kind)
	case a.Version != m.Version:
		return fmt.Sprintf("version changed since approval: %s → %s", a.Version, m.Version)
	case a.ManifestSHA256 != in.manifestHash:
		return fmt.Sprintf("manifest changed since approval (approved %s, now %s)", short(a.ManifestSHA256), short(in.manifestHash))
	case a.SHA256 != sum:
		return fmt.Sprintf("executable changed since approval (approved %s, now %s)", short(a.SHA256), short(sum))
	case sum != m.SHA256:
		return fmt.Sprintf("its executable does not match the sha256 its manifest states (manifest %s, executable %s)", short(m.SHA256), short(sum))
	}
	return ""
}

// reasonByRecord is reason judged from the manifest and the approval record
// only, without reading the executable.
func reasonByRecord(in installed, a *Approval) string {
	r := reason(in, in.manifest.SHA256, a)
	if r == "" && a.SHA256 != in.manifest.SHA256 {
		r = "executable changed since approval"
	}
	return r
}

func short(sum string) string {
	if len(sum) > 12 {
		return sum[:12]
	}
	return sum
}

// List returns the names of installed plugins, sorted.
func (h *Host) List() ([]string, error) {
	ents, err := os.ReadDir(h.pluginsDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("plugins: %w", err)
	}
	var names []string
	for _, e := range ents {
		if e.IsDir() && nameRe.MatchString(e.Name()) {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// Builtins are the built-in plugins the host was given.
func (h *Host) Builtins() []Builtin { return append([]Builtin(nil), h.opts.Builtins...) }

// Approve records the person's approval of the plugin name exactly as it is
// installed now. A plugin whose executable is not a regular file or does not
// match its own manifest cannot be approved.
func (h *Host) Approve(name string) (Approval, error) {
	in, err := h.readInstalled(name)
	if err != nil {
		return Approval{}, err
	}
	sum, err := hashRegular(filepath.Join(in.dir, in.manifest.Executable))
	if err != nil {
		return Approval{}, err
	}
	if sum != in.manifest.SHA256 {
		return Approval{}, fmt.Errorf("%w: %s: %s; nothing was approved (reinstall it)", ErrExecutable, name, reason(in, sum, nil))
	}
	a := Approval{Name: name, Kind: in.manifest.Kind, Version: in.manifest.Version, SHA256: sum, ManifestSHA256: in.manifestHash, ApprovedAt: time.Now().UTC()}
	if err := h.setApproval(name, &a); err != nil {
		return Approval{}, err
	}
	h.opts.Logger.Info("plugin approved", "plugin", name, "version", a.Version, "sha256", a.SHA256)
	return a, nil
}

// Remove uninstalls the plugin name and forgets its approval.
func (h *Host) Remove(name string) error {
	if !nameRe.MatchString(name) {
		return fmt.Errorf("%w: %q", ErrNotInstalled, name)
	}
	dir := h.Dir(name)
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: %q", ErrNotInstalled, name)
	}
	if err := h.setApproval(name, nil); err != nil {
		return err
	}
	if err := removeTree(dir); err != nil {
		return fmt.Errorf("plugins: remove %s: %w (its approval is already forgotten; remove the directory by hand)", name, err)
	}
	return nil
}

// removeTree removes a read-only installed tree.
func removeTree(dir string) error {
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

// kindName is the key of a plugin in the host's tables.
func kindName(kind, name string) string { return kind + "/" + name }
