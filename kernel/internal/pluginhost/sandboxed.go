package pluginhost

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	gprunner "github.com/hashicorp/go-plugin/runner"

	"github.com/kulehq/kule/kernel/internal/runner"
	"github.com/kulehq/kule/kernel/internal/sandbox"
)

// How a plugin runs in the sandbox (kernel/internal/sandbox), by kind:
//
//   - differ, previewer: bytes in and out over gRPC only. Their own network
//     namespace with loopback alone, no proxy, Landlock TCP bind and connect
//     none; the sandbox's mounts (credentials, Kule's home, the person's
//     folders, other programs' sockets hidden); then a second Landlock
//     domain of the plugin's own (ConfineMain): read and execute only its
//     executable and the libraries it links, no directory listing anywhere,
//     no writes anywhere but its go-plugin socket directory (an empty,
//     private directory the host removes when the plugin ends; RLIMIT_FSIZE
//     of one byte keeps any file made there empty), no signals or abstract
//     Unix sockets out of the domain, and its own PID namespace.
//   - transport: the same mounts and its own Landlock domain, but the
//     network through a proxy the caller runs for it (StartOptions.Proxy):
//     the sandbox's network namespace holds only a forwarder to that proxy,
//     the plugin's domain allows TCP connect to the forwarder's port and
//     nothing else, and it may read, besides its executable and libraries,
//     the files StartOptions.Reads names (the system's CA bundle). Which
//     hosts it reaches, and which secrets go there, the proxy decides.
//
// go-plugin's client connects to the address the plugin prints. A TCP
// loopback address inside the plugin's network namespace is not reachable
// from the kernel's, so plugins serve on a Unix socket in a directory the
// host makes for each start ($KULE_HOME/run/plugin-dir*, PLUGIN_UNIX_SOCKET_DIR):
// a path-named socket is reached through the file system, whatever the
// network namespace. A plugin that prints a TCP address is refused.

// Sentinel errors of the sandboxed launch.
var (
	// ErrSandbox: the plugin's sandbox could not be set up, so the plugin
	// did not run (fail closed).
	ErrSandbox = errors.New("plugin sandbox could not be set up")
	// ErrNotBuilt: the plugin's kind has no sandbox profile yet.
	ErrNotBuilt = errors.New("plugin kind not built yet")
)

// confineSays starts every line ConfineMain writes, so the host can tell a
// sandbox failure from the plugin's own words.
const confineSays = "kule plugin sandbox:"

// ConfineArg is the argument after `__plugin` that runs ConfineMain.
const ConfineArg = "__confine"

// confinement is what ConfineMain is told, as JSON in its argument.
type confinement struct {
	Argv         []string // the plugin's argv
	ExeOnStdin   bool     // execute the sealed copy on stdin, not this binary
	Read         []string // files the plugin may read and execute
	SocketDir    string   // where it may make its go-plugin socket
	ConnectPort  int      // >0: the one TCP port it may connect to (its proxy's forwarder)
	AcceptWeaker bool
}

// Profile is what a plugin kind is given in the sandbox.
type Profile struct {
	Network runner.Network
	// Built is false for a kind whose profile is declared but not built:
	// such a plugin does not start.
	Built bool
	// Says is the profile in a person's words (kule plugins show).
	Says string
}

// Profiles are the sandbox profiles by kind.
var Profiles = map[string]Profile{
	"differ":    {Network: runner.NetworkNone, Built: true, Says: "no network, no file writes, reads only its executable and the libraries it links"},
	"previewer": {Network: runner.NetworkNone, Built: true, Says: "no network, no file writes, reads only its executable and the libraries it links"},
	"transport": {Network: runner.NetworkProxy, Built: true, Says: "network only through its proxy, to its chat service's hosts; no file writes; reads only its executable, the libraries it links and the system's CA bundle"},
	"extension": {Network: runner.NetworkNone, Built: true, Says: "the extension host: no network, no file writes, reads only the kule binary and the libraries it links; the package's files come over its socket"},
}

// sandboxRun is a go-plugin runner that starts the plugin through
// sandbox.Run: go-plugin owns the handshake over the runner's stdout, the
// sandbox owns the process tree (its PID 1 takes every process with it).
type sandboxRun struct {
	name   string
	sb     *sandbox.Sandbox
	spec   runner.Spec
	logger hclog.Logger

	stdoutR, stderrR *os.File
	cancel           context.CancelFunc
	pid              atomic.Int64
	done             chan struct{}
	code             int
	err              error // from sandbox.Run: set up failed, or wait failed

	box string // the sandbox's tmp, home and caches for this start; removed at the end

	started func(pid int) // told the sandbox's pid, when set
}

