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

// MountsUpper says that the sandbox mounts Task.Upper over the copy
// (runner.Layered).
func (s *Sandbox) MountsUpper() bool { return true }

// Run runs spec's command in the sandbox and returns its exit code. Its
// steps:
//
//  1. available: what the sandbox can use here, refused or warned of;
//  2. newHelper: the helper's command, namespaces and descriptors;
//  3. rawTerminal: the person's terminal passed through to a pty of the
//     command's own, when it is the foreground;
//  4. start: the helper forked; kule closes its ends of the descriptors;
//  5. sendPlan: the plan made and sent while the helper starts, then the go
//     once spec.Ready says the proxy is ready;
//  6. awaitPlan: a plan refused, a proxy that did not start or a cancelled
//     run ends the run before the command starts;
//  7. startBridge: the proxy bridge, when the command reaches the proxy;
//  8. setupFailure: the helper's word on its set-up (EOF: the command runs);
//  9. wait: the command's exit code.
func (s *Sandbox) Run(ctx context.Context, spec runner.Spec) (int, error) {
	avail, err := s.available(spec)
	if err != nil {
		return -1, err
	}
	if len(spec.Args) == 0 {
		return -1, runner.ErrNoCommand
	}
	h, err := s.newHelper(ctx, spec, avail)
	if err != nil {
		return -1, err
	}
	defer h.close()
	pty, restore := s.rawTerminal(spec, avail)
	defer restore()
	if err := s.start(h, spec); err != nil {
		return -1, err
	}
	ready := s.sendPlan(h, spec, avail, pty)
	sent, err := awaitPlan(ctx, ready)
	if err != nil {
		h.abandon()
		return -1, err
	}
	if spec.Started != nil {
		spec.Started(h.cmd.Process.Pid) // the sandbox's PID 1: the command's tree is beneath it
	}
	br, err := h.startBridge(spec.ProxyAddr, spec.ProxyServe)
	if err != nil {
		h.abandon()
		return -1, err
	}
	if failed, code, err := s.setupFailure(h, spec, sent, br); failed {
		return code, err
	}
	code, err := h.wait(spec)
	br.stop()
	if ctx.Err() != nil && err == nil {
		return code, nil
	}
	return code, err
}

// available probes what the sandbox can use; what is missing refuses the
// run unless weaker isolation is accepted, and then the run says so.
func (s *Sandbox) available(spec runner.Spec) (Availability, error) {
	avail := Probe()
	missing := avail.Missing()
	if len(missing) == 0 {
		return avail, nil
	}
	what := strings.Join(missing, "; ")
	if !s.AcceptWeaker {
		return avail, s.notRun(spec, fmt.Errorf("%w: %s; nothing ran and nothing changed (fix the system, or accept weaker isolation with `kule isolation --accept-weaker on`)", ErrUnavailable, what), what, fixSystem)
	}
	fmt.Fprintf(s.warn(), "kule: WEAKER ISOLATION (accepted): %s\n", what)
	s.weaker(spec, missing)
	return avail, nil
}

// helperRun is one helper: its command, kule's ends of the descriptors it
// is given, and the helper's ends, which kule closes once it has started.
type helperRun struct {
	cmd   *exec.Cmd
	planW *os.File // the plan, then the go byte
	statR *os.File // a setup failure, as text
	doneR *os.File // the command's exit code, told by PID 1
	ctrl  *os.File // the proxy bridge; nil without one
	child []*os.File
}

// newHelper makes the helper's command for spec: its stage, namespaces,
// stdio and descriptors (fdPlan… in order). The namespaces and the bridge
// follow from the spec alone; the plan itself (which paths to hide, keep
// and reveal: a hundred or so stats, half a millisecond) is made while the
// helper starts (sendPlan), and agrees with them: it sets NetNS and
// ProxyPort from the same fields.
func (s *Sandbox) newHelper(ctx context.Context, spec runner.Spec, avail Availability) (*helperRun, error) {
	exe, err := s.helper()
	if err != nil {
		return nil, fmt.Errorf("%w: find the helper executable: %w", ErrSetup, err)
	}
	stage := HelperStageInit
	if !avail.UserNS {
		stage = HelperStageExec
	}
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
	cmd.SysProcAttr = helperAttr(spec, avail)
	h := &helperRun{cmd: cmd}
	if err := h.pipes(avail.UserNS && spec.Network == runner.NetworkProxy && spec.ProxyAddr != ""); err != nil {
		h.close()
		h.closeChild()
		return nil, err
	}
	cmd.ExtraFiles = h.child
	return h, nil
}

