//go:build linux

package sandbox

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// terminal is the command's own pty, made in the sandbox's private devpts
// when the command is run from a terminal. The command gets the pty as its
// controlling terminal in place of each of its stdio that was the person's
// terminal; PID 1 copies the person's keys in and the pty's output out. The
// person's terminal itself never reaches the command, so neither TIOCSTI nor
// anything else it does to its terminal touches the person's.
type terminal struct {
	master, slave *os.File
	out           *os.File // the person's terminal among stdout and stderr; nil: none
	onSlave       [3]bool  // which of the command's stdio are the pty
	done          chan struct{}
}

func isTerminal(fd int) bool {
	_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	return err == nil
}

func newTerminal() (*terminal, error) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, fmt.Errorf("the command's pty: %w", err)
	}
	mfd := int(m.Fd())
	if err := unix.IoctlSetPointerInt(mfd, unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		return nil, fmt.Errorf("the command's pty: unlock: %w", err)
	}
	// The peer by descriptor, not by a path another process could swap.
	s, err := openPeer(mfd)
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("the command's pty: open its other end: %w", err)
	}
	t := &terminal{master: m, slave: s, done: make(chan struct{})}
	t.onSlave[0] = true
	for fd := 1; fd <= 2; fd++ {
		if isTerminal(fd) {
			t.onSlave[fd] = true
			if t.out == nil {
				t.out = []*os.File{nil, os.Stdout, os.Stderr}[fd]
			}
		}
	}
	t.resize()
	return t, nil
}

func openPeer(mfd int) (*os.File, error) {
	r, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(mfd), unix.TIOCGPTPEER, uintptr(unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC))
	if errno != 0 {
		return nil, errno
	}
	return os.NewFile(r, "pty"), nil
}

// stdio is the command's stdin, stdout and stderr.
func (t *terminal) stdio() []*os.File {
	files := []*os.File{os.Stdin, os.Stdout, os.Stderr}
	for i, on := range t.onSlave {
		if on {
			files[i] = t.slave
		}
	}
	return files
}

// relay starts copying once the command holds the pty: PID 1 lets go of its
// own end, so the pty's output ends (EIO) when the last process in the
// sandbox does.
func (t *terminal) relay() {
	t.slave.Close()
	go io.Copy(t.master, os.Stdin)
	go func() {
		defer close(t.done)
		var dst io.Writer = io.Discard
		if t.out != nil {
			dst = t.out
		}
		io.Copy(dst, t.master)
	}()
}

// resize gives the pty the size of the person's terminal.
func (t *terminal) resize() {
	if ws, err := unix.IoctlGetWinsize(0, unix.TIOCGWINSZ); err == nil {
		unix.IoctlSetWinsize(int(t.master.Fd()), unix.TIOCSWINSZ, ws)
	}
}

// drain waits for the last of the command's output.
func (t *terminal) drain() { <-t.done }
