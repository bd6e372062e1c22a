//go:build linux

package sandbox

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// runAttack runs inside the sandbox as the command: each attack prints
// "ESCAPED: ..." for what got through and "held: ..." for each refusal.
func runAttack(name string, args []string) int {
	fn, ok := attacks[name]
	if !ok {
		fmt.Println("unknown attack", name)
		return 3
	}
	fn(args)
	return 0
}

var attacks = map[string]func(args []string){
	"read":       attackRead,
	"write":      attackWrite,
	"signal":     attackSignal,
	"ptrace":     attackPtrace,
	"unix":       attackUnix,
	"tcp":        attackTCP,
	"mount":      attackMount,
	"privileges": attackPrivileges,
	"device":     attackDevice,
	"tiocsti":    attackTIOCSTI,
	"reopen":     attackReopen,
	"link":       attackLink,
	"fds":        attackFDs,
	"env":        attackEnv,
	"syscalls":   attackSyscalls,
	"tls":        attackTLS,
	"ids":        func([]string) { fmt.Printf("uid=%d euid=%d\nheld: ids\n", os.Getuid(), os.Geteuid()) },
}

func escaped(format string, a ...any) { fmt.Printf("ESCAPED: "+format+"\n", a...) }
func held(format string, a ...any)    { fmt.Printf("held: "+format+"\n", a...) }

func attackRead(args []string) {
	for _, p := range args {
		b, err := os.ReadFile(p)
		if err == nil && len(b) > 0 && !bytes.Equal(b, []byte{}) {
			escaped("read %s: %q", p, b)
			continue
		}
		held("read %s: %v", p, err)
	}
}

func attackWrite(args []string) {
	for _, p := range args {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err == nil {
			_, err = f.WriteString("pwned\n")
			f.Close()
		}
		if err == nil {
			escaped("wrote %s", p)
			continue
		}
		held("write %s: %v", p, err)
	}
}

func attackSignal(args []string) {
	for _, a := range args {
		pid, _ := strconv.Atoi(a)
		if err := syscall.Kill(pid, 0); err == nil {
			escaped("signal reaches pid %d", pid)
		} else {
			held("signal pid %d: %v", pid, err)
		}
	}
}

func attackPtrace(args []string) {
	for _, a := range args {
		pid, _ := strconv.Atoi(a)
		if err := unix.PtraceAttach(pid); err == nil {
			escaped("ptrace attached to pid %d", pid)
			unix.PtraceDetach(pid)
		} else {
			held("ptrace pid %d: %v", pid, err)
		}
	}
}

func attackUnix(args []string) {
	for _, a := range args {
		c, err := net.DialTimeout("unix", a, time.Second)
		if err == nil {
			c.Close()
			escaped("connected to unix socket %q", a)
			continue
		}
		held("unix %q: %v", a, err)
	}
}

func attackTCP(args []string) {
	for _, a := range args {
		if a == "self" { // a listener of its own, on a port other than the proxy's
			ln, err := net.Listen("tcp4", "127.0.0.1:0")
			if err != nil {
				held("listen: %v", err)
				continue
			}
			a = ln.Addr().String()
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					c.Close()
				}
			}()
		}
		c, err := (&net.Dialer{Timeout: time.Second}).Dial("tcp4", a)
		if err == nil {
			c.Close()
			escaped("connected to %s", a)
			continue
		}
		held("tcp %s: %v", a, err)
	}
}

func attackMount(args []string) {
	if err := unix.Mount("tmpfs", "/tmp", "tmpfs", 0, ""); err == nil {
		escaped("mounted tmpfs on /tmp")
	} else {
		held("mount: %v", err)
	}
	for _, a := range args {
		if err := unix.Unmount(a, unix.MNT_DETACH); err == nil {
			escaped("unmounted %s", a)
		} else {
			held("umount %s: %v", a, err)
		}
	}
	if err := unix.Unshare(unix.CLONE_NEWNS); err == nil {
		escaped("unshared a mount namespace without privileges")
	} else {
		held("unshare mount namespace: %v", err)
	}
}

