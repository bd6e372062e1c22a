//go:build linux

package sandbox

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// HelperMain is the sandbox helper: cmd/kule calls it when started as
// `kule __sandbox <stage>` and exits with what it returns. It is not for
// people to run.
func HelperMain() int {
	if len(os.Args) < 2 {
		return usage()
	}
	switch os.Args[len(os.Args)-1] {
	case HelperStageInit:
		return stageInit()
	case HelperStageExec:
		return stageExec()
	}
	return usage()
}

func readPlan(fd int) (*plan, error) {
	f := os.NewFile(uintptr(fd), "plan")
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("read the plan: %w", err)
	}
	p, err := decodePlan(b)
	if err != nil {
		exe, _ := os.Executable()
		return nil, fmt.Errorf("the sandbox helper %s is from another build of kule than the kule that started it (%w); install both from one build", exe, err)
	}
	return p, nil
}

// stageInit is PID 1 of the sandbox's namespaces: it builds the mounts, then
// starts the command from a thread of its own that dropped every privilege
// and entered the Landlock domain first (see startCommand), forwards
// signals, relays the command's terminal when it has one, reaps orphans and
// exits with the command's code: everything left in the namespace dies with
// it. One Go runtime per sandbox: the command is forked from PID 1, not from
// a second helper.
func stageInit() int {
	// Signals are caught before the command exists, so none sent in between
	// is lost or takes PID 1's default action. Catching them is a round trip
	// per signal to a thread of the runtime's (0.3–0.6 ms here), so it runs
	// beside the plan and the mounts and is waited for before the command
	// starts.
	sigs := make(chan os.Signal, 16)
	caught := make(chan struct{})
	go func() {
		signal.Notify(sigs, forwardedSignals...)
		close(caught)
	}()
	status := os.NewFile(fdStatus, "status")
	fail := func(err error) int {
		fmt.Fprintf(status, "%v", err)
		return 125
	}
	// Nothing the kule process held open reaches the command: every
	// descriptor past stdio is close-on-exec from here on, the plan, status
	// and bridge descriptors included.
	unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	p, err := readPlan(fdPlan)
	if err != nil {
		return fail(err)
	}
	if err := setupMounts(p); err != nil {
		return fail(err)
	}
	unix.Sethostname([]byte("kule"))
	if p.NetNS {
		if err := loopbackUp(); err != nil {
			return fail(fmt.Errorf("network namespace: bring up loopback: %w", err))
		}
	}
	if p.ProxyPort > 0 {
		ln, err := listenLoopback(p.ProxyPort)
		if err != nil {
			return fail(fmt.Errorf("proxy bridge: listen inside the sandbox: %w", err))
		}
		go bridgeInside(ln, fdCtrl)
	}

	stdio := []*os.File{os.Stdin, os.Stdout, os.Stderr}
	var term *terminal
	if p.PTY {
		term, err = newTerminal()
		if err != nil {
			return fail(err)
		}
		stdio = term.stdio()
	}
	<-caught
	pid, err := startCommand(p, stdio, term != nil)
	if err != nil {
		return fail(err)
	}
	if term != nil {
		term.relay()
	}
	status.Close()
	signal.Ignore(syscall.SIGTTOU, syscall.SIGTTIN) // after the fork: the command keeps the defaults

	go func() {
		for s := range sigs {
			if s == syscall.SIGWINCH && term != nil {
				term.resize() // the pty tells the command itself
				continue
			}
			syscall.Kill(pid, s.(syscall.Signal))
		}
	}()
	code := reap(pid)
	if term != nil || p.Done {
		// Whatever the command left running is ended now (it holds the pty
		// open; and kule goes on once told the code): every process of the
		// namespace descends from PID 1, so none is left at ECHILD.
		syscall.Kill(-1, syscall.SIGKILL)
		for {
			_, err := syscall.Wait4(-1, nil, 0, nil)
			if err != nil && !errors.Is(err, syscall.EINTR) {
				break
			}
		}
	}
	if term != nil {
		term.drain() // the last of the output
	}
	if p.Done {
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], uint32(int32(code)))
		unix.Write(fdDone, b[:])
	}
	return code
}

// forwardedSignals are the signals PID 1 passes on to the command.
var forwardedSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
	syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH, syscall.SIGCONT, syscall.SIGALRM}

// reap waits for every child until the command (pid) ends, and returns its
// exit code the way a shell reports it.
func reap(pid int) int {
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return 125
		}
		if got == pid {
			if ws.Signaled() {
				return 128 + int(ws.Signal())
			}
			return ws.ExitStatus()
		}
	}
}

