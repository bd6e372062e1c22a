// Package runner is the seam between `kule exec` and whatever isolates the
// command: the direct runner here starts it plainly in the task's copy; the
// sandbox (kernel/internal/sandbox) implements the same interface with namespaces and
// Landlock, so exec never changes when isolation does.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"syscall"
)

// Network says what a command may reach.
type Network int

// Network modes.
const (
	NetworkProxy Network = iota // only the task's proxy (the default)
	NetworkNone                 // no TCP at all (--no-network)
	NetworkOpen                 // the host's network, no proxy, no policy (--open-network)
)

// Task is what a runner needs to know of the task the command runs in.
type Task struct {
	ID      string // 8 hex characters
	Dir     string // $KULE_HOME/tasks/<id>
	Copy    string // the copy the command sees and changes
	Folder  string // the person's real folder (never writable by the command)
	Tmp     string // the task's own /tmp and TMPDIR
	Home    string // the task's home layer
	KuleDir string // $KULE_HOME, hidden from every command
	// Upper and Work, where set, make the copy an overlayfs inside the
	// sandbox: Copy its lower layer (never written while the command
	// runs), Upper the layer that takes every write, Work overlay's own
	// scratch directory (on Upper's file system). A runner with no mount
	// namespace of its own (Direct) runs the command in the copy itself,
	// which ends the same once the upper layer is folded: it is empty.
	Upper, Work string
}

// Spec is one command to run.
type Spec struct {
	Task   Task
	Args   []string // argv; Args[0] is looked up in PATH
	Dir    string   // working directory, inside Task.Copy
	Env    []string // the environment as the command should see it
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer

	AllowWrite []string // extra paths the command may write (--allow-write)
	Reveal     []string // paths opened read-only for this command (--reveal)
	Hide       []string // extra paths hidden for this command (--hide)
	Network    Network
	ProxyAddr  string // host:port of the task's proxy, when Network is NetworkProxy
	ProxyToken string // the proxy's per-run token, carried in the proxy URL
	// ProxyServe, when set, is the task's proxy in this process taking a
	// connection the command made to ProxyAddr (proxy.Proxy.Serve): a
	// sandbox hands each one over instead of joining it to a new
	// connection to ProxyAddr, one loopback hop fewer for every byte. The
	// proxy owns the connection from then on.
	ProxyServe func(net.Conn) error

	// ReadOnlyInTask are paths inside the task's home layer or caches that
	// the command reads but may not change while it runs (an agent's
	// instructions and settings, placed in its home by Kule): a sandbox
	// shows each read-only at its own path. The direct runner ignores it.
	ReadOnlyInTask []string

	// TaskEnv is added to the command's environment after a sandbox has
	// filtered Env: the task's own values (the proxy's CA bundle, secret
	// placeholders), which look like secrets by name but open nothing.
	TaskEnv []string

	// FileSizeLimit, when positive, is set as RLIMIT_FSIZE before the
	// command is executed, so no file it writes grows past it.
	FileSizeLimit int64
	// Started, when set, is told the pid of the command (or of the
	// sandbox's first process) as soon as it runs: limits watch from there.
	Started func(pid int)
	// Ready, when set, is waited for before the command itself may start:
	// work the run needs (the proxy's policy) goes on while a sandbox sets
	// up. An error stops the run before the command starts: Run returns it
	// and nothing ran. Every Runner must call it.
	Ready func() error
}

// Runner starts a command and waits for it. The exit code is the command's own
// (128+signal when a signal ended it); err is non-nil only when the command
// could not be started or waited for — then nothing ran, or its end is unknown.
type Runner interface {
	Run(ctx context.Context, spec Spec) (exitCode int, err error)
}

// Layered is a Runner that mounts Task.Upper over the copy when it is set:
// the command's writes then reach the copy only when the kernel folds the
// upper layer, which notes what it moves. A runner that is not Layered
// writes the copy itself.
type Layered interface {
	Runner
	MountsUpper() bool
}

// ErrNoCommand is returned when a Spec names no command.
var ErrNoCommand = errors.New("run: no command given")

// Direct runs commands without isolation, in the copy. It is what
// `--no-sandbox` uses and what tests of the engine use.
type Direct struct{}

var _ Runner = Direct{}

// Run starts spec.Args in spec.Dir and returns its exit code.
func (Direct) Run(ctx context.Context, spec Spec) (int, error) {
	if len(spec.Args) == 0 {
		return -1, ErrNoCommand
	}
	args := spec.Args
	if spec.FileSizeLimit > 0 {
		// prlimit(1) sets RLIMIT_FSIZE in the child before it execs the command.
		args = append([]string{"prlimit", fmt.Sprintf("--fsize=%d", spec.FileSizeLimit), "--"}, args...)
	}
	if spec.Ready != nil {
		if err := spec.Ready(); err != nil {
			return -1, err
		}
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = spec.Dir
	cmd.Env = append(append([]string(nil), spec.Env...), spec.TaskEnv...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = spec.Stdin, spec.Stdout, spec.Stderr
	if cmd.Stdout == nil {
		cmd.Stdout = os.Stdout
	}
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	if err := cmd.Start(); err != nil {
		return ExitCode(err)
	}
	if spec.Started != nil {
		spec.Started(cmd.Process.Pid)
	}
	return ExitCode(cmd.Wait())
}

// ExitCode turns the error of exec.Cmd.Run into an exit code the way a shell
// does: the command's own code, or 128+signal. A command that could not start
// is an error, not a code.
func ExitCode(err error) (int, error) {
	if err == nil {
		return 0, nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ee.ExitCode(), nil
	}
	return -1, fmt.Errorf("run: %w", err)
}
