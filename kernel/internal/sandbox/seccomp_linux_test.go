//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/kulehq/kule/kernel/internal/runner"
)

// commonRefusedCalls are the system calls the seccomp filter refuses, each made
// with arguments the kernel would refuse by itself (a bad descriptor, a
// NULL pointer, a process that does not exist), so that none does harm
// when the filter is taken away and each tells the filter's answer from
// the kernel's.
var commonRefusedCalls = []refusedCall{
	{"io_uring_setup", func() error { return sys(unix.SYS_IO_URING_SETUP, 1, 0) }},
	{"io_uring_enter", func() error { return sys(unix.SYS_IO_URING_ENTER, neg1, 1, 0, 0, 0, 0) }},
	{"io_uring_register", func() error { return sys(unix.SYS_IO_URING_REGISTER, neg1, 0, 0, 0) }},
	{"ptrace", func() error { return sys(unix.SYS_PTRACE, unix.PTRACE_PEEKDATA, 999999, 0, 0) }},
	{"process_vm_readv", func() error { return sys(unix.SYS_PROCESS_VM_READV, 999999, 0, 0, 0, 0, 0) }},
	{"process_vm_writev", func() error { return sys(unix.SYS_PROCESS_VM_WRITEV, 999999, 0, 0, 0, 0, 0) }},
	{"process_madvise", func() error { return sys(unix.SYS_PROCESS_MADVISE, neg1, 0, 0, 0, 0) }},
	{"pidfd_getfd", func() error { return sys(unix.SYS_PIDFD_GETFD, neg1, 0, 0) }},
	{"kcmp", func() error { return sys(unix.SYS_KCMP, 999999, 999999, 0, 0, 0) }},
	{"keyctl", func() error { return sys(unix.SYS_KEYCTL, 9999, 0, 0, 0, 0) }},
	{"add_key", func() error { return sys(unix.SYS_ADD_KEY, 0, 0, 0, 0, 0) }},
	{"request_key", func() error { return sys(unix.SYS_REQUEST_KEY, 0, 0, 0, 0) }},
	{"setns", func() error { return sys(unix.SYS_SETNS, neg1, 0) }},
	{"unshare CLONE_NEWUSER", func() error { return sys(unix.SYS_UNSHARE, unix.CLONE_NEWUSER) }},
	{"clone CLONE_NEWUSER", func() error {
		c := exec.Command("/bin/true")
		c.SysProcAttr = &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWUSER}
		return c.Run()
	}},
	{"ioctl TIOCSTI", func() error { return sys(unix.SYS_IOCTL, neg1, unix.TIOCSTI, 0) }},
	{"ioctl TIOCLINUX", func() error { return sys(unix.SYS_IOCTL, neg1, unix.TIOCLINUX, 0) }},
	{"ioctl TIOCSTI (high bits set)", func() error { return sys(unix.SYS_IOCTL, neg1, 1<<32|unix.TIOCSTI, 0) }},
	{"init_module", func() error { return sys(unix.SYS_INIT_MODULE, 0, 0, 0) }},
	{"finit_module", func() error { return sys(unix.SYS_FINIT_MODULE, neg1, 0, 0) }},
	{"delete_module", func() error { return sys(unix.SYS_DELETE_MODULE, 0, 0) }},
	{"kexec_load", func() error { return sys(unix.SYS_KEXEC_LOAD, 0, 0, 0, 0) }},
	{"kexec_file_load", func() error { return sys(unix.SYS_KEXEC_FILE_LOAD, neg1, neg1, 0, 0, 0) }},
	{"bpf", func() error { return sys(unix.SYS_BPF, 9999, 0, 0) }},
	{"perf_event_open", func() error { return sys(unix.SYS_PERF_EVENT_OPEN, 0, 0, neg1, neg1, 0) }},
	{"userfaultfd", func() error { return sys(unix.SYS_USERFAULTFD, 1<<30) }},
	{"mount", func() error { return sys(unix.SYS_MOUNT, 0, 0, 0, 0, 0) }},
	{"umount2", func() error { return sys(unix.SYS_UMOUNT2, 0, 0) }},
	{"pivot_root", func() error { return sys(unix.SYS_PIVOT_ROOT, 0, 0) }},
	{"chroot", func() error { return sys(unix.SYS_CHROOT, 0) }},
	{"open_tree", func() error { return sys(unix.SYS_OPEN_TREE, neg1, 0, 0) }},
	{"move_mount", func() error { return sys(unix.SYS_MOVE_MOUNT, neg1, 0, neg1, 0, 0) }},
	{"fsopen", func() error { return sys(unix.SYS_FSOPEN, 0, 0) }},
	{"fsconfig", func() error { return sys(unix.SYS_FSCONFIG, neg1, 0, 0, 0, 0) }},
	{"fsmount", func() error { return sys(unix.SYS_FSMOUNT, neg1, 0, 0) }},
	{"fspick", func() error { return sys(unix.SYS_FSPICK, neg1, 0, 0) }},
	{"mount_setattr", func() error { return sys(unix.SYS_MOUNT_SETATTR, neg1, 0, 0, 0, 0) }},
	{"swapon", func() error { return sys(unix.SYS_SWAPON, 0, 0) }},
	{"swapoff", func() error { return sys(unix.SYS_SWAPOFF, 0) }},
	{"reboot", func() error { return sys(unix.SYS_REBOOT, 0, 0, 0, 0) }},
	{"open_by_handle_at", func() error { return sys(unix.SYS_OPEN_BY_HANDLE_AT, neg1, 0, 0) }},
	{"name_to_handle_at", func() error { return sys(unix.SYS_NAME_TO_HANDLE_AT, neg1, 0, 0, 0, 0) }},
	{"acct", func() error { return sys(unix.SYS_ACCT, 0) }},
	{"quotactl", func() error { return sys(unix.SYS_QUOTACTL, 0, 0, 0, 0) }},
	{"clock_settime", func() error { return sys(unix.SYS_CLOCK_SETTIME, 9999, 0) }},
	{"adjtimex", func() error { return sys(unix.SYS_ADJTIMEX, 0) }},
	{"syslog", func() error { return sys(unix.SYS_SYSLOG, 9999, 0, 0) }},
	{"fanotify_init", func() error { return sys(unix.SYS_FANOTIFY_INIT, 1<<30, 0) }},
	{"settimeofday", func() error { return sys(unix.SYS_SETTIMEOFDAY, 0, 0) }},
	{"clock_adjtime", func() error { return sys(unix.SYS_CLOCK_ADJTIME, 9999, 0) }},
	{"vhangup", func() error { return sys(unix.SYS_VHANGUP) }},
}