func attackPrivileges([]string) {
	b, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimSpace(v)
		switch k {
		case "NoNewPrivs":
			if v != "1" {
				escaped("no_new_privs is %s", v)
			} else {
				held("no_new_privs is 1")
			}
		case "CapEff", "CapPrm", "CapBnd", "CapAmb", "CapInh":
			if strings.Trim(v, "0") != "" {
				escaped("%s is %s", k, v)
			} else {
				held("%s is empty", k)
			}
		}
	}
}

func attackDevice(args []string) {
	for _, a := range args {
		f, err := os.OpenFile(a, os.O_RDONLY, 0)
		if err == nil {
			f.Close()
			escaped("opened %s", a)
			continue
		}
		held("open %s: %v", a, err)
	}
	if err := unix.Mknod("/tmp/disk", unix.S_IFBLK|0o600, int(unix.Mkdev(254, 0))); err == nil {
		escaped("made a block device node")
	} else {
		held("mknod: %v", err)
	}
}

// attackTIOCSTI pushes input into the terminal behind each of stdio. args
// name the person's terminal as "dev:ino": injecting into any other (the
// command's own pty) is harmless; into that one, an escape. Without args
// every success is one.
func attackTIOCSTI(args []string) {
	person := map[string]bool{}
	for _, a := range args {
		person[a] = true
	}
	for fd := 0; fd <= 2; fd++ {
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil {
			continue
		}
		id := fmt.Sprintf("%d:%d", st.Dev, st.Ino)
		if person[id] {
			escaped("fd %d is the person's terminal", fd)
		}
		b := byte('#')
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.TIOCSTI, uintptr(unsafe.Pointer(&b)))
		_, notty := unix.IoctlGetTermios(fd, unix.TCGETS)
		switch {
		case errno != 0 && notty == nil && !person[id]:
			held("TIOCSTI on fd %d: %v; fd %d is the command's own pty (%s)", fd, errno, fd, id)
		case errno != 0:
			held("TIOCSTI on fd %d: %v", fd, errno)
		case len(args) == 0 || person[id]:
			escaped("TIOCSTI injected into fd %d", fd)
		default:
			held("TIOCSTI on fd %d reached only the command's own pty (%s)", fd, id)
		}
	}
}

func attackReopen(args []string) {
	for _, a := range args {
		f, err := os.Open(a)
		if err != nil {
			held("open %s: %v", a, err)
			continue
		}
		p := fmt.Sprintf("/proc/self/fd/%d", f.Fd())
		for _, flag := range []int{os.O_WRONLY, os.O_RDWR, os.O_WRONLY | os.O_TRUNC} {
			g, err := os.OpenFile(p, flag, 0)
			if err == nil {
				_, err = g.WriteString("pwned")
				g.Close()
			}
			if err == nil {
				escaped("reopened %s writable through %s", a, p)
			} else {
				held("reopen %s (flags %#x): %v", a, flag, err)
			}
		}
		f.Close()
	}
}

// attackLink: args are pairs "from to".
func attackLink(args []string) {
	for i := 0; i+1 < len(args); i += 2 {
		from, to := args[i], args[i+1]
		if err := os.Link(from, to); err == nil {
			escaped("hard-linked %s to %s", from, to)
		} else {
			held("link %s: %v", from, err)
		}
		if err := os.Rename(from, to); err == nil {
			escaped("renamed %s to %s", from, to)
		} else {
			held("rename %s: %v", from, err)
		}
	}
}

func attackFDs([]string) {
	ents, _ := os.ReadDir("/proc/self/fd")
	for _, e := range ents {
		fd, _ := strconv.Atoi(e.Name())
		target, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err != nil {
			continue // the directory listing's own descriptor, closed since
		}
		// The Go runtime of this attacker opens its own cgroup files.
		if fd <= 2 || strings.HasPrefix(target, "anon_inode:") || strings.HasPrefix(target, "pipe:") ||
			strings.HasPrefix(target, "/proc/") || strings.HasPrefix(target, "/sys/fs/cgroup/") {
			continue
		}
		buf := make([]byte, 4096)
		n, _ := unix.Pread(fd, buf, 0)
		escaped("inherited fd %d -> %s: %q", fd, target, buf[:max(n, 0)])
	}
	held("checked %d descriptors", len(ents))
}

func attackEnv([]string) {
	for _, kv := range os.Environ() {
		fmt.Println("env:", kv)
	}
	held("environment printed")
}