var _ gprunner.Runner = (*sandboxRun)(nil)

func (r *sandboxRun) Start(context.Context) error {
	outR, outW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrSandbox, err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return fmt.Errorf("%w: %v", ErrSandbox, err)
	}
	r.stdoutR, r.stderrR = outR, errR
	r.spec.Stdout, r.spec.Stderr = outW, errW
	r.spec.Started = func(pid int) {
		r.pid.Store(int64(pid))
		if r.started != nil {
			r.started(pid)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.done = make(chan struct{})
	go func() {
		defer close(r.done)
		r.code, r.err = r.sb.Run(ctx, r.spec)
		outW.Close() // go-plugin sees the end of the plugin's stdout
		errW.Close()
		os.RemoveAll(r.box)
	}()
	return nil
}

// setupErr is the sandbox's own failure, once the run ended with one.
func (r *sandboxRun) setupErr() error {
	select {
	case <-r.done:
	default:
		return nil
	}
	if r.err != nil && (errors.Is(r.err, sandbox.ErrUnavailable) || errors.Is(r.err, sandbox.ErrSetup) || errors.Is(r.err, sandbox.ErrBadSpec) || errors.Is(r.err, sandbox.ErrDevice)) {
		return r.err
	}
	return nil
}

func (r *sandboxRun) Wait(context.Context) error {
	<-r.done
	if r.err != nil {
		return r.err
	}
	if r.code != 0 {
		return fmt.Errorf("plugin %s exited with status %d", r.name, r.code)
	}
	return nil
}

func (r *sandboxRun) Kill(context.Context) error {
	if r.cancel != nil {
		r.cancel() // kills the sandbox's PID 1, and with it the plugin
		<-r.done
	}
	return nil
}

func (r *sandboxRun) Stdout() io.ReadCloser           { return r.stdoutR }
func (r *sandboxRun) Stderr() io.ReadCloser           { return r.stderrR }
func (r *sandboxRun) Name() string                    { return r.name }
func (r *sandboxRun) ID() string                      { return strconv.FormatInt(r.pid.Load(), 10) }
func (r *sandboxRun) Diagnose(context.Context) string { return "" }

// PluginToHost accepts only a Unix socket in the directory made for this
// start: a TCP address inside the plugin's network namespace is not
// reachable from here, and any other path is not the plugin's to offer.
func (r *sandboxRun) PluginToHost(network, addr string) (string, string, error) {
	if network != "unix" {
		return "", "", fmt.Errorf("%w: plugin %s offered a %s address; in its sandbox only a Unix socket in its own directory is reachable", ErrHandshake, r.name, network)
	}
	if filepath.Dir(filepath.Clean(addr)) != filepath.Clean(r.spec.Task.Copy) {
		return "", "", fmt.Errorf("%w: plugin %s offered a socket outside its own directory (%s)", ErrHandshake, r.name, addr)
	}
	return network, addr, nil
}

func (r *sandboxRun) HostToPlugin(network, addr string) (string, string, error) {
	return network, addr, nil
}

// runDir is where go-plugin makes each plugin's socket directory. A Unix
// socket path holds at most 107 bytes; go-plugin adds 38.
func (h *Host) runDir() (string, error) {
	home, err := filepath.Abs(h.home)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrSandbox, err)
	}
	dir := filepath.Join(home, "run")
	if len(dir) > 107-40 {
		return "", fmt.Errorf("%w: the Kule home %s is too long a path for a plugin's socket (at most %d bytes before /run); set KULE_HOME to a shorter path", ErrSandbox, h.home, 107-40-4)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("%w: %v", ErrSandbox, err)
	}
	return dir, nil
}

// selfReads is what the kule binary (every built-in) needs to read to start,
// found once.
func (h *Host) selfReads() ([]string, error) {
	h.selfOnce.Do(func() {
		f, err := os.Open(h.opts.Self)
		if err != nil {
			h.selfErr = err
			return
		}
		defer f.Close()
		h.selfList, h.selfErr = startReads(f)
	})
	return h.selfList, h.selfErr
}

