package pluginhost

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	gprunner "github.com/hashicorp/go-plugin/runner"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	sdkplugin "github.com/kulehq/kule/sdk/plugin"
	"github.com/kulehq/kule/sdk/plugintls"
)

// proc is one running plugin process.
type proc struct {
	key    string
	client *goplugin.Client
	differ *sdkplugin.DifferClient
	// previewer is set instead of differ for a previewer plugin.
	previewer *sdkplugin.PreviewerClient
	info      sdkplugin.Info
	// closing is set when Kule closes the plugin (see quietOnClose).
	closing *atomic.Bool
}

func (p *proc) kill() {
	p.closing.Store(true)
	p.client.Kill()
}

// quietOnClose is a plugin's logger that, once Kule itself closes the
// plugin, says go-plugin's own exit complaints ("failed to exit gracefully",
// the kill's exit status) at debug level: Kule asked the plugin to go and
// needs nothing more from it, so a person is not told of it.
type quietOnClose struct {
	hclog.Logger
	closing *atomic.Bool
}

func (q quietOnClose) Warn(msg string, args ...any) {
	if q.closing.Load() {
		q.Logger.Debug(msg, args...)
		return
	}
	q.Logger.Warn(msg, args...)
}

func (q quietOnClose) Error(msg string, args ...any) {
	if q.closing.Load() {
		q.Logger.Debug(msg, args...)
		return
	}
	q.Logger.Error(msg, args...)
}

// tail keeps the last bytes a plugin wrote to stderr, for error messages.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > 4096 {
		t.buf = t.buf[len(t.buf)-4096:]
	}
	return len(b), nil
}

// said is the first non-empty line written, trimmed.
func (t *tail) said() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	line, _, _ := bytes.Cut(bytes.TrimSpace(t.buf), []byte("\n"))
	return strings.TrimSpace(string(line))
}

// get returns the running process of kind/name, starting it if needed.
func (h *Host) get(ctx context.Context, kind, name string, builtin bool) (*proc, error) {
	key := kindName(kind, name)
	h.mu.Lock()
	if p, ok := h.procs[key]; ok && !p.client.Exited() {
		h.mu.Unlock()
		return p, nil
	}
	if h.starts[key] >= h.opts.MaxStarts {
		h.mu.Unlock()
		return nil, fmt.Errorf("%w: %s %q was started %d times in this run and failed each time; it is not started again until the next command", ErrGivenUp, kind, name, h.opts.MaxStarts)
	}
	h.starts[key]++
	h.mu.Unlock()

	p, err := h.start(ctx, kind, name, builtin)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if old, ok := h.procs[key]; ok && !old.client.Exited() {
		p.kill() // someone else started it meanwhile
		return old, nil
	}
	h.procs[key] = p
	return p, nil
}

// drop ends the process of key after a failed call, so the next call starts
// a fresh one.
func (h *Host) drop(p *proc) {
	h.mu.Lock()
	if h.procs[p.key] == p {
		delete(h.procs, p.key)
	}
	h.mu.Unlock()
	p.kill()
}

