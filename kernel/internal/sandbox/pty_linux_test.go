//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kulehq/kule/kernel/internal/runner"
)

// ptyHostJob is what the test binary, re-run as a person's shell at a
// terminal (KULE_PTY_HOST), runs in the sandbox.
type ptyHostJob struct {
	Exe          string
	Home         string
	HostEnv, Env []string
	Task         runner.Task
	Args         []string
}

// ptyHostMain runs the job with the controlling terminal as stdio and exits
// with the command's code.
func ptyHostMain(spec string) int {
	var j ptyHostJob
	if err := json.Unmarshal([]byte(spec), &j); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 99
	}
	s := &Sandbox{Exe: j.Exe, Home: j.Home, HostEnv: j.HostEnv}
	code, err := s.Run(context.Background(), runner.Spec{Task: j.Task, Dir: j.Task.Copy, Env: j.Env, Args: j.Args,
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "RUN FAILED:", err)
		return 99
	}
	return code
}

// screen is what a terminal showed, read from its master as it comes.
type screen struct {
	master *os.File
	person *os.File // the terminal's other end: the person's stdio
	mu     sync.Mutex
	cond   *sync.Cond
	buf    bytes.Buffer
	ended  bool
}

func (s *screen) read() {
	b := make([]byte, 4096)
	for {
		n, err := s.master.Read(b)
		s.mu.Lock()
		s.buf.Write(b[:n])
		if err != nil {
			s.ended = true
		}
		s.cond.Broadcast()
		s.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// waitFor blocks until the terminal showed text, or showed all it will, or
// 30 s passed (which only a broken run takes).
func (s *screen) waitFor(text string) bool {
	expired := false
	timer := time.AfterFunc(30*time.Second, func() {
		s.mu.Lock()
		expired = true
		s.cond.Broadcast()
		s.mu.Unlock()
	})
	defer timer.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for !strings.Contains(s.buf.String(), text) && !s.ended && !expired {
		s.cond.Wait()
	}
	return strings.Contains(s.buf.String(), text)
}

func (s *screen) type_(text string) { io.WriteString(s.master, text) }

// fromTerminal runs args in the sandbox the way a person at a terminal does:
// a child of the test binary leads a session whose controlling terminal is
// a fresh pty, and runs the sandbox with it as stdin, stdout and stderr.
// interact types into the terminal while the command runs. "PERSON" in args
// becomes the terminal's dev:ino. The result's stdout is everything the
// terminal showed (CR LF made LF).
func (w *world) fromTerminal(t *testing.T, interact func(s *screen), args ...string) result {
	t.Helper()
	master, slave := openPTY(t)
	defer master.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(slave.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	args = append([]string(nil), args...)
	for i, a := range args {
		if a == "PERSON" {
			args[i] = fmt.Sprintf("%d:%d", st.Dev, st.Ino)
		}
	}
	// The size the person's terminal has when the command starts is the
	// size of the command's own (TestOwnTerminal looks for 33 77).
	if err := unix.IoctlSetWinsize(int(master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 33, Col: 77}); err != nil {
		t.Fatal(err)
	}
	before, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	sb := w.sandbox()
	env := w.env
	if len(args) > 1 && args[0] == w.attacker {
		env = append(append([]string(nil), env...), "KULE_ATTACK="+args[1])
		args = append([]string{args[0]}, args[2:]...)
	}
	job, _ := json.Marshal(ptyHostJob{Exe: sb.Exe, Home: sb.Home, HostEnv: sb.HostEnv, Env: env, Task: w.task, Args: args})
	exe, _ := os.Executable()
	cmd := exec.Command(exe)
	cmd.Env = []string{"KULE_PTY_HOST=" + string(job), "PATH=/usr/bin:/bin"}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &screen{master: master, person: slave}
	s.cond = sync.NewCond(&s.mu)
	go s.read()
	interact(s)
	err = cmd.Wait()
	code := cmd.ProcessState.ExitCode()
	if err != nil && code < 0 {
		t.Fatal(err)
	}
	after, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	slave.Close() // the last holder: the master reads EIO after the rest
	s.waitFor("\x00never")
	s.mu.Lock()
	ended, out := s.ended, strings.ReplaceAll(s.buf.String(), "\r\n", "\n")
	s.mu.Unlock()
	if !ended {
		t.Fatalf("waited 30 s for the terminal to close after the command ended:\n%s", out)
	}
	if code == 99 {
		t.Fatalf("the sandbox did not run: %s", out)
	}
	if after.Lflag != before.Lflag || after.Iflag != before.Iflag || after.Oflag != before.Oflag {
		t.Errorf("the person's terminal was left changed: lflag %#x -> %#x, iflag %#x -> %#x, oflag %#x -> %#x",
			before.Lflag, after.Lflag, before.Iflag, after.Iflag, before.Oflag, after.Oflag)
	}
	return result{code: code, stdout: out}
}

func TestOwnTerminal(t *testing.T) {
	skipUnlessSandbox(t)
	t.Parallel()
	w := newWorld(t)
	script := `tty; test -t 0 && echo stdin-is-a-tty; test -t 1 && echo stdout-is-a-tty; ` +
		`echo ready; read line; echo "got [$line]"; printf 'rows=%s\n' "$(stty size)"; exit 3`
	r := w.fromTerminal(t, func(s *screen) {
		if s.waitFor("ready") {
			// Ctrl-Z first: the kernel drops it (the command's group is
			// orphaned: nothing could resume it), the command reads on.
			s.type_("\x1ahello from the keyboard\r")
		}
	}, "sh", "-c", script)
	for _, want := range []string{"/dev/pts/0\n", "stdin-is-a-tty\n", "stdout-is-a-tty\n", "got [hello from the keyboard]\n", "rows=33 77\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the terminal did not show %q:\n%s", want, r.stdout)
		}
	}
	if r.code != 3 {
		t.Errorf("exit code %d, want 3:\n%s", r.code, r.stdout)
	}
}

func TestOwnTerminalCtrlC(t *testing.T) {
	skipUnlessSandbox(t)
	t.Parallel()
	w := newWorld(t)
	r := w.fromTerminal(t, func(s *screen) {
		if s.waitFor("ready") {
			s.type_("\x03")
		}
	}, "sh", "-c", "echo ready; exec sleep 1000")
	if r.code != 128+2 {
		t.Fatalf("exit code %d, want 130 (SIGINT from the pty):\n%s", r.code, r.stdout)
	}
}

// A terminal that takes no output holds up only the relay of the output:
// keys still reach the command. The person's terminal is stopped here (as
// by Ctrl-S where the terminal keeps flow control) while the command floods
// it, and a Ctrl-C typed meanwhile still stops the command.
func TestStoppedTerminalStillTakesCtrlC(t *testing.T) {
	skipUnlessSandbox(t)
	t.Parallel()
	w := newWorld(t)
	flooding, marker := w.landed("flooding"), w.landed("interrupted")
	// The flood says it is flooding from inside its pipeline, once both
	// of its processes exist: a Ctrl-C typed before they were forked
	// would reach only the shell, whose trap waits for a flood that then
	// never ends while the terminal takes no output.
	script := `trap 'echo > interrupted; exit 9' INT; echo ready; read go; ` +
		`head -c 8000000 /dev/zero | (echo > flooding; exec tr '\0' x); echo flood-ended; exec sleep 1000`
	// The command says what it does in files, since its terminal shows
	// nothing while stopped.
	r := w.fromTerminal(t, func(s *screen) {
		if !s.waitFor("ready") {
			return
		}
		if err := unix.IoctlSetInt(int(s.person.Fd()), unix.TCXONC, unix.TCOOFF); err != nil {
			t.Fatal(err)
		}
		s.type_("go\r")
		if !waitForFile(flooding) {
			t.Errorf("the command never read its go")
		} else {
			s.type_("\x03")
			if !waitForFile(marker) {
				t.Errorf("Ctrl-C did not reach the command while the person's terminal took no output")
			}
		}
		unix.IoctlSetInt(int(s.person.Fd()), unix.TCXONC, unix.TCOON)
	}, "sh", "-c", script)
	if r.code != 9 {
		t.Errorf("exit code %d, want 9 (the command's trap of SIGINT)", r.code)
	}
	if strings.Contains(r.stdout, "flood-ended") {
		t.Errorf("the flood ran to its end: Ctrl-C came too late")
	}
}

func TestOwnTerminalResize(t *testing.T) {
	skipUnlessSandbox(t)
	t.Parallel()
	w := newWorld(t)
	// The command waits (up to 20 s) to see the new size; no timing is
	// asserted, the wait only ends a broken run.
	script := `echo ready; i=0; while [ "$(stty size)" != "40 100" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; echo "size $(stty size)"`
	r := w.fromTerminal(t, func(s *screen) {
		if s.waitFor("ready") {
			unix.IoctlSetWinsize(int(s.master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: 100})
		}
	}, "sh", "-c", script)
	if !strings.Contains(r.stdout, "size 40 100\n") {
		t.Fatalf("the command's pty did not follow the terminal's new size:\n%s", r.stdout)
	}
}

func TestNoTerminalWithoutOne(t *testing.T) {
	skipUnlessSandbox(t)
	t.Parallel()
	w := newWorld(t)
	r := w.run(t, w.sandbox(), runner.Spec{Stdin: strings.NewReader("piped\n"), Args: []string{"sh", "-c",
		`tty; test -t 0 || echo stdin-is-not-a-tty; read x; echo "got $x"; ls /dev/pts`}})
	if r.stdout != "not a tty\nstdin-is-not-a-tty\ngot piped\nptmx\n" {
		t.Fatalf("stdout %q (stderr %s)", r.stdout, r.stderr)
	}
}
