//go:build linux && cgo

// The command's privileges: capabilities dropped for good, the file size
// limit and no_new_privs, then Landlock and seccomp (narrow).

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "pid1_linux.h"

// ---- Privileges and Landlock ----

// capget/capset's structures as in linux/capability.h (version 3: two
// 32-bit halves), declared here so that libc's headers are all the helper
// needs (musl's come without the kernel's).
struct cap_header {
	uint32_t version;
	int pid;
};
struct cap_data {
	uint32_t effective, permitted, inheritable;
};
enum { CAP_VERSION_3 = 0x20080522 };

// drop_caps leaves the process with no capabilities for good: securebits make
// uid 0 gain none at exec, the bounding and ambient sets are emptied.
static const char *drop_caps(void) {
	struct cap_header hdr = {CAP_VERSION_3, 0};
	struct cap_data data[2];
	memset(data, 0, sizeof data);
	if (syscall(SYS_capget, &hdr, data) != 0)
		return "capget";
	if (!data[0].effective && !data[1].effective && !data[0].permitted && !data[1].permitted)
		return NULL; // nothing to drop (weaker isolation, unprivileged)
	// NOROOT, NO_SETUID_FIXUP, KEEP_CAPS_LOCKED, NO_CAP_AMBIENT_RAISE (+ locks).
	const unsigned long bits = 1 << 0 | 1 << 1 | 1 << 2 | 1 << 3 | 1 << 5 | 1 << 6 | 1 << 7;
	if (prctl(PR_SET_SECUREBITS, bits, 0, 0, 0) != 0)
		return "securebits";
	int last = 63;
	int fd = open("/proc/sys/kernel/cap_last_cap", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		char buf[16] = {0};
		if (read(fd, buf, sizeof buf - 1) > 0) {
			char *end;
			long v = strtol(buf, &end, 10);
			if (end != buf && (*end == '\n' || *end == 0) && v >= 0 && v < 64)
				last = (int)v;
		}
		kule_close(fd, "drop capabilities: cap_last_cap");
	}
	for (int c = 0; c <= last; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) != 0 && errno != EINVAL)
			return "bounding set";
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0)
		return "ambient set";
	memset(data, 0, sizeof data);
	if (syscall(SYS_capset, &hdr, data) != 0)
		return "capset";
	return NULL;
}

// narrow drops the calling process's privileges for good and puts it in the
// command's Landlock domain, then under the seccomp filter.
void kule_narrow(const struct kule_plan *p) {
	if (p->fsize > 0) {
		struct rlimit r = {(rlim_t)p->fsize, (rlim_t)p->fsize};
		if (setrlimit(RLIMIT_FSIZE, &r) != 0)
			kule_die("limit file size: %s", kule_why(errno));
	}
	const char *what = drop_caps();
	if (what)
		kule_die("drop capabilities: %s: %s", what, kule_why(errno));
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		kule_die("set no_new_privs: %s", kule_why(errno));
	if (p->landlock.handled_fs)
		kule_restrict_landlock(p);
	if (p->seccomp) { // last: what the helper does after it is exec alone
		const char *what = kule_seccomp_filter(p->seccomp);
		if (what)
			kule_die("seccomp: %s: %s", what, kule_why(errno));
	}
}
