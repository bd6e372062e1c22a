//go:build linux

package sandbox

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/kulehq/kule/kernel/internal/runner"
)

// planGo follows the plan on fdPlan once the command may start.
const planGo = 1

// The helper's descriptors, after stdio.
const (
	fdPlan   = 3 // the plan's length (4 bytes), the plan, then planGo once the command may start
	fdStatus = 4 // a setup failure, as text; EOF without text: the command runs
	fdDone   = 5 // the command's exit code, 4 bytes, told by PID 1 (stage init) once nothing is left running
	fdCtrl   = 6 // the proxy bridge: accepted connections, one per SCM_RIGHTS
)

// helperCaps are the capabilities stage 1 keeps in its user namespace (when
// the person's uid is not 0 there, exec would drop them otherwise).
var helperCaps = []uintptr{
	unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_SETPCAP,
	unix.CAP_DAC_OVERRIDE, unix.CAP_SYS_PTRACE, unix.CAP_KILL,
}

// Run runs spec's command in the sandbox and returns its exit code.
func (s *Sandbox) Run(ctx context.Context, spec runner.Spec) (int, error) {
	avail := Probe()
	missing := avail.Missing()
	if len(missing) > 0 {
		if !s.AcceptWeaker {
			return -1, s.notRun(spec, fmt.Errorf("%w: %s; nothing ran and nothing changed (fix the system, or accept weaker isolation with `kule isolation --accept-weaker on`)", ErrUnavailable, strings.Join(missing, "; ")), strings.Join(missing, "; "), fixSystem)
		}
		fmt.Fprintf(s.warn(), "kule: WEAKER ISOLATION (accepted): %s\n", strings.Join(missing, "; "))
		s.weaker(spec, missing)
	}
	if len(spec.Args) == 0 {
		return -1, runner.ErrNoCommand
	}
	exe, err := s.helper()
	if err != nil {
		return -1, fmt.Errorf("%w: find the helper executable: %w", ErrSetup, err)
	}
	stage := HelperStageInit
	if !avail.UserNS {
		stage = HelperStageExec
	}
	// The namespaces and the bridge follow from the spec alone; the plan
	// itself (which paths to hide, keep and reveal: a hundred or so stats,
	// half a millisecond) is made while the helper starts, below, and
	// agrees with them: it sets NetNS and ProxyPort from the same fields.
	netNS := avail.UserNS && spec.Network != runner.NetworkOpen
	bridged := avail.UserNS && spec.Network == runner.NetworkProxy && spec.ProxyAddr != ""
	// The C helper acts on exactly these arguments (pid1_linux.c).
	cmd := exec.CommandContext(ctx, exe, HelperArg, stage)
	cmd.Args[0] = HelperName
	cmd.Env = []string{} // the helper needs none; the command gets Spec.Env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = spec.Stdin, spec.Stdout, spec.Stderr
	if cmd.Stdout == nil {
		cmd.Stdout = os.Stdout
	}
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	cmd.WaitDelay = 5 * time.Second

	planR, planW, err := os.Pipe()
	if err != nil {
		return -1, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	defer planW.Close() // closed by the writer below too; this is for the early returns
	statR, statW, err := os.Pipe()
	if err != nil {
		planR.Close()
		return -1, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	defer statR.Close()
	doneR, doneW, err := os.Pipe()
	if err != nil {
		planR.Close()
		statW.Close()
		return -1, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	defer doneR.Close()
	cmd.ExtraFiles = []*os.File{planR, statW, doneW}
	var ctrl *os.File
	if bridged {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			planR.Close()
			statW.Close()
			doneW.Close()
			return -1, fmt.Errorf("%w: proxy bridge: %w", ErrSetup, err)
		}
		ctrl = os.NewFile(uintptr(fds[0]), "bridge")
		child := os.NewFile(uintptr(fds[1]), "bridge-child")
		defer ctrl.Close()
		defer child.Close()
		cmd.ExtraFiles = append(cmd.ExtraFiles, child)
	}
	if avail.UserNS {
		uid, gid := os.Getuid(), os.Getgid()
		flags := uintptr(unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS)
		if netNS {
			flags |= unix.CLONE_NEWNET
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Cloneflags:                 flags,
			UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
			GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
			GidMappingsEnableSetgroups: false,
			AmbientCaps:                helperCaps,
			Pdeathsig:                  syscall.SIGKILL,
		}
	} else {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	}

	pty := false
	if avail.UserNS {
		if tty, ok := foregroundTerminal(spec.Stdin); ok {
			// The command gets a pty of its own; the person's terminal
			// passes keys through unchanged until the command ends.
			if old, err := term.MakeRaw(tty); err == nil {
				pty = true
				defer term.Restore(tty, old)
			}
		}
	}
	ready := make(chan error, 1)
	release := holdGC()
	startErr := cmd.Start()
	release()
	planR.Close()
	statW.Close()
	doneW.Close()
	if len(cmd.ExtraFiles) > fdCtrl-fdPlan {
		cmd.ExtraFiles[fdCtrl-fdPlan].Close() // the bridge's child end
	}
	if startErr != nil {
		return -1, s.notRun(spec, fmt.Errorf("%w: start the helper: %w%s; nothing ran", ErrUnavailable, startErr, startHint(startErr)), "the sandbox's helper did not start: "+startErr.Error()+startHint(startErr), fixSystem)
	}
	// The plan is made once the helper is forked (made before the fork, it
	// held the fork up by half a millisecond; made beside the fork, its path
	// lookups fought the copy of the mount table) and goes into the pipe (it
	// fits a pipe's buffer) at once. The helper reads the plan before
	// anything else, so without it (a spec the plan refuses) no mount is
	// made and the command never starts.
	go func() {
		// What the run waits for (the proxy's policy and certificate
		// authority) is made on the other core while the plan is made.
		readyErr := make(chan error, 1)
		if spec.Ready != nil {
			go func() { readyErr <- spec.Ready() }()
		}
		var framed []byte
		p, err := s.plan(spec)
		if err == nil {
			p.Landlock = avail.Landlock()
			p.Shape = planShape()
			p.PTY = pty
			if !avail.UserNS {
				p.NetNS, p.ProxyPort = false, 0
			}
			framed, err = encodePlan(p)
		}
		if err == nil {
			// The helper makes its mounts while the run's proxy gets
			// ready, and starts the command only once told to go.
			if spec.Ready == nil {
				planW.Write(append(framed, planGo))
			} else {
				planW.Write(framed)
				if err = <-readyErr; err == nil {
					planW.Write([]byte{planGo})
				}
			}
		}
		planW.Close()
		ready <- err
	}()
	// A spec the plan refuses ends the run here: the helper, still waiting
	// for its plan, has done nothing. A proxy that did not start ends it
	// too: the helper never gets its go, and its mounts, made in namespaces
	// of its own, go with it.
	var planErr error
	select {
	case planErr = <-ready:
	case <-ctx.Done():
		planErr = fmt.Errorf("the run was cancelled before its command started (nothing ran): %w", ctx.Err())
	}
	if planErr != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return -1, planErr
	}
	if spec.Started != nil {
		spec.Started(cmd.Process.Pid) // the sandbox's PID 1: the command's tree is beneath it
	}
	var wg sync.WaitGroup
	var bridge net.Conn
	if ctrl != nil {
		bridge, err = net.FileConn(ctrl) // a dup: ctrl itself is closed by the defer
		if err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			return -1, fmt.Errorf("%w: proxy bridge: %w", ErrSetup, err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); bridgeHost(bridge, spec.ProxyAddr) }()
	}
	status, _ := io.ReadAll(statR)
	if len(status) > 0 {
		cmd.Process.Kill()
		cmd.Wait()
		if bridge != nil {
			bridge.Close()
		}
		wg.Wait()
		if code, err := commandFailure(strings.TrimSpace(string(status))); err != nil {
			return code, err // the command's own error: no advice about the sandbox
		}
		return -1, s.notRun(spec, fmt.Errorf("%w: %s; nothing ran and nothing changed", ErrSetup, strings.TrimSpace(string(status))), strings.TrimSpace(string(status)), fixSystem)
	}
	var code int
	if c, ok := readDone(doneR); ok && plainStdio(spec) {
		// Nothing of the command is left running (PID 1 ended it all
		// before it told the code), and it wrote straight to kule's own
		// descriptors: kule goes on while the kernel takes the namespaces
		// down (half a millisecond), and the helper is reaped meanwhile.
		code = c
		go cmd.Wait()
	} else {
		// Output that os/exec copies is whole only once the helper is gone.
		code, err = runner.ExitCode(cmd.Wait())
	}
	if bridge != nil {
		bridge.Close()
	}
	wg.Wait()
	if ctx.Err() != nil && err == nil {
		return code, nil
	}
	return code, err
}

