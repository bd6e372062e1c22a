//go:build linux && cgo

// Failing (the reason goes to kule on FD_STATUS), errno in words, paths
// and reads: what every other file of the helper uses.

#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "pid1_linux.h"

// ---- Failing: the reason goes to kule on FD_STATUS ----

int kule_status_fd = FD_STATUS;

// kule_write_all writes b whole, or as much as fd takes before it is gone.
void kule_write_all(int fd, const char *b, size_t n) {
	while (n > 0) {
		ssize_t w = write(fd, b, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) { // a terminal left non-blocking by another program
			struct pollfd pf = {fd, POLLOUT, 0};
			if (poll(&pf, 1, -1) < 0 && errno != EINTR)
				return; // cannot wait for room: the output has nowhere to go
			continue;
		}
		if (w <= 0)
			return; // the person's terminal is gone: the output has nowhere to go
		b += w;
		n -= w;
	}
}

// kule_die tells kule why nothing ran, as Go words an error ("what: why"), and
// ends the helper with 125, the code a setup failure has.
__attribute__((noreturn, format(printf, 1, 2))) void kule_die(const char *fmt, ...) {
	char buf[4096];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (n > 0)
		kule_write_all(kule_status_fd, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
	_exit(125);
}

// kule_why is errno as Go words it (lower case, like Go's errors).
const char *kule_why(int e) {
	static char buf[128];
	const char *s = strerror(e);
	snprintf(buf, sizeof buf, "%s", s);
	if (buf[0] >= 'A' && buf[0] <= 'Z' && !(buf[1] >= 'A' && buf[1] <= 'Z'))
		buf[0] += 'a' - 'A';
	return buf;
}

// kule_close closes a descriptor the helper is done with. Linux releases
// the descriptor whatever close then reports; EINTR says only that, but any
// other error (EBADF: one closed twice, which could have closed another's
// by now) ends the helper, which then runs nothing, or ends what runs.
void kule_close(int fd, const char *what) {
	if (close(fd) != 0 && errno != EINTR)
		kule_die("%s: close: %s", what, kule_why(errno));
}

// ---- Paths ----

int kule_within(const char *path, const char *dir) {
	if (strcmp(dir, "/") == 0)
		return 1;
	size_t n = strlen(dir);
	return strncmp(path, dir, n) == 0 && (path[n] == 0 || path[n] == '/');
}

int kule_depth(const char *p) {
	int n = 0;
	for (; *p; p++)
		n += *p == '/';
	return n;
}

char *kule_join(const char *a, const char *b) {
	size_t la = strlen(a), lb = strlen(b);
	char *s = malloc(la + lb + 2);
	if (!s)
		kule_die("out of memory");
	memcpy(s, a, la);
	s[la] = '/';
	memcpy(s + la + 1, b, lb + 1);
	return s;
}

// mkdir_all makes dir and its parents, as os.MkdirAll does: what exists is
// looked at first (on a read-only mount, mkdir of an existing folder may
// answer EROFS).
int kule_mkdir_all(const char *dir) {
	struct stat st;
	if (dir[0] == 0)
		return ENOENT;
	if (stat(dir, &st) == 0)
		return S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
	char *p = strdup(dir);
	if (!p)
		return ENOMEM;
	int e = 0;
	for (char *s = p + 1; !e; s++) {
		if (*s != '/' && *s != 0)
			continue;
		char c = *s;
		*s = 0;
		if (stat(p, &st) != 0) {
			if (mkdir(p, 0755) != 0 && errno != EEXIST)
				e = errno;
		} else if (!S_ISDIR(st.st_mode)) {
			e = ENOTDIR;
		}
		*s = c;
		if (c == 0)
			break;
	}
	free(p);
	return e;
}

char *kule_parent(const char *path) {
	char *d = strdup(path);
	if (!d)
		kule_die("out of memory");
	char *slash = strrchr(d, '/');
	if (!slash) {
		free(d);
		d = strdup(".");
		if (!d)
			kule_die("out of memory");
	} else if (slash == d) {
		d[1] = 0;
	} else {
		*slash = 0;
	}
	return d;
}

// kule_read_full reads n bytes from fd; it returns how many it got before EOF.
size_t kule_read_full(int fd, void *buf, size_t n) {
	size_t got = 0;
	while (got < n) {
		ssize_t r = read(fd, (char *)buf + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			kule_die("read the plan: %s", kule_why(errno));
		if (r == 0)
			break;
		got += r;
	}
	return got;
}
