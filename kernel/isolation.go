package kernel

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/kulehq/kule/kernel/internal/config"
	"github.com/kulehq/kule/kernel/internal/runner"
	"github.com/kulehq/kule/kernel/internal/sandbox"
	"github.com/kulehq/kule/kernel/internal/task"
)

// SandboxOptions say how one run is isolated: the flags of kule exec and
// kule run (--no-sandbox, --allow-write, ...), as the CLI and the daemon pass them.
type SandboxOptions struct {
	NoSandbox   bool     // run WITHOUT isolation (said loudly on Warn)
	AllowWrite  []string // extra paths the command may write
	Reveal      []string // extra paths opened read-only
	Hide        []string // extra paths hidden
	NoNetwork   bool     // no TCP at all
	OpenNetwork bool     // the host's network, without proxy or policy

	// Run names the run in the task's sandbox.jsonl ("agent claude");
	// "" names it by its command.
	Run string

	// Warn is where what the person must know about the isolation goes
	// (default os.Stderr).
	Warn io.Writer
}

// ErrNetworkFlags: --no-network and --open-network were both given.
var ErrNetworkFlags = errors.New("exec: --no-network and --open-network contradict each other; pick one")

// SandboxRunner picks how a command runs in t, and fills spec with the
// isolation the options and the home's config ask for (the folder's reveals
// among them). The sandbox is the default; NoSandbox is said loudly.
// kuleHome is $KULE_HOME, where the config lives.
func SandboxRunner(kuleHome string, t *task.Task, spec *runner.Spec, o SandboxOptions) (runner.Runner, error) {
	warn := o.Warn
	if warn == nil {
		warn = os.Stderr
	}
	if o.NoNetwork && o.OpenNetwork {
		return nil, ErrNetworkFlags
	}
	if o.NoSandbox {
		fmt.Fprintln(warn, "kule: WARNING: --no-sandbox: this command runs WITHOUT isolation. It can read your SSH keys and")
		fmt.Fprintln(warn, "kule: WARNING: other credentials and write anywhere you can; only its changes to the copy are reviewed.")
		return runner.Direct{}, nil
	}
	cfg, err := config.Load(kuleHome)
	if err != nil {
		return nil, err
	}
	spec.AllowWrite = append(spec.AllowWrite, o.AllowWrite...)
	spec.Reveal = append(append(spec.Reveal, cfg.Sandbox.RevealsFor(t.Folder)...), o.Reveal...)
	spec.Hide = append(spec.Hide, o.Hide...)
	switch {
	case o.NoNetwork:
		spec.Network = runner.NetworkNone
	case o.OpenNetwork:
		spec.Network = runner.NetworkOpen
		fmt.Fprintln(warn, "kule: --open-network: the command reaches the host's network without proxy or policy")
	}
	if spec.Env == nil {
		env, dropped := sandbox.FilterEnv(os.Environ())
		if len(dropped) > 0 {
			fmt.Fprintf(warn, "kule: kept from the command's environment: %s\n", strings.Join(dropped, ", "))
		}
		spec.Env = env
	}
	return &sandbox.Sandbox{AcceptWeaker: cfg.Sandbox.AcceptWeaker, Devices: cfg.Sandbox.Devices, NoGPU: t.Limits.Over(cfg.Limits).NoGPU(cfg.Sandbox.NoGPU), Warn: o.Warn, Refused: recordRefusals(t, o.Run, warn)}, nil
}
