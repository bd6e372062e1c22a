//go:build linux && cgo

// The command's Landlock domain.

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "pid1_linux.h"

// Landlock's access rights (linux/landlock.h; Debian's headers predate most).
enum {
	LL_EXECUTE = 1 << 0, LL_WRITE_FILE = 1 << 1, LL_READ_FILE = 1 << 2, LL_READ_DIR = 1 << 3,
	LL_REMOVE_DIR = 1 << 4, LL_REMOVE_FILE = 1 << 5, LL_MAKE_CHAR = 1 << 6, LL_MAKE_DIR = 1 << 7,
	LL_MAKE_REG = 1 << 8, LL_MAKE_SOCK = 1 << 9, LL_MAKE_FIFO = 1 << 10, LL_MAKE_BLOCK = 1 << 11,
	LL_MAKE_SYM = 1 << 12, LL_REFER = 1 << 13, LL_TRUNCATE = 1 << 14, LL_IOCTL_DEV = 1 << 15,
	LL_NET_CONNECT_TCP = 1 << 1,
	LL_SCOPE_ABSTRACT_UNIX = 1 << 0, LL_SCOPE_SIGNAL = 1 << 1,
	LL_RULE_PATH_BENEATH = 1, LL_RULE_NET_PORT = 2,
};

static const uint64_t ll_read = LL_EXECUTE | LL_READ_FILE | LL_READ_DIR;
static const uint64_t ll_write = LL_WRITE_FILE | LL_REMOVE_DIR | LL_REMOVE_FILE | LL_MAKE_CHAR | LL_MAKE_DIR |
	LL_MAKE_REG | LL_MAKE_SOCK | LL_MAKE_FIFO | LL_MAKE_BLOCK | LL_MAKE_SYM | LL_TRUNCATE;
static const uint64_t ll_file = LL_EXECUTE | LL_WRITE_FILE | LL_TRUNCATE | LL_READ_FILE;

struct ll_ruleset_attr {
	uint64_t fs, net, scoped;
};

struct __attribute__((packed)) ll_path_beneath {
	uint64_t allowed;
	int32_t parent_fd;
};

struct ll_net_port {
	uint64_t allowed, port;
};

static int landlock_abi(void) {
	long v = syscall(SYS_landlock_create_ruleset, NULL, 0, 1 /* LANDLOCK_CREATE_RULESET_VERSION */);
	return v < 0 ? 0 : (int)v;
}

// add_path allows access (as far as the ruleset handles it) beneath path.
static void add_path(int ruleset, const char *path, uint64_t access, uint64_t handled, int ignore_missing) {
	access &= handled;
	if (access == 0)
		return;
	int fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0) {
		if (ignore_missing && errno == ENOENT)
			return;
		kule_die("landlock: build the ruleset: populating ruleset for \"%s\": open: %s", path, kule_why(errno));
	}
	struct ll_path_beneath a = {access, fd};
	if (syscall(SYS_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &a, 0) != 0)
		kule_die("landlock: build the ruleset: populating ruleset for \"%s\": landlock_add_rule: %s", path, kule_why(errno));
	kule_close(fd, "landlock: a rule's path");
}

// restrict_landlock puts the calling process in the command's domain: read
// and execute everywhere the mounts show, write only to the copy, the task's
// home, caches and /tmp, --allow-write and the named devices; TCP connect
// only to the proxy port; no signals or abstract sockets out of the domain.
// It asks for what go-landlock's V7 handles and keeps what the kernel has,
// as go-landlock's best effort does (a kernel without the right to rename
// across folders, ABI 1, offers none that is of use).
void kule_restrict_landlock(const struct kule_plan *p) {
	int abi = landlock_abi();
	uint64_t fs_supported = abi >= 5 ? (1 << 16) - 1 : abi >= 3 ? (1 << 15) - 1 : abi == 2 ? (1 << 14) - 1 : 0;
	struct ll_ruleset_attr attr = {
		.fs = ((1 << 16) - 1) & fs_supported,
		.net = p->netns && abi >= 4 ? LL_NET_CONNECT_TCP : 0,
		.scoped = abi >= 6 ? LL_SCOPE_ABSTRACT_UNIX | LL_SCOPE_SIGNAL : 0,
	};
	if (abi < 2) // kule asks for Landlock only from ABI 2 (Availability.Landlock)
		kule_die("landlock: the kernel offers ABI %d, and 2 is needed; nothing ran", abi);
	int rs = syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
	if (rs < 0)
		kule_die("landlock: build the ruleset: landlock_create_ruleset: %s", kule_why(errno));
	add_path(rs, "/", ll_read, attr.fs, 0);
	const char *rw[] = {p->copy, p->home, p->cache, "/tmp"};
	for (size_t i = 0; i < 4; i++)
		add_path(rs, rw[i], ll_read | ll_write | LL_REFER, attr.fs, 0);
	for (size_t i = 0; i < p->writable.n; i++)
		add_path(rs, p->writable.v[i], ll_read | ll_write | LL_REFER, attr.fs, 0);
	add_path(rs, "/dev/shm", ll_read | ll_write, attr.fs, 0);
	for (size_t i = 0; i < p->devices.n; i++) {
		char *d = kule_join("/dev", p->devices.v[i]);
		add_path(rs, d, ((ll_read | ll_write) & ll_file) | LL_IOCTL_DEV, attr.fs, 1);
		free(d);
	}
	add_path(rs, "/dev/pts", ((ll_read | ll_write) & ll_file) | LL_IOCTL_DEV, attr.fs, 1);
	add_path(rs, "/dev/ptmx", ((ll_read | ll_write) & ll_file) | LL_IOCTL_DEV, attr.fs, 1);
	if (p->proxy_port > 0 && attr.net) {
		struct ll_net_port n = {LL_NET_CONNECT_TCP, (uint64_t)p->proxy_port};
		if (syscall(SYS_landlock_add_rule, rs, LL_RULE_NET_PORT, &n, 0) != 0)
			kule_die("landlock: build the ruleset: the proxy's port: %s", kule_why(errno));
	}
	if (syscall(SYS_landlock_restrict_self, rs, 0) != 0)
		kule_die("landlock: restrict: %s", kule_why(errno));
	kule_close(rs, "landlock: the ruleset");
}