// sandboxRunner is the go-plugin RunnerFunc that starts spec in the sandbox.
func (h *Host) sandboxRunner(spec LaunchSpec) (func(hclog.Logger, *exec.Cmd, string) (gprunner.Runner, error), error) {
	prof, ok := Profiles[spec.Kind]
	if !ok || !prof.Built {
		return nil, fmt.Errorf("%w: %s %q: %s plugins have no sandbox yet, so none starts", ErrNotBuilt, spec.Kind, spec.Name, spec.Kind)
	}
	c := confinement{Argv: spec.Args, AcceptWeaker: h.opts.Sandbox.AcceptWeaker}
	var reads []string
	var err error
	if spec.Exe != nil {
		c.ExeOnStdin = true // argv[0] stays the installed path: a name only, hidden inside
		reads, err = startReads(spec.Exe)
	} else {
		c.Argv = append([]string{"kule-plugin"}, spec.Args[1:]...)
		reads, err = h.selfReads()
		reads = append([]string{"/proc/self/exe"}, reads...)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s %q: read what its executable links: %v", ErrSandbox, spec.Kind, spec.Name, err)
	}
	c.Read = append(reads, spec.Reads...)
	if prof.Network == runner.NetworkProxy {
		if spec.ProxyAddr == "" {
			return nil, fmt.Errorf("%w: %s %q: no proxy was given for its network", ErrSandbox, spec.Kind, spec.Name)
		}
		_, port, err := net.SplitHostPort(spec.ProxyAddr)
		n, err2 := strconv.Atoi(port)
		if err != nil || err2 != nil || n <= 0 {
			return nil, fmt.Errorf("%w: %s %q: proxy address %q", ErrSandbox, spec.Kind, spec.Name, spec.ProxyAddr)
		}
		c.ConnectPort = n
	}
	home, err := filepath.Abs(h.home)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSandbox, err)
	}
	return func(log hclog.Logger, cmd *exec.Cmd, socketDir string) (gprunner.Runner, error) {
		c.SocketDir = socketDir
		arg, err := json.Marshal(c)
		if err != nil {
			return nil, err
		}
		// The sandbox wants a task's tmp, home and caches; they live beside
		// the socket directory, and the plugin's own domain denies them.
		box := socketDir + "-box"
		if err := os.Mkdir(box, 0o700); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrSandbox, err)
		}
		r := &sandboxRun{name: spec.Name, sb: h.opts.Sandbox, logger: log, box: box}
		r.spec = runner.Spec{
			Task: runner.Task{ID: "plugin", Dir: box, Copy: socketDir, Tmp: filepath.Join(box, "tmp"), Home: filepath.Join(box, "home"), KuleDir: home},
			// The sandbox's last stage executes the kule binary (its own
			// /proc/self/exe), which confines itself further and executes
			// the plugin.
			Args:          []string{"/proc/self/exe", "__plugin", ConfineArg, string(arg)},
			Dir:           socketDir,
			Env:           []string{},
			TaskEnv:       cmd.Env, // go-plugin's handshake variables
			Network:       prof.Network,
			ProxyAddr:     spec.ProxyAddr,
			ProxyToken:    spec.ProxyToken,
			FileSizeLimit: 1,
		}
		if spec.Exe != nil {
			// The sealed copy crosses as stdin: the sandbox passes an
			// *os.File stdin through as the descriptor itself.
			r.spec.Stdin = spec.Exe
		}
		return r, nil
	}, nil
}

// sandboxFailure turns a failed sandboxed start into the error a person
// reads, when the sandbox (not the plugin) was what failed.
func sandboxFailure(kind, name string, r *sandboxRun, stderr *tail) error {
	if r == nil {
		return nil
	}
	if err := r.setupErr(); err != nil {
		return fmt.Errorf("%w: %s %q did not run: %v", ErrSandbox, kind, name, err)
	}
	if said := stderr.said(); strings.HasPrefix(said, confineSays) {
		return fmt.Errorf("%w: %s %q did not run: %s", ErrSandbox, kind, name, strings.TrimSpace(strings.TrimPrefix(said, confineSays)))
	}
	return nil
}

// weakerWarn turns the sandbox's "weaker isolation" lines into notices.
type weakerWarn struct{ h *Host }

func (w weakerWarn) Write(b []byte) (int, error) {
	if s := string(bytes.TrimSpace(b)); s != "" {
		w.h.notice("plugins run with weaker isolation (accepted): %s", strings.TrimPrefix(s, "kule: WEAKER ISOLATION (accepted): "))
	}
	return len(b), nil
}