// start launches one plugin. A third-party plugin is verified against its
// approval first, from a sealed in-memory copy of its executable, and that
// copy is what runs.
func (h *Host) start(ctx context.Context, kind, name string, builtin bool) (*proc, error) {
	var spec LaunchSpec
	if builtin {
		var err error
		if spec, err = h.builtinSpec(kind, name); err != nil {
			return nil, err
		}
	} else {
		var err error
		if spec, err = h.installedSpec(kind, name); err != nil {
			return nil, err
		}
		defer spec.Exe.Close() // the child has its own reference once started
	}
	hs, err := sdkplugin.Handshake(kind)
	if err != nil {
		return nil, err
	}
	closing := &atomic.Bool{}
	log := quietOnClose{Logger: h.opts.Logger.Named(kind + "-" + name), closing: closing}
	stderr := &tail{}
	cfg := &goplugin.ClientConfig{
		HandshakeConfig: hs,
		VersionedPlugins: map[int]goplugin.PluginSet{
			int(hs.ProtocolVersion): pluginSet(kind),
		},
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		SkipHostEnv:      true,
		Managed:          true,
		StartTimeout:     h.opts.StartTimeout,
		Logger:           log,
		Stderr:           stderr,
	}
	tlsEnv, err := h.mutualTLS(cfg)
	if err != nil {
		return nil, err
	}
	var sr *sandboxRun // the sandboxed run, once go-plugin made it
	if h.opts.CmdFactory != nil {
		cmd, err := h.opts.CmdFactory(ctx, spec)
		if err != nil {
			return nil, fmt.Errorf("%w: %s %q: build its command: %v", ErrHandshake, kind, name, err)
		}
		cmd.Env = append(cmd.Env, tlsEnv...)
		cfg.Cmd = cmd
	} else {
		run, err := h.sandboxRunner(spec)
		if err != nil {
			return nil, err
		}
		dir, err := h.runDir()
		if err != nil {
			return nil, err
		}
		cfg.UnixSocketConfig = &goplugin.UnixSocketConfig{TempDir: dir}
		cfg.RunnerFunc = func(l hclog.Logger, cmd *exec.Cmd, socketDir string) (gprunner.Runner, error) {
			cmd.Env = append(cmd.Env, tlsEnv...)
			r, err := run(l, cmd, socketDir)
			if err == nil {
				sr = r.(*sandboxRun)
			}
			return r, err
		}
	}
	client := goplugin.NewClient(cfg)
	rpc, err := client.Client()
	if err != nil {
		client.Kill()
		if serr := sandboxFailure(kind, name, sr, stderr); serr != nil {
			return nil, serr
		}
		return nil, handshakeError(kind, name, hs.ProtocolVersion, err, stderr)
	}
	raw, err := rpc.Dispense(kind)
	if err != nil {
		client.Kill()
		return nil, fmt.Errorf("%w: %s %q: %v", ErrHandshake, kind, name, err)
	}
	p := &proc{key: kindName(kind, name), client: client, closing: closing}
	cctx, cancel := context.WithTimeout(ctx, h.opts.CallTimeout)
	defer cancel()
	switch c := raw.(type) {
	case *sdkplugin.DifferClient:
		p.differ = c
		p.info, err = c.Info(cctx)
	case *sdkplugin.PreviewerClient:
		p.previewer = c
		p.info, err = c.Info(cctx)
	default:
		client.Kill()
		return nil, fmt.Errorf("%w: %s %q: kind not served by this host", ErrHandshake, kind, name)
	}
	if err != nil {
		client.Kill()
		return nil, fmt.Errorf("%w: %s %q: info: %v", ErrHandshake, kind, name, err)
	}
	log.Debug("plugin started", "builtin", builtin, "capabilities", fmt.Sprint(p.info.Capabilities))
	return p, nil
}

// mutualTLS makes this start's key pair (sdk/plugintls), puts the host's
// side in cfg and returns what the plugin's environment gets. It stands in
// for go-plugin's AutoMTLS, in the same protocol: AutoMTLS's P-521 keys
// cost several milliseconds a start on each side, P-256 a fraction of one.
func (h *Host) mutualTLS(cfg *goplugin.ClientConfig) ([]string, error) {
	if h.autoMTLS {
		cfg.AutoMTLS = true
		return nil, nil
	}
	host, err := plugintls.NewHost()
	if err != nil {
		return nil, fmt.Errorf("%w: %v; nothing was started", ErrHandshake, err)
	}
	cfg.TLSConfig = host.ClientConfig()
	if h.unpinned {
		cfg.TLSConfig.VerifyConnection = nil
	}
	return host.Env(), nil
}

// pluginSet is the go-plugin plugin set the host dispenses kind from.
func pluginSet(kind string) goplugin.PluginSet {
	if kind == sdkplugin.KindPreviewer {
		return goplugin.PluginSet{sdkplugin.KindPreviewer: &sdkplugin.PreviewerPlugin{}}
	}
	return goplugin.PluginSet{sdkplugin.KindDiffer: &sdkplugin.DifferPlugin{}}
}