// pipes makes the helper's descriptors: the plan's, the status's and the
// exit code's pipes, and the proxy bridge's socket pair when bridged.
func (h *helperRun) pipes(bridged bool) error {
	planR, planW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrSetup, err)
	}
	h.planW, h.child = planW, append(h.child, planR)
	statR, statW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrSetup, err)
	}
	h.statR, h.child = statR, append(h.child, statW)
	doneR, doneW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrSetup, err)
	}
	h.doneR, h.child = doneR, append(h.child, doneW)
	if bridged {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("%w: proxy bridge: %w", ErrSetup, err)
		}
		h.ctrl = os.NewFile(uintptr(fds[0]), "bridge")
		h.child = append(h.child, os.NewFile(uintptr(fds[1]), "bridge-child"))
	}
	return nil
}

// helperAttr is how the helper is forked: in new namespaces, mapped to the
// person's own ids and keeping helperCaps there; or, without user
// namespaces, in a session of its own.
func helperAttr(spec runner.Spec, avail Availability) *syscall.SysProcAttr {
	if !avail.UserNS {
		return &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	}
	uid, gid := os.Getuid(), os.Getgid()
	flags := uintptr(unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS)
	if spec.Network != runner.NetworkOpen {
		flags |= unix.CLONE_NEWNET
	}
	return &syscall.SysProcAttr{
		Cloneflags:                 flags,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		GidMappingsEnableSetgroups: false,
		AmbientCaps:                helperCaps,
		Pdeathsig:                  syscall.SIGKILL,
	}
}

// close closes kule's ends. Each is a pipe or socket end this run alone
// holds, closed at most twice (planW by sendPlan too): a second close's
// "already closed" and the close of an end nothing is written to cannot
// lose anything.
func (h *helperRun) close() {
	for _, f := range []*os.File{h.planW, h.statR, h.doneR, h.ctrl} {
		if f != nil {
			_ = f.Close()
		}
	}
}

// closeChild closes the helper's ends in kule: the helper holds its own
// copies once forked (or was never forked), so a close that fails leaves
// nothing the helper needs and nothing kule reads.
func (h *helperRun) closeChild() {
	for _, f := range h.child {
		_ = f.Close()
	}
}

// rawTerminal puts the person's terminal in raw mode when the command gets
// a pty of its own (stdin is the foreground terminal): keys pass through
// unchanged until the command ends. restore puts the terminal back, and
// says so when it cannot.
func (s *Sandbox) rawTerminal(spec runner.Spec, avail Availability) (pty bool, restore func()) {
	restore = func() {}
	if !avail.UserNS {
		return false, restore
	}
	tty, ok := foregroundTerminal(spec.Stdin)
	if !ok {
		return false, restore
	}
	old, err := term.MakeRaw(tty)
	if err != nil {
		return false, restore // the terminal stays as it was; the command shares it, as without a pty
	}
	return true, func() {
		if err := term.Restore(tty, old); err != nil {
			fmt.Fprintf(s.warn(), "kule: the terminal could not be put back as it was (%v); the command has ended; type `reset` if it echoes nothing\n", err)
		}
	}
}

// start forks the helper, with the collector held (holdGC), and closes
// kule's copies of the helper's ends.
func (s *Sandbox) start(h *helperRun, spec runner.Spec) error {
	release := holdGC()
	err := h.cmd.Start()
	release()
	h.closeChild()
	if err != nil {
		return s.notRun(spec, fmt.Errorf("%w: start the helper: %w%s; nothing ran", ErrUnavailable, err, startHint(err)), "the sandbox's helper did not start: "+err.Error()+startHint(err), fixSystem)
	}
	return nil
}