// startCommand starts the command with no capabilities, no_new_privs, the
// file size limit and the Landlock domain. Credentials, no_new_privs and the
// Landlock domain belong to a thread, and a forked child takes the forking
// thread's: so a thread of PID 1 narrows itself, forks and execs the
// command, and then ends (its goroutine exits locked), while the rest of
// PID 1 keeps what it needs to reap and forward, outside the domain the
// command is in.
func startCommand(p *plan, stdio []*os.File, ctty bool) (int, error) {
	if err := os.Chdir(p.Dir); err != nil { // PATH entries like "." resolve from here
		return 0, fmt.Errorf("enter the working directory: %w", err)
	}
	path, err := lookPath(p.Args[0], p.Env)
	if err != nil {
		return 0, err
	}
	files := make([]uintptr, len(stdio))
	for i, f := range stdio {
		files[i] = f.Fd()
	}
	attr := &syscall.ProcAttr{
		Env:   p.Env,
		Files: files,
		// A session of its own: the person's terminal is never its
		// controlling terminal, so TIOCSTI cannot reach it; its own pty is.
		Sys: &syscall.SysProcAttr{Setsid: true, Setctty: ctty, Ctty: 0},
	}
	type result struct {
		pid int
		err error
	}
	var onThread func() result
	onThread = func() result {
		ch := make(chan result, 1)
		go func() {
			runtime.LockOSThread()
			if unix.Gettid() == unix.Getpid() {
				// The main thread never ends, and it is the one a signal
				// to PID 1 is checked against: narrow another thread.
				r := onThread()
				runtime.UnlockOSThread()
				ch <- r
				return
			}
			// Never unlocked: the runtime ends this thread with the
			// goroutine, and the narrowed credentials with it.
			if err := narrowThread(p); err != nil {
				ch <- result{err: err}
				return
			}
			// syscall.ForkExec, not os.StartProcess: no pidfd probe (one
			// more fork) for a child PID 1 reaps by pid anyway.
			pid, err := syscall.ForkExec(path, p.Args, attr)
			if err != nil {
				err = fmt.Errorf("run %s: %w", p.Args[0], err)
			}
			ch <- result{pid, err}
		}()
		return <-ch
	}
	r := onThread()
	return r.pid, r.err
}

// narrowThread drops the calling thread's privileges for good and puts it in
// the command's Landlock domain.
func narrowThread(p *plan) error {
	if p.FSize > 0 {
		// Per process: PID 1 writes no files from here on.
		if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: uint64(p.FSize), Max: uint64(p.FSize)}); err != nil {
			return fmt.Errorf("limit file size: %w", err)
		}
	}
	if err := dropCaps(); err != nil {
		return fmt.Errorf("drop capabilities: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	if p.Landlock {
		if err := restrictLandlock(p); err != nil {
			return err
		}
	}
	return nil
}

// listenLoopback listens on 127.0.0.1:port with plain system calls: PID 1
// needs one listening socket, not the net package's poller, address
// resolution and IPv6 probes (a quarter of a millisecond of its start).
func listenLoopback(port int) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if err := unix.Listen(fd, unix.SOMAXCONN); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// bridgeInside hands each connection accepted inside the namespace to the
// host side, which joins it to the proxy. Only descriptors cross; no address
// outside the namespace is ever reachable from in here. Accept blocks its
// own thread (the runtime gives the others on); PID 1 has nothing else to
// wait for but its children.
func bridgeInside(ln, ctrl int) {
	for {
		c, _, err := unix.Accept4(ln, unix.SOCK_CLOEXEC)
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.ECONNABORTED) {
			continue
		}
		if err != nil {
			return
		}
		err = unix.Sendmsg(ctrl, []byte{0}, unix.UnixRights(c), nil, 0)
		unix.Close(c)
		if err != nil {
			return
		}
	}
}

func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// stageExec is the helper without namespaces (no user namespaces here, and
// weaker isolation accepted): it drops every privilege, applies Landlock,
// and becomes the command. Everything runs on one locked thread:
// capabilities, securebits and the Landlock domain are per thread, and
// execve keeps that thread's.
func stageExec() int {
	runtime.LockOSThread()
	status := os.NewFile(fdStatus, "status")
	fail := func(err error) int {
		fmt.Fprintf(status, "%v", err)
		return 125
	}
	p, err := readPlan(fdPlan)
	if err != nil {
		return fail(err)
	}
	if err := os.Chdir(p.Dir); err != nil {
		return fail(fmt.Errorf("enter the working directory: %w", err))
	}
	path, err := lookPath(p.Args[0], p.Env)
	if err != nil {
		return fail(err)
	}
	if err := narrowThread(p); err != nil {
		return fail(err)
	}
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fail(fmt.Errorf("close inherited descriptors: %w", err))
	}
	err = syscall.Exec(path, p.Args, p.Env)
	return fail(fmt.Errorf("run %s: %w", p.Args[0], err))
}

func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, d := range filepath.SplitList(lookupEnv(env, "PATH")) {
		if d == "" {
			d = "."
		}
		c := filepath.Join(d, name)
		if fi, err := os.Stat(c); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return c, nil
		}
	}
	return "", fmt.Errorf("run %s: not found in the command's PATH", name)
}

// dropCaps leaves the thread with no capabilities for good: securebits make
// uid 0 gain none at exec, the bounding and ambient sets are emptied.
func dropCaps() error {
	var hdr = unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return err
	}
	if data[0].Effective == 0 && data[1].Effective == 0 && data[0].Permitted == 0 && data[1].Permitted == 0 {
		return nil // nothing to drop (weaker isolation, unprivileged)
	}
	const bits = 1<<0 | 1<<1 | 1<<2 | 1<<3 | 1<<5 | 1<<6 | 1<<7 // NOROOT, NO_SETUID_FIXUP, KEEP_CAPS_LOCKED, NO_CAP_AMBIENT_RAISE (+locks)
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, bits, 0, 0, 0); err != nil {
		return fmt.Errorf("securebits: %w", err)
	}
	last := 63
	if n, ok := readInt("/proc/sys/kernel/cap_last_cap"); ok {
		last = n
	}
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("bounding set: %w", err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("ambient set: %w", err)
	}
	data = [2]unix.CapUserData{}
	return unix.Capset(&hdr, &data[0])
}
