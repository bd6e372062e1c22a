//go:build linux && cgo

// The command's own pty and the relay between it and the person's
// terminal.

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <termios.h>
#include <unistd.h>
#include <sys/ioctl.h>

#include "pid1_linux.h"

int kule_is_terminal(int fd) {
	struct termios t;
	return ioctl(fd, TCGETS, &t) == 0;
}

// kule_resize gives the pty the person's terminal's size; it returns 0, or
// -1 with errno when the pty did not take it (the person's terminal that
// has no size leaves the pty as it is).
int kule_resize(const struct kule_terminal *t) {
	struct winsize ws;
	if (ioctl(0, TIOCGWINSZ, &ws) != 0)
		return 0;
	return ioctl(t->master, TIOCSWINSZ, &ws) == 0 ? 0 : -1;
}

// kule_new_terminal makes the command's pty in the sandbox's own devpts,
// the size of the person's terminal.
void kule_new_terminal(struct kule_terminal *t) {
	t->master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (t->master < 0)
		kule_die("the command's pty: %s", kule_why(errno));
	int unlock = 0;
	if (ioctl(t->master, TIOCSPTLCK, &unlock) != 0)
		kule_die("the command's pty: unlock: %s", kule_why(errno));
	// The peer by descriptor, not by a path another process could swap.
	t->slave = ioctl(t->master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (t->slave < 0)
		kule_die("the command's pty: open its other end: %s", kule_why(errno));
	t->out = -1;
	t->on_slave[0] = 1;
	for (int fd = 1; fd <= 2; fd++) {
		t->on_slave[fd] = kule_is_terminal(fd);
		if (t->on_slave[fd] && t->out < 0)
			t->out = fd;
	}
	if (kule_resize(t) != 0)
		kule_die("the command's pty: its size: %s", kule_why(errno));
}

// kule_read_keys reads what the person typed. Only what is there: the terminal
// is shared with the person's shell, and a read that blocks would hold PID
// 1. Readable with nothing to read twice running is an end of input (a
// terminal in canonical mode at its EOF character): then the read returns
// at once.
void kule_read_keys(struct kule_relay *r, short revents) {
	int avail = -1;
	if (ioctl(0, FIONREAD, &avail) == 0 && avail == 0 && !r->empty_poll) {
		r->empty_poll = 1;
		if (revents & (POLLHUP | POLLERR | POLLNVAL))
			r->stdin_open = 0;
		return;
	}
	r->empty_poll = 0;
	size_t want = avail > 0 && (size_t)avail < sizeof r->in ? (size_t)avail : sizeof r->in;
	ssize_t n = read(0, r->in, want);
	if (n > 0)
		r->in_len = n, r->in_off = 0;
	else if (n == 0 || (errno != EINTR && errno != EAGAIN))
		r->stdin_open = 0;
}

// kule_write_keys passes on what is held of the person's keys, as far as the
// pty's input takes it.
void kule_write_keys(struct kule_relay *r) {
	if (!r->in_len || !__atomic_load_n(&r->master_open, __ATOMIC_ACQUIRE))
		return;
	ssize_t w = write(r->master, r->in + r->in_off, r->in_len - r->in_off);
	if (w > 0) {
		r->in_off += w;
		if (r->in_off == r->in_len)
			r->in_len = 0;
	} else if (w < 0 && errno != EAGAIN && errno != EINTR) {
		r->in_len = 0;
	}
}

// kule_relay_output is the output thread: it copies what the command writes to
// its pty to the person's terminal (or nowhere, when neither stdout nor
// stderr is one) until the pty's end (EIO: the last process in the
// sandbox has closed it). The master is non-blocking (the keys are written
// to it from the loop), so the thread waits in poll.
void *kule_relay_output(void *arg) {
	struct kule_relay *r = arg;
	char out[8192];
	for (;;) {
		struct pollfd pf = {r->master, POLLIN, 0};
		if (poll(&pf, 1, -1) < 0 && errno != EINTR)
			break;
		ssize_t n = read(r->master, out, sizeof out);
		if (n > 0) {
			if (r->out >= 0)
				kule_write_all(r->out, out, n);
		} else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
			break;
		}
	}
	__atomic_store_n(&r->master_open, 0, __ATOMIC_RELEASE);
	return NULL;
}
