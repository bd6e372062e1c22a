package limits

import (
	"os"

	"golang.org/x/sys/unix"
)

// rootEnd watches for the end of the process pid. ended is closed once it
// has ended (exited, a zombie or reaped), so that the watch's last work —
// the task's time written and synced — overlaps what the caller does after
// its runner returned (the effect scan, the summary) instead of waiting for
// End. stop releases the watch; ended is nil (never ready) when the kernel
// has no pidfd, and then the tick and End find the run's end as before.
func rootEnd(pid int) (ended <-chan struct{}, stop func()) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return nil, func() {}
	}
	// Non-blocking, the pidfd joins the runtime's poller: waiting on it
	// holds no thread, and closing it ends the wait.
	f := os.NewFile(uintptr(fd), "pidfd")
	rc, err := f.SyscallConn()
	if err != nil {
		_ = f.Close()
		return nil, func() {}
	}
	ch := make(chan struct{})
	go func() {
		// A pidfd is readable once its process has ended; Read waits for
		// that and fails only when stop closed the file first.
		err := rc.Read(func(fd uintptr) bool {
			p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			n, err := unix.Poll(p, 0)
			return err == nil && n > 0
		})
		if err == nil {
			close(ch)
		}
	}()
	// The close of a pidfd nothing writes to cannot lose anything.
	return ch, func() { _ = f.Close() }
}