// readDone reads the exit code PID 1 tells on fdDone; false when it ended
// without telling (it was killed, or is a helper without PID 1).
func readDone(r *os.File) (int, bool) {
	var b [4]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, false
	}
	return int(int32(binary.LittleEndian.Uint32(b[:]))), true
}

// plainStdio reports whether the command's stdio are files (or nothing),
// which the command writes itself, with no copy made by os/exec.
func plainStdio(spec runner.Spec) bool {
	plain := func(x any) bool {
		switch f := x.(type) {
		case nil:
			return true
		case *os.File:
			return f != nil
		}
		return false
	}
	return plain(spec.Stdin) && plain(spec.Stdout) && plain(spec.Stderr)
}

// gcHold counts the Runs between fork and exec.
var gcHold struct {
	sync.Mutex
	n, old int
}

// holdGC keeps the garbage collector from running while the helper is
// forked: Go forks a process that gets a new user namespace without vfork,
// so until the child execs, every page the collector's marking touches in
// kule is copied, and on a busy machine the two fight for the cores. A cycle
// already under way finishes first (its work is owed anyway); the returned
// func lets the collector run again once the last Run has exec'd its helper.
func holdGC() (release func()) {
	gcHold.Lock()
	if gcHold.n == 0 {
		gcHold.old = debug.SetGCPercent(-1)
	}
	gcHold.n++
	gcHold.Unlock()
	return func() {
		gcHold.Lock()
		gcHold.n--
		if gcHold.n == 0 {
			debug.SetGCPercent(gcHold.old)
		}
		gcHold.Unlock()
	}
}

