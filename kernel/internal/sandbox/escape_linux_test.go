//go:build linux

package sandbox

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kulehq/kule/kernel/internal/runner"
)

// TestEscape makes every escape attempt of docs/security.md against a real
// sandbox; each must fail. The names here are the names in that document.
func TestEscape(t *testing.T) {
	skipUnlessSandbox(t)
	tests := map[string]func(t *testing.T, w *world){
		"read-credentials": func(t *testing.T, w *world) {
			var paths []string
			for _, c := range credentialFiles {
				paths = append(paths, filepath.Join(w.home, c))
			}
			paths = append(paths,
				filepath.Join(w.sibling, "secret.txt"),                                   // a project beside the workspace
				filepath.Join(w.folder, "main.go"),                                       // the real folder (its parent is hidden)
				filepath.Join(w.other, "copy", "secret.txt"),                             // another task
				filepath.Join(w.kule, "keys", "history.key"),                             // Kule's own home
				filepath.Join(w.task.Copy, "..", "..", "feedface", "copy", "secret.txt"), // .. from the copy
			)
			assertHeld(t, w.attack(t, runner.Spec{}, "read", paths...))
		},
		"write-outside": func(t *testing.T, w *world) {
			targets := []string{
				filepath.Join(w.home, "notes.txt"),
				filepath.Join(w.home, ".bashrc"),
				filepath.Join(w.folder, "main.go"),
				"/etc/kule-escape",
				filepath.Join(w.other, "copy", "secret.txt"),
				filepath.Join(w.shared, "lib.go"), // revealed: read-only
				"/proc/self/root" + filepath.Join(w.home, "notes.txt"),
				filepath.Join(w.home, ".ssh", "planted"),      // a hidden folder's empty cover
				filepath.Join(w.home, "Documents", "planted"), // another, the same empty tree
			}
			assertHeld(t, w.attack(t, runner.Spec{Reveal: []string{w.shared}}, "write", targets...))
			for _, p := range []string{filepath.Join(w.home, ".bashrc"), "/etc/kule-escape"} {
				if _, err := os.Stat(p); err == nil {
					t.Errorf("%s was created", p)
				}
			}
			for p, want := range map[string]string{
				filepath.Join(w.home, "notes.txt"): "visible but read-only",
				filepath.Join(w.folder, "main.go"): "package main // the real folder " + marker,
				filepath.Join(w.shared, "lib.go"):  "package shared // revealed",
			} {
				if b, _ := os.ReadFile(p); string(b) != want {
					t.Errorf("%s changed: %q", p, b)
				}
			}
		},
		"symlink-planted": func(t *testing.T, w *world) {
			os.Symlink(filepath.Join(w.folder, "main.go"), filepath.Join(w.task.Copy, "to-folder"))
			os.Symlink(filepath.Join(w.home, ".ssh", "id_ed25519"), filepath.Join(w.task.Copy, "to-ssh"))
			os.Symlink(w.home, filepath.Join(w.task.Copy, "to-home"))
			assertHeld(t, w.attack(t, runner.Spec{}, "read",
				filepath.Join(w.task.Copy, "to-folder"), filepath.Join(w.task.Copy, "to-ssh"),
				filepath.Join(w.task.Copy, "to-home", ".aws", "credentials")))
			assertHeld(t, w.attack(t, runner.Spec{}, "write",
				filepath.Join(w.task.Copy, "to-folder"), filepath.Join(w.task.Copy, "to-home", "planted")))
			if _, err := os.Stat(filepath.Join(w.home, "planted")); err == nil {
				t.Error("wrote into the home through a symlink")
			}
		},
		"proc-root": func(t *testing.T, w *world) {
			ssh := filepath.Join(w.home, ".ssh", "id_ed25519")
			me := strconv.Itoa(os.Getpid())
			assertHeld(t, w.attack(t, runner.Spec{}, "read",
				"/proc/self/root"+ssh, "/proc/1/root"+ssh, "/proc/1/environ",
				"/proc/"+me+"/root"+ssh, "/proc/"+me+"/cwd/go.mod", "/proc/"+me+"/environ"))
		},
		"signal-ptrace-outside": func(t *testing.T, w *world) {
			sleeper := exec.Command("sleep", "60")
			if err := sleeper.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
			outside := []string{"1", strconv.Itoa(sleeper.Process.Pid), strconv.Itoa(os.Getpid())}
			assertHeld(t, w.attack(t, runner.Spec{}, "signal", outside...))
			assertHeld(t, w.attack(t, runner.Spec{}, "ptrace", outside...))
		},
		"unix-sockets-outside": func(t *testing.T, w *world) {
			bus := filepath.Join(w.root, "run", "user", "1000", "bus")
			docker := filepath.Join(w.root, "run", "user", "1000", "docker.sock")
			abstract := fmt.Sprintf("@kule-test-%d", os.Getpid())
			for _, a := range []string{bus, docker, abstract} {
				os.MkdirAll(filepath.Dir(bus), 0o700)
				ln, err := net.Listen("unix", a)
				if err != nil {
					t.Fatal(err)
				}
				defer ln.Close()
			}
			assertHeld(t, w.attack(t, runner.Spec{}, "unix", bus, docker, abstract))
		},
		"tcp-outside": func(t *testing.T, w *world) {
			ln, err := net.Listen("tcp4", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			proxy := echoServer(t)
			for _, n := range []runner.Network{runner.NetworkProxy, runner.NetworkNone} {
				spec := runner.Spec{Network: n}
				if n == runner.NetworkProxy {
					spec.ProxyAddr = proxy
				}
				assertHeld(t, w.attack(t, spec, "tcp", ln.Addr().String(), "self", "10.0.0.1:80"))
			}
		},
		"mount-unshare": func(t *testing.T, w *world) {
			assertHeld(t, w.attack(t, runner.Spec{}, "mount", filepath.Join(w.home, ".ssh"), "/proc", "/tmp"))
			// A user namespace of its own, then unmount the hiding: unshare(1).
			if _, err := exec.LookPath("unshare"); err != nil {
				if os.Getenv("CI") != "" {
					t.Fatal("unshare (util-linux) not installed on CI")
				}
				t.Skip("unshare (util-linux) not installed")
			}
			r := w.run(t, w.sandbox(), runner.Spec{Args: []string{"sh", "-c",
				"unshare -rm sh -c 'umount " + filepath.Join(w.home, ".ssh") + " && cat " + filepath.Join(w.home, ".ssh", "id_ed25519") + "' 2>&1; echo held"}})
			assertHeld(t, r)
		},
		"setuid": func(t *testing.T, w *world) {
			assertHeld(t, w.attack(t, runner.Spec{}, "privileges"))
			// A setuid binary in the copy, owned by another user: it must
			// run as the command's own uid.
			suid := filepath.Join(w.task.Copy, "suid")
			b, _ := os.ReadFile(w.attacker)
			os.WriteFile(suid, b, 0o755)
			if os.Getuid() != 0 {
				t.Skip("making a setuid file of another owner needs root (CI runs as root)")
			}
			os.Chown(suid, 65534, 65534)
			os.Chmod(suid, 0o4755)
			r := w.run(t, w.sandbox(), runner.Spec{Args: []string{suid}, Env: append(w.env, "KULE_ATTACK=ids")})
			assertHeld(t, r)
			if want := fmt.Sprintf("uid=%d euid=%d", os.Getuid(), os.Getuid()); !strings.Contains(r.stdout, want) {
				t.Fatalf("setuid took effect: %s (want %s)", r.stdout, want)
			}
		},
		"disk-device": func(t *testing.T, w *world) {
			assertHeld(t, w.attack(t, runner.Spec{}, "device", "/dev/vda", "/dev/sda", "/dev/nvme0n1", "/dev/mem", "/dev/kmem", "/dev/kmsg", "/dev/console", "/dev/tty0", "/dev/input/event0", "/dev/loop0"))
		},
		"background-process": func(t *testing.T, w *world) {
			r := w.run(t, w.sandbox(), runner.Spec{Args: []string{"sh", "-c", "(setsid sleep 31337 &) ; sleep 31338 & echo held"}})
			assertHeld(t, r)
			ents, _ := os.ReadDir("/proc")
			for _, e := range ents {
				b, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
				if bytes.Contains(b, []byte("3133")) && bytes.HasPrefix(b, []byte("sleep")) {
					t.Fatalf("a process outlived the command: pid %s %q", e.Name(), b)
				}
			}
		},
		"tiocsti": func(t *testing.T, w *world) {
			// The person's terminal on stdin and stderr, but not as the
			// foreground of this process: no pty of its own, and the
			// terminal is not its controlling one.
			master, slave := openPTY(t)
			defer master.Close()
			defer slave.Close()
			r := w.attack(t, runner.Spec{Stdin: slave, Stderr: slave}, "tiocsti")
			assertHeld(t, r)
			fd := int(slave.Fd()) // Fd() makes the file blocking: call it once
			unix.SetNonblock(fd, true)
			buf := make([]byte, 64)
			if n, _ := syscall.Read(fd, buf); n > 0 {
				t.Fatalf("input was injected into the terminal: %q", buf[:n])
			}
		},
		"tiocsti-own-pty": func(t *testing.T, w *world) {
			// Run from the person's terminal: the command gets a pty of
			// its own and no descriptor of the person's.
			r := w.fromTerminal(t, func(*screen) {}, w.attacker, "tiocsti", "PERSON")
			if !strings.Contains(r.stdout, "the command's own pty") {
				t.Fatalf("the command had no pty of its own:\n%s", r.stdout)
			}
			assertHeld(t, r)
		},
		"reopen-proc-fd": func(t *testing.T, w *world) {
			notes := filepath.Join(w.home, "notes.txt")
			assertHeld(t, w.attack(t, runner.Spec{}, "reopen", notes, "/etc/hostname"))
			if b, _ := os.ReadFile(notes); string(b) != "visible but read-only" {
				t.Fatalf("notes changed: %q", b)
			}
		},
		"link-rename-into-copy": func(t *testing.T, w *world) {
			c := w.task.Copy
			assertHeld(t, w.attack(t, runner.Spec{}, "link",
				filepath.Join(w.home, ".ssh", "id_ed25519"), filepath.Join(c, "stolen-key"),
				filepath.Join(w.home, "notes.txt"), filepath.Join(c, "stolen-notes"),
				filepath.Join(w.folder, "main.go"), filepath.Join(c, "stolen-main"),
				filepath.Join(w.other, "copy", "secret.txt"), filepath.Join(c, "stolen-other")))
			for _, n := range []string{"stolen-key", "stolen-notes", "stolen-main", "stolen-other"} {
				if _, err := os.Lstat(filepath.Join(c, n)); err == nil {
					t.Errorf("%s reached the copy", n)
				}
			}
			if _, err := os.Stat(filepath.Join(w.home, "notes.txt")); err != nil {
				t.Errorf("notes.txt was moved: %v", err)
			}
		},
		"inherited-fd": func(t *testing.T, w *world) {
			// A descriptor Kule holds open without close-on-exec.
			fd, err := syscall.Open(filepath.Join(w.home, ".ssh", "id_ed25519"), syscall.O_RDONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer syscall.Close(fd)
			assertHeld(t, w.attack(t, runner.Spec{}, "fds"))
			// And from a shell, which opens nothing of its own.
			// (The glob's own directory descriptor is closed before readlink.)
			r := w.run(t, w.sandbox(), runner.Spec{Args: []string{"sh", "-c", `for f in /proc/$$/fd/*; do readlink $f; done`}})
			if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); len(lines) != 3 || strings.Contains(r.stdout, ".ssh") {
				t.Fatalf("descriptors open in the command: %q, want stdio only", r.stdout)
			}
		},
		"secret-env": func(t *testing.T, w *world) {
			env := append(append([]string(nil), w.env...),
				"GITHUB_TOKEN="+marker, "AWS_SECRET_ACCESS_KEY="+marker, "OPENAI_API_KEY="+marker,
				"HARMLESS_LOOKING=ghp_"+marker, "DB_PASSWORD="+marker, "SSH_AUTH_SOCK=/tmp/"+marker)
			r := w.attack(t, runner.Spec{Env: env}, "env")
			assertHeld(t, r)
			if !strings.Contains(r.stdout, "env: LANG=C") {
				t.Fatalf("the ordinary environment is missing: %s", r.stdout)
			}
		},
	}
	for name, test := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, newWorld(t))
		})
	}
}

// echoServer stands in for the task's proxy: it echoes what it reads.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				buf := make([]byte, 4096)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						c.Write(buf[:n])
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return m, s
}