// planSent is what sendPlan tells once it is done: err refuses the run
// (the plan, or spec.Ready); writeErr is a write the helper did not take
// (it ended first), which the helper's status explains when it said why.
type planSent struct {
	err, writeErr error
}

// sendPlan makes the plan once the helper is forked (made before the fork,
// it held the fork up by half a millisecond; made beside the fork, its path
// lookups fought the copy of the mount table) and writes it into the pipe
// (it fits a pipe's buffer) at once. The helper reads the plan before
// anything else, so without it (a spec the plan refuses) no mount is made
// and the command never starts. What the run waits for (the proxy's policy
// and certificate authority, spec.Ready) is made on the other core
// meanwhile; the go byte follows once it is ready.
func (s *Sandbox) sendPlan(h *helperRun, spec runner.Spec, avail Availability, pty bool) <-chan planSent {
	ready := make(chan planSent, 1)
	go func() {
		readyErr := make(chan error, 1)
		if spec.Ready != nil {
			go func() { readyErr <- spec.Ready() }()
		}
		var sent planSent
		framed, err := s.framedPlan(spec, avail, pty)
		switch {
		case err != nil:
			sent.err = err
		case spec.Ready == nil:
			_, sent.writeErr = h.planW.Write(append(framed, planGo))
		default:
			// The helper makes its mounts while the run's proxy gets
			// ready, and starts the command only once told to go.
			if _, sent.writeErr = h.planW.Write(framed); sent.writeErr == nil {
				if sent.err = <-readyErr; sent.err == nil {
					_, sent.writeErr = h.planW.Write([]byte{planGo})
				}
			}
		}
		// The helper reads to this EOF when no go came: it then ends
		// before the command. A close error of a pipe's write end after
		// its last write loses nothing the helper did not already get.
		_ = h.planW.Close()
		ready <- sent
	}()
	return ready
}

// framedPlan is the plan for spec, framed for the helper.
func (s *Sandbox) framedPlan(spec runner.Spec, avail Availability, pty bool) ([]byte, error) {
	p, err := s.plan(spec)
	if err != nil {
		return nil, err
	}
	p.Shape = planShape()
	p.PTY = pty
	if !avail.UserNS {
		p.NetNS, p.ProxyPort = false, 0
	}
	if avail.Landlock() {
		p.Landlock = landlockRules(p, avail.LandlockABI)
		if s.off.landlock != nil {
			s.off.landlock(&p.Landlock)
		}
	}
	return encodePlan(p)
}

// awaitPlan waits for sendPlan. A spec the plan refuses ends the run: the
// helper, still waiting for its plan, has done nothing. A proxy that did
// not start ends it too: the helper never gets its go, and its mounts, made
// in namespaces of its own, go with it.
func awaitPlan(ctx context.Context, ready <-chan planSent) (planSent, error) {
	select {
	case sent := <-ready:
		return sent, sent.err
	case <-ctx.Done():
		return planSent{}, fmt.Errorf("the run was cancelled before its command started (nothing ran): %w", ctx.Err())
	}
}

// abandon ends a helper whose command must not run, and reaps it. The
// kill's error is the helper already gone, and the wait's is its death by
// this kill: the run ends with the error that made it abandon the helper.
func (h *helperRun) abandon() {
	_ = h.cmd.Process.Kill()
	_ = h.cmd.Wait()
}

// bridge joins the connections the helper accepts inside the sandbox to the
// proxy; stop ends it once the helper is gone.
type bridge struct {
	conn net.Conn
	wg   sync.WaitGroup
}

// startBridge starts the proxy bridge when the helper has one; a nil bridge
// stops at once. With serve (the proxy in this process) each connection is
// handed to it; without, joined to a new connection to the proxy's address.
func (h *helperRun) startBridge(proxy string, serve func(net.Conn) error) (*bridge, error) {
	if h.ctrl == nil {
		return nil, nil
	}
	c, err := net.FileConn(h.ctrl) // a dup: ctrl itself is closed by close
	if err != nil {
		return nil, fmt.Errorf("%w: proxy bridge: %w", ErrSetup, err)
	}
	br := &bridge{conn: c}
	br.wg.Add(1)
	join := func(f *os.File) { joinProxy(f, proxy) }
	if serve != nil {
		join = func(f *os.File) { handProxy(f, serve) }
	}
	go func() { defer br.wg.Done(); bridgeHost(c, join) }()
	return br, nil
}

