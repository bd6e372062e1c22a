//go:build linux && cgo

// The command's Landlock domain, made exactly as the plan hands it over:
// the rule set is decided on the host side (landlock.go), and the helper
// adds no rule of its own, drops none and widens none.

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "pid1_linux.h"

// Landlock's structures and rule types (linux/landlock.h; Debian's headers
// predate most), declared here so that libc's headers are all the helper
// needs (musl's come without the kernel's).
enum { LL_RULE_PATH_BENEATH = 1, LL_RULE_NET_PORT = 2, LL_CREATE_RULESET_VERSION = 1 };

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
	long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
	return v < 0 ? 0 : (int)v;
}

// add_rule adds one of the plan's rules to the ruleset: TCP connect to its
// port, or its access beneath its path (an optional path that is not there
// is passed over).
static void add_rule(int ruleset, const struct kule_rule *r) {
	if (r->port > 0) {
		struct ll_net_port n = {(uint64_t)r->access, (uint64_t)r->port};
		if (syscall(SYS_landlock_add_rule, ruleset, LL_RULE_NET_PORT, &n, 0) != 0)
			kule_die("landlock: build the ruleset: TCP port %lld: %s", (long long)r->port, kule_why(errno));
		return;
	}
	int fd = open(r->path, O_PATH | O_CLOEXEC);
	if (fd < 0) {
		if (r->optional && errno == ENOENT)
			return;
		kule_die("landlock: build the ruleset: populating ruleset for \"%s\": open: %s", r->path, kule_why(errno));
	}
	struct ll_path_beneath a = {(uint64_t)r->access, fd};
	if (syscall(SYS_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &a, 0) != 0)
		kule_die("landlock: build the ruleset: populating ruleset for \"%s\": landlock_add_rule: %s", r->path, kule_why(errno));
	kule_close(fd, "landlock: a rule's path");
}

// kule_landlock_ruleset makes the plan's ruleset, not yet in force, and
// returns its descriptor.
int kule_landlock_ruleset(const struct kule_plan *p) {
	const struct kule_ruleset *l = &p->landlock;
	int abi = landlock_abi();
	if (abi < 2) // kule hands a ruleset over only from ABI 2 (Availability.Landlock)
		kule_die("landlock: the kernel offers ABI %d, and 2 is needed; nothing ran", abi);
	struct ll_ruleset_attr attr = {(uint64_t)l->handled_fs, (uint64_t)l->handled_net, (uint64_t)l->scoped};
	int rs = syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
	if (rs < 0)
		kule_die("landlock: build the ruleset: landlock_create_ruleset: %s", kule_why(errno));
	for (size_t i = 0; i < l->nrules; i++)
		add_rule(rs, &l->rules[i]);
	return rs;
}

// kule_restrict_landlock puts the calling process in the plan's domain.
void kule_restrict_landlock(const struct kule_plan *p) {
	int rs = kule_landlock_ruleset(p);
	if (syscall(SYS_landlock_restrict_self, rs, 0) != 0)
		kule_die("landlock: restrict: %s", kule_why(errno));
	kule_close(rs, "landlock: the ruleset");
}