// foregroundTerminal returns stdin's descriptor when it is a terminal whose
// foreground is this process's group (a kule run in the background leaves
// the terminal alone).
func foregroundTerminal(stdin io.Reader) (int, bool) {
	f, ok := stdin.(*os.File)
	if !ok || f == nil {
		return 0, false
	}
	fd := int(f.Fd())
	if !isTerminal(fd) {
		return 0, false
	}
	pg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	if err != nil || pg != unix.Getpgrp() {
		return 0, false
	}
	return fd, true
}

func startHint(err error) string {
	if os.IsPermission(err) || strings.Contains(err.Error(), "operation not permitted") {
		return " (creating user namespaces was refused: check sysctl kernel.unprivileged_userns_clone, user.max_user_namespaces and kernel.apparmor_restrict_unprivileged_userns)"
	}
	return ""
}

// bridgeHost receives each connection the helper accepted inside the
// sandbox's network namespace and joins it to a fresh connection to the
// proxy on the host's loopback. It returns when the helper is gone.
func bridgeHost(c net.Conn, proxy string) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return
	}
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4*4))
	for {
		_, oobn, _, _, err := uc.ReadMsgUnix(buf, oob)
		if err != nil {
			return
		}
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil {
			continue
		}
		for _, m := range msgs {
			fds, err := unix.ParseUnixRights(&m)
			if err != nil {
				continue
			}
			for _, fd := range fds {
				go joinProxy(os.NewFile(uintptr(fd), "bridged"), proxy)
			}
		}
	}
}

func joinProxy(f *os.File, proxy string) {
	inner, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return
	}
	defer inner.Close()
	outer, err := net.DialTimeout("tcp", proxy, 10*time.Second)
	if err != nil {
		return // the command sees its connection closed
	}
	defer outer.Close()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(outer, inner)
	go pipe(inner, outer)
	<-done
	<-done
}

// Probe finds what the sandbox can use here.
func Probe() Availability {
	if probeHook != nil {
		return probeHook()
	}
	a := Availability{UserNS: true, LandlockABI: landlockABI()}
	if n, ok := readInt("/proc/sys/user/max_user_namespaces"); ok && n == 0 {
		a.UserNS, a.UserNSWhy = false, "sysctl user.max_user_namespaces is 0"
	}
	if os.Getuid() != 0 {
		if n, ok := readInt("/proc/sys/kernel/unprivileged_userns_clone"); ok && n == 0 {
			a.UserNS, a.UserNSWhy = false, "sysctl kernel.unprivileged_userns_clone is 0"
		}
		if n, ok := readInt("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); ok && n == 1 {
			a.UserNS, a.UserNSWhy = false, "AppArmor restricts unprivileged user namespaces (sysctl kernel.apparmor_restrict_unprivileged_userns=1; allow kule with an AppArmor profile)"
		}
	}
	if _, err := os.Stat("/proc/self/ns/user"); err != nil {
		a.UserNS, a.UserNSWhy = false, "the kernel has no user namespaces"
	}
	return a
}

func readInt(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return n, err == nil
}

func isTerminal(fd int) bool {
	_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	return err == nil
}