type refusedCall struct {
	name string
	call func() error
}

// refusedCalls are the common ones and those of this architecture.
var refusedCalls = append(append([]refusedCall(nil), commonRefusedCalls...), archRefusedCalls...)

const neg1 = ^uintptr(0)

func sys(nr uintptr, args ...uintptr) error {
	var a [6]uintptr
	copy(a[:], args)
	_, _, e := unix.Syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5])
	if e != 0 {
		return e
	}
	return nil
}

// attackSyscalls makes each refused system call; args[0] is the errno the
// filter answers with in this run. A call answered otherwise reached the
// kernel.
func attackSyscalls(args []string) {
	n, _ := strconv.Atoi(args[0])
	refused := syscall.Errno(n)
	for _, c := range refusedCalls {
		if err := c.call(); errors.Is(err, refused) {
			held("%s: refused (%v)", c.name, err)
		} else {
			escaped("%s reached the kernel: %v", c.name, err)
		}
	}
	// clone3's flags lie behind a pointer: ENOSYS, so libc uses clone.
	if err := sys(unix.SYS_CLONE3, 0, 0); errors.Is(err, syscall.ENOSYS) {
		held("clone3: ENOSYS")
	} else {
		escaped("clone3 reached the kernel: %v", err)
	}
	// Everything else still passes: an ioctl the filter does not name,
	// a plain clone (a child process), a file read.
	if err := sys(unix.SYS_IOCTL, neg1, unix.TIOCGWINSZ, 0); errors.Is(err, syscall.EBADF) {
		fmt.Println("passes: ioctl TIOCGWINSZ")
	}
	if err := exec.Command("/bin/true").Run(); err == nil {
		fmt.Println("passes: a child process")
	}
}

// TestSeccomp makes each system call the filter refuses from inside a real
// sandboxed command. The filter answers with an errno none of them gets
// from the kernel (EHWPOISON), so each refusal is the filter's own; without
// the filter each reaches the kernel; with the filter as every run has it,
// each is refused with EPERM and tools that try one (unshare, a container
// runtime) fail as they would on a kernel without it.
func TestSeccomp(t *testing.T) {
	skipUnlessSandbox(t)
	w := newWorld(t)
	fingerprint := int(unix.EHWPOISON)

	marked := w.sandbox()
	marked.off.seccompErrno = fingerprint
	r := w.attackWith(t, marked, runner.Spec{}, "syscalls", strconv.Itoa(fingerprint))
	assertHeld(t, r)
	for _, c := range refusedCalls {
		if !strings.Contains(r.stdout, "held: "+c.name+": refused") {
			t.Errorf("%s not refused by the filter:\n%s", c.name, r.stdout)
		}
	}
	for _, want := range []string{"held: clone3: ENOSYS", "passes: ioctl TIOCGWINSZ", "passes: a child process"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("no %q:\n%s\nstderr: %s", want, r.stdout, r.stderr)
		}
	}

	off := w.sandbox()
	off.off.seccomp = true
	r = w.attackWith(t, off, runner.Spec{}, "syscalls", strconv.Itoa(fingerprint))
	for _, c := range refusedCalls {
		if !strings.Contains(r.stdout, "ESCAPED: "+c.name+" reached the kernel") {
			t.Errorf("without the filter %s should reach the kernel:\n%s", c.name, r.stdout)
		}
	}

	// As every run has it: EPERM.
	r = w.attackWith(t, w.sandbox(), runner.Spec{}, "syscalls", strconv.Itoa(int(syscall.EPERM)))
	assertHeld(t, r)

	// A real tool: unshare(1) makes a user namespace inside the sandbox
	// without the filter, and cannot with it.
	if _, err := exec.LookPath("unshare"); err == nil {
		spec := runnerSpec("unshare", "--user", "true")
		if r := w.run(t, off, spec); r.code != 0 {
			t.Fatalf("without the filter unshare --user should work (exit %d): %s", r.code, r.stderr)
		}
		if r := w.run(t, w.sandbox(), spec); r.code == 0 || !strings.Contains(r.stderr, "Operation not permitted") {
			t.Fatalf("unshare --user made a user namespace inside the sandbox (exit %d): %s", r.code, r.stderr)
		}
	} else if os.Getenv("CI") != "" {
		t.Fatal("unshare(1) is missing on CI")
	}
}
