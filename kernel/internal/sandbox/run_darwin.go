//go:build darwin

package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"github.com/kulehq/kule/kernel/internal/runner"
)

// Run runs spec's command under a Seatbelt profile (sandbox-exec). macOS has
// no PID or network namespaces: the profile limits reads, writes and the
// network; the process group is killed when the command ends.
//
// UNTESTED: this file was written without a Mac.
func (s *Sandbox) Run(ctx context.Context, spec runner.Spec) (int, error) {
	a := Probe()
	if m := a.Missing(); len(m) > 0 {
		if !s.AcceptWeaker {
			return -1, s.notRun(spec, fmt.Errorf("%w: %s; nothing ran and nothing changed", ErrUnavailable, strings.Join(m, "; ")), strings.Join(m, "; "), fixSystem)
		}
		fmt.Fprintf(s.warn(), "kule: WEAKER ISOLATION (accepted): %s\n", strings.Join(m, "; "))
		s.weaker(spec, m)
		return runner.Direct{}.Run(ctx, spec)
	}
	p, err := s.plan(spec)
	if err != nil {
		return -1, err
	}
	profile := seatbeltProfile(p, p.Strong, append(append([]string(nil), p.Soft...), p.Logins...))
	env := make([]string, 0, len(p.Env))
	for _, kv := range p.Env {
		if !strings.HasPrefix(kv, "TMPDIR=") {
			env = append(env, kv)
		}
	}
	env = append(env, "TMPDIR="+p.Tmp)
	args := append([]string{"-p", profile, "--"}, p.Args...)
	cmd := exec.CommandContext(ctx, "/usr/bin/sandbox-exec", args...)
	cmd.Dir, cmd.Env = p.Dir, env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = spec.Stdin, spec.Stdout, spec.Stderr
	if cmd.Stdout == nil {
		cmd.Stdout = os.Stdout
	}
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if spec.Ready != nil {
		if err := spec.Ready(); err != nil {
			return -1, err
		}
	}
	err = cmd.Run()
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // what it left running
	}
	return runner.ExitCode(err)
}

// Probe finds what the sandbox can use here: sandbox-exec.
func Probe() Availability {
	if probeHook != nil {
		return probeHook()
	}
	if _, err := os.Stat("/usr/bin/sandbox-exec"); err != nil {
		return Availability{UserNS: false, UserNSWhy: "no /usr/bin/sandbox-exec"}
	}
	return Availability{UserNS: true, LandlockABI: 1}
}

// HelperMain has no work on macOS: Seatbelt needs no helper.
func HelperMain() int { return usage() }
