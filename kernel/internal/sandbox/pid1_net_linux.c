//go:build linux && cgo

// The network namespace: its loopback, and the proxy bridge that hands
// each connection to kule.

#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "pid1_linux.h"

// ---- Network ----

void kule_loopback_up(void) {
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		kule_die("network namespace: bring up loopback: %s", kule_why(errno));
	struct ifreq ifr;
	memset(&ifr, 0, sizeof ifr);
	strcpy(ifr.ifr_name, "lo");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) != 0)
		kule_die("network namespace: bring up loopback: %s", kule_why(errno));
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(fd, SIOCSIFFLAGS, &ifr) != 0)
		kule_die("network namespace: bring up loopback: %s", kule_why(errno));
	kule_close(fd, "network namespace: bring up loopback");
}

// listen_loopback listens on 127.0.0.1:port inside the namespace; PID 1 hands
// each connection to kule (FD_CTRL), which joins it to the proxy. Only
// descriptors cross: no address outside the namespace is reachable from in
// here.
int kule_listen_loopback(int port) {
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		kule_die("proxy bridge: listen inside the sandbox: %s", kule_why(errno));
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, SOMAXCONN) != 0)
		kule_die("proxy bridge: listen inside the sandbox: %s", kule_why(errno));
	return fd;
}

// bridge passes the connections waiting on ln to kule, a few at a time (poll
// comes back for the rest, so that a flood of connections cannot keep PID 1
// from its signals and children); it returns -1 once kule is gone (the
// listener is closed: a command then sees its connections refused).
int kule_bridge(int ln) {
	for (int k = 0; k < 32; k++) {
		int c = accept4(ln, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EAGAIN)
				return ln;
			kule_close(ln, "proxy bridge: the listener");
			return -1;
		}
		char byte = 0;
		struct iovec iov = {&byte, 1};
		char cbuf[CMSG_SPACE(sizeof(int))];
		memset(cbuf, 0, sizeof cbuf);
		struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
		struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &c, sizeof c);
		ssize_t r;
		do
			r = sendmsg(FD_CTRL, &msg, MSG_NOSIGNAL);
		while (r < 0 && errno == EINTR);
		kule_close(c, "proxy bridge: a connection");
		if (r < 0 && errno != ETOOMANYREFS && errno != ENOBUFS && errno != ENOMEM) {
			kule_close(ln, "proxy bridge: the listener");
			return -1;
		}
		// A descriptor the kernel would not pass now (too many in flight
		// for this uid): that one connection is closed, the bridge stays.
	}
	return ln;
}
