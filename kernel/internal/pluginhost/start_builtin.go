package pluginhost

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	gprunner "github.com/hashicorp/go-plugin/runner"
)

// Started is a built-in plugin of another kind than differ, started by
// StartBuiltin: the go-plugin client (Kill ends the process) and what it
// dispensed.
type Started struct {
	Client *goplugin.Client
	Raw    any
}

// Kill ends the plugin's process.
func (s *Started) Kill() { s.Client.Kill() }

// StartBuiltin starts the built-in plugin kind/name (`kule-plugins __plugin
// kind/name`) through the path every plugin takes: in the sandbox with
// kind's profile (Profiles), or through the host's CmdFactory in tests,
// with handshake hs and plugin set set, and dispenses kind. It is for kinds
// whose clients live outside this package (the extension host); the caller
// owns the process and ends it with Kill.
func (h *Host) StartBuiltin(ctx context.Context, kind, name string, hs goplugin.HandshakeConfig, set goplugin.PluginSet, extraEnv []string) (*Started, error) {
	return h.StartBuiltinWith(ctx, kind, name, hs, set, StartOptions{Env: extraEnv})
}

// StartOptions are what StartBuiltinWith gives a plugin beyond its kind's
// profile.
type StartOptions struct {
	Env []string // added to the plugin's environment (go-plugin's own stays)
	// ProxyAddr (host:port on the host's loopback) and ProxyToken are the
	// proxy a kind with network reaches everything through.
	ProxyAddr, ProxyToken string
	// Reads are more files the plugin may read (the system's CA bundle).
	Reads []string
	// Started, when set, is told the pid of the sandbox's first process
	// (the plugin is its descendant).
	Started func(pid int)
}

// StartBuiltinWith is StartBuiltin with options: a transport's proxy.
func (h *Host) StartBuiltinWith(ctx context.Context, kind, name string, hs goplugin.HandshakeConfig, set goplugin.PluginSet, o StartOptions) (*Started, error) {
	spec, err := h.builtinSpec(kind, name)
	if err != nil {
		return nil, err
	}
	return h.startWith(ctx, spec, hs, set, o)
}

// builtinSpec is how the built-in kind/name starts: the binary that serves
// the built-ins (Options.Self), given `__plugin kind/name`.
func (h *Host) builtinSpec(kind, name string) (LaunchSpec, error) {
	if h.opts.Self != "/proc/self/exe" {
		if _, err := os.Stat(h.opts.Self); err != nil {
			return LaunchSpec{}, fmt.Errorf("the built-in %s %s cannot start: %w — kule-plugins, which serves Kule's built-in plugins, belongs beside kule (make install and the packages put it there; kule doctor checks it)", kind, name, err)
		}
	}
	return LaunchSpec{Name: name, Kind: kind, Path: h.opts.Self, Args: []string{h.opts.Self, "__plugin", kindName(kind, name)}}, nil
}

// startWith starts spec (a built-in, or an installed plugin's verified
// copy) with the options o, the way StartBuiltinWith says.
func (h *Host) startWith(ctx context.Context, spec LaunchSpec, hs goplugin.HandshakeConfig, set goplugin.PluginSet, o StartOptions) (*Started, error) {
	kind, name, extraEnv := spec.Kind, spec.Name, o.Env
	spec.ProxyAddr, spec.ProxyToken, spec.Reads = o.ProxyAddr, o.ProxyToken, o.Reads
	closing := &atomic.Bool{}
	log := quietOnClose{Logger: h.opts.Logger.Named(kind + "-" + name), closing: closing}
	stderr := &tail{}
	cfg := &goplugin.ClientConfig{
		HandshakeConfig:  hs,
		VersionedPlugins: map[int]goplugin.PluginSet{int(hs.ProtocolVersion): set},
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
	extraEnv = append(tlsEnv, extraEnv...)
	var sr *sandboxRun
	if h.opts.CmdFactory != nil {
		cmd, err := h.opts.CmdFactory(ctx, spec)
		if err != nil {
			return nil, fmt.Errorf("%w: %s %q: build its command: %v", ErrHandshake, kind, name, err)
		}
		cmd.Env = append(cmd.Env, extraEnv...)
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
			cmd.Env = append(cmd.Env, extraEnv...)
			r, err := run(l, cmd, socketDir)
			if err == nil {
				sr = r.(*sandboxRun)
				if o.Started != nil {
					sr.started = o.Started
				}
			}
			return r, err
		}
	}
	client := goplugin.NewClient(cfg)
	rpc, err := client.Client()
	if err != nil {
		closing.Store(true)
		client.Kill()
		if serr := sandboxFailure(kind, name, sr, stderr); serr != nil {
			return nil, serr
		}
		return nil, handshakeError(kind, name, hs.ProtocolVersion, err, stderr)
	}
	raw, err := rpc.Dispense(kind)
	if err != nil {
		closing.Store(true)
		client.Kill()
		return nil, fmt.Errorf("%w: %s %q: %v", ErrHandshake, kind, name, err)
	}
	return &Started{Client: client, Raw: raw}, nil
}
