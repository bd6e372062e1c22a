//go:build linux

package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
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
	var p plan
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("read the plan: %w", err)
	}
	return &p, nil
}

// stageInit is PID 1 of the sandbox's namespaces.
func stageInit() int {
	status := os.NewFile(fdStatus, "status")
	fail := func(err error) int {
		fmt.Fprintf(status, "%v", err)
		return 125
	}
	// Nothing the kule process held open reaches further than here.
	unix.CloseRange(fdCtrl+1, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
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
		ln, err := net.Listen("tcp4", "127.0.0.1:"+strconv.Itoa(p.ProxyPort))
		if err != nil {
			return fail(fmt.Errorf("proxy bridge: listen inside the sandbox: %w", err))
		}
		go bridgeInside(ln, os.NewFile(fdCtrl, "bridge"))
	}

	planR, planW, err := os.Pipe()
	if err != nil {
		return fail(err)
	}
	args := append(append([]string(nil), os.Args[:len(os.Args)-1]...), HelperStageExec)
	signal.Ignore(syscall.SIGTTOU, syscall.SIGTTIN)
	proc, err := os.StartProcess("/proc/self/exe", args, &os.ProcAttr{
		Env:   os.Environ(),
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr, planR, status},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	planR.Close()
	if err != nil {
		return fail(fmt.Errorf("start the command's stage: %w", err))
	}
	status.Close()
	b, _ := json.Marshal(p)
	go func() { planW.Write(b); planW.Close() }()

	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
		syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH, syscall.SIGCONT, syscall.SIGALRM)
	go func() {
		for s := range sigs {
			syscall.Kill(proc.Pid, s.(syscall.Signal))
		}
	}()
	// Reap everything; when the command ends, so does PID 1 and with it
	// every process left in the namespace.
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return 125
		}
		if pid == proc.Pid {
			if ws.Signaled() {
				return 128 + int(ws.Signal())
			}
			return ws.ExitStatus()
		}
	}
}

// bridgeInside hands each connection accepted inside the namespace to the
// host side, which joins it to the proxy. Only descriptors cross; no address
// outside the namespace is ever reachable from in here.
func bridgeInside(ln net.Listener, ctrl *os.File) {
	fd := int(ctrl.Fd())
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		tc, ok := c.(*net.TCPConn)
		if !ok {
			c.Close()
			continue
		}
		f, err := tc.File()
		tc.Close()
		if err != nil {
			continue
		}
		err = unix.Sendmsg(fd, []byte{0}, unix.UnixRights(int(f.Fd())), nil, 0)
		f.Close()
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

// stageExec drops every privilege, applies Landlock, and becomes the
// command. Everything runs on one locked thread: capabilities, securebits
// and the Landlock domain are per thread, and execve keeps that thread's.
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
	if p.FSize > 0 {
		if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: uint64(p.FSize), Max: uint64(p.FSize)}); err != nil {
			return fail(fmt.Errorf("limit file size: %w", err))
		}
	}
	if err := dropCaps(); err != nil {
		return fail(fmt.Errorf("drop capabilities: %w", err))
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fail(fmt.Errorf("set no_new_privs: %w", err))
	}
	if p.Landlock {
		if err := restrictLandlock(p); err != nil {
			return fail(err)
		}
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