// verified checks the installed plugin name against its approval and returns
// a sealed in-memory copy of the executable whose hash is the approved one.
// installedSpec is how the installed plugin name of kind is launched:
// its approval checked now, from a sealed in-memory copy of its
// executable (spec.Exe, which the caller closes once the child started),
// and that copy is what runs.
func (h *Host) installedSpec(kind, name string) (LaunchSpec, error) {
	mem, in, err := h.verified(name)
	if err != nil {
		return LaunchSpec{}, err
	}
	if in.manifest.Kind != kind {
		mem.Close()
		return LaunchSpec{}, fmt.Errorf("%w: plugin %q is a %s, not a %s", ErrManifest, name, in.manifest.Kind, kind)
	}
	return LaunchSpec{Name: name, Kind: kind, Path: fmt.Sprintf("/proc/self/fd/%d", mem.Fd()),
		Args: []string{filepath.Join(in.dir, in.manifest.Executable)}, Exe: mem, Permissions: in.manifest.Permissions}, nil
}

func (h *Host) verified(name string) (*os.File, installed, error) {
	in, err := h.readInstalled(name)
	if err != nil {
		return nil, installed{}, err
	}
	aps, err := h.approvals()
	if err != nil {
		return nil, installed{}, err
	}
	var ap *Approval
	if a, ok := aps[name]; ok {
		ap = &a
	}
	// Decide on the manifest and the record alone first: an unapproved
	// plugin's executable is not even read.
	if r := reasonByRecord(in, ap); r != "" {
		return nil, installed{}, fmt.Errorf("%w: %s: %s", ErrNotApproved, name, r)
	}
	mem, sum, err := sealedCopy(name, filepath.Join(in.dir, in.manifest.Executable))
	if err != nil {
		return nil, installed{}, fmt.Errorf("%s: %w", name, err)
	}
	if sum != ap.SHA256 && !off.approvedSum {
		mem.Close()
		return nil, installed{}, fmt.Errorf("%w: %s: %s", ErrNotApproved, name, reason(in, sum, ap))
	}
	return mem, in, nil
}

// handshakeError says in a person's words why a plugin did not start.
func handshakeError(kind, name string, version uint, err error, stderr *tail) error {
	msg := err.Error()
	last := stderr.said()
	switch {
	case strings.Contains(msg, "incompatible API version"), strings.Contains(msg, "incompatible core API version"):
		return fmt.Errorf("%w: %s %q speaks another protocol version than this Kule (kule.%s.v%d): %v; install a version of the plugin built for v%d", ErrHandshake, kind, name, kind, version, err, version)
	case strings.Contains(msg, "exited before we could connect"), strings.Contains(msg, "Unrecognized remote plugin message"):
		return fmt.Errorf("%w: %s %q exited before the handshake (not a Kule plugin, a wrong magic cookie, or a crash at start); it said: %q", ErrHandshake, kind, name, last)
	case strings.Contains(msg, "timeout while waiting"):
		return fmt.Errorf("%w: %s %q did not finish its handshake in time; it was stopped", ErrHandshake, kind, name)
	}
	if last != "" {
		return fmt.Errorf("%w: %s %q: %v (it said: %q)", ErrHandshake, kind, name, err, last)
	}
	return fmt.Errorf("%w: %s %q: %v", ErrHandshake, kind, name, err)
}

// mustRestart reports whether a failed call means the plugin process is gone
// or stuck (crash, deadline, broken connection), so it is stopped and the
// next call starts a fresh one. An error the plugin itself answered keeps it.
func mustRestart(p *proc, err error) bool {
	if p.client.Exited() {
		return true
	}
	switch status.Code(err) {
	case codes.Unknown, codes.Unimplemented, codes.Internal, codes.InvalidArgument:
		return errors.Is(err, context.DeadlineExceeded)
	}
	return true
}