// stop closes the bridge and waits for it. Closing a socket whose peer
// (the helper) is gone cannot lose anything; joined connections end by
// themselves.
func (br *bridge) stop() {
	if br == nil {
		return
	}
	_ = br.conn.Close()
	br.wg.Wait()
}

// setupFailure reads the helper's status: text is why nothing ran (or the
// command's own failure to start, cmderr.go), EOF without text means the
// command runs. failed says the run ends here, with code and err.
func (s *Sandbox) setupFailure(h *helperRun, spec runner.Spec, sent planSent, br *bridge) (failed bool, code int, err error) {
	b, rerr := io.ReadAll(h.statR)
	status := strings.TrimSpace(string(b))
	if rerr == nil && status == "" && sent.writeErr == nil {
		return false, 0, nil
	}
	h.abandon()
	br.stop()
	switch {
	case status != "":
		if code, err := commandFailure(status); err != nil {
			return true, code, err // the command's own error: no advice about the sandbox
		}
	case rerr != nil:
		status = "read the helper's status: " + rerr.Error()
	default:
		status = "the sandbox's helper ended before it took its plan: " + sent.writeErr.Error()
	}
	return true, -1, s.notRun(spec, fmt.Errorf("%w: %s; nothing ran and nothing changed", ErrSetup, status), status, fixSystem)
}

// wait waits for the command's exit code.
func (h *helperRun) wait(spec runner.Spec) (int, error) {
	if c, ok := readDone(h.doneR); ok && plainStdio(spec) {
		// Nothing of the command is left running (PID 1 ended it all
		// before it told the code), and it wrote straight to kule's own
		// descriptors: kule goes on while the kernel takes the namespaces
		// down (half a millisecond), and the helper is reaped meanwhile;
		// its exit status, once the code is told, says nothing more.
		go func() { _ = h.cmd.Wait() }()
		return c, nil
	}
	// Output that os/exec copies is whole only once the helper is gone.
	return runner.ExitCode(h.cmd.Wait())
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
// sandbox's network namespace and gives it to join (on a goroutine of its
// own): joinProxy or handProxy. It returns when the helper is gone.
func bridgeHost(c net.Conn, join func(*os.File)) {
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
			continue // no descriptor came with this byte: nothing to join
		}
		for _, m := range msgs {
			fds, err := unix.ParseUnixRights(&m)
			if err != nil {
				continue // a message of another kind carries no connection
			}
			for _, fd := range fds {
				go join(os.NewFile(uintptr(fd), "bridged"))
			}
		}
	}
}

// handProxy hands one connection the command made inside the sandbox (f)
// to the proxy in this process, which serves it as one it accepted itself:
// the same token, decisions, checks and log. The connection stays the
// accepted TCP socket (net.FileConn of it), so what the proxy passes as
// it is still goes socket to socket. A proxy that cannot take it (closed)
// has closed it: the command sees its connection closed.
func handProxy(f *os.File, serve func(net.Conn) error) {
	c, err := net.FileConn(f)
	_ = f.Close()
	if err != nil {
		return
	}
	_ = serve(c)
}

// joinProxy joins one connection the command made inside the sandbox (f)
// to a new one to the proxy, until both directions end. Its errors end the
// connection and nothing else: the command sees its connection closed, as
// it would any connection that broke, and the run goes on. So the closes
// (of f, a dup's source, and of the two connections), the copies' errors
// (a side that closed or reset) and CloseWrite (the peer gone already) are
// not acted on.
func joinProxy(f *os.File, proxy string) {
	inner, err := net.FileConn(f)
	_ = f.Close()
	if err != nil {
		return
	}
	defer func() { _ = inner.Close() }()
	outer, err := net.DialTimeout("tcp", proxy, 10*time.Second)
	if err != nil {
		return // the command sees its connection closed
	}
	defer func() { _ = outer.Close() }()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
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
