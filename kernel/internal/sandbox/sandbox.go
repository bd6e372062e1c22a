package sandbox

import (
	"errors"
	"io"
	"os"
	"path/filepath"

	"github.com/kulehq/kule/kernel/internal/runner"
)

// Errors a caller can test for.
var (
	// ErrUnavailable: the system lacks something the sandbox needs (the
	// error names it); nothing ran.
	ErrUnavailable = errors.New("sandbox: isolation is not available")
	// ErrSetup: the helper could not build the sandbox; nothing ran.
	ErrSetup = errors.New("sandbox: could not set up")
	// ErrBadSpec: the Spec names paths the sandbox cannot honour.
	ErrBadSpec = errors.New("sandbox: bad spec")
	// ErrDevice: a profile asked for a device that is never given.
	ErrDevice = errors.New("sandbox: device refused")
)

// Sandbox runs commands isolated (see the package doc). The zero value is
// usable: it starts kule-sandbox beside kule (or kule itself) as the helper,
// and reads the person's home and environment from the process.
type Sandbox struct {
	// Exe is the executable started as the helper, as `kule-sandbox
	// __sandbox <stage>`; empty means kule-sandbox beside os.Executable(),
	// else os.Executable() itself. Any binary that links this package is a
	// helper (the C in pid1_linux.c runs before its main), test binaries too.
	Exe string

	// Home is the person's home (default $HOME). HostEnv is the environment
	// the hidden and kept paths are derived from (PATH, GOROOT, CARGO_HOME,
	// XDG_RUNTIME_DIR...); nil means os.Environ().
	Home    string
	HostEnv []string

	// AcceptWeaker lets commands run with what isolation is available when
	// a part is missing; every such run prints what is missing to Warn
	// (default os.Stderr).
	AcceptWeaker bool
	Warn         io.Writer

	// Devices are extra devices by name (e.g. "snd" for /dev/snd); NoGPU
	// leaves out the GPU's devices (/dev/dri, /dev/nvidia*).
	Devices []string
	NoGPU   bool

	// Refused, when set, is told of each thing the sandbox refuses or
	// weakens for a run (see Refusal); Kule keeps them in the task's
	// sandbox.jsonl. Nil tells no one: the errors and Warn still say it.
	Refused func(Refusal)

	off guards // parts taken away by attack tests only (hiding.go)
}

var _ runner.Runner = (*Sandbox)(nil)

func (s *Sandbox) warn() io.Writer {
	if s.Warn != nil {
		return s.Warn
	}
	return os.Stderr
}

func (s *Sandbox) hostEnv() []string {
	if s.HostEnv != nil {
		return s.HostEnv
	}
	return os.Environ()
}

func (s *Sandbox) home() string {
	if s.Home != "" {
		return s.Home
	}
	if h := lookupEnv(s.hostEnv(), "HOME"); h != "" {
		return h
	}
	h, _ := os.UserHomeDir()
	return h
}

// HelperStageInit and HelperStageExec are the last argument of the two helper
// stages, which the C helper acts on (pid1_linux.c).
const (
	HelperStageInit = "init"
	HelperStageExec = "exec"
)

// HelperName is the small static helper binary looked for beside the kule
// executable (see cmd/kule-sandbox): the same C helper as in kule, which
// re-executes itself when it is not there.
const HelperName = "kule-sandbox"

// helper is the executable started as the sandbox's PID 1.
func (s *Sandbox) helper() (string, error) {
	if s.Exe != "" {
		return s.Exe, nil
	}
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	if h := filepath.Join(filepath.Dir(self), HelperName); isExecutable(h) {
		return h, nil
	}
	return self, nil
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

func lookupEnv(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		kv := env[i]
		if len(kv) > len(key) && kv[len(key)] == '=' && kv[:len(key)] == key {
			return kv[len(key)+1:]
		}
	}
	return ""
}
