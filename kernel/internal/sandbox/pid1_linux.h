//go:build linux && cgo

// The sandbox's helper in C (pid1_linux.c): the plan it reads, so that the
// Go tests can hold its decoder against the Go one.

#ifndef KULE_PID1_H
#define KULE_PID1_H

#include <stddef.h>
#include <stdint.h>

// The helper's descriptors after stdio, and the byte that lets the command
// start: run_linux.go's fdPlan… and planGo (a test holds them equal).
enum { FD_PLAN = 3, FD_STATUS = 4, FD_DONE = 5, FD_CTRL = 6, KULE_PLAN_GO = 1 };

struct kule_strs {
	size_t n;
	char **v;
};

struct kule_link {
	char *path, *target;
};

// kule_plan mirrors the Go plan field by field (plan.go); kule_plan_shape is
// the Go planShape() this decoder reads, checked by a Go test.
struct kule_plan {
	char *shape;
	struct kule_strs args;
	char *dir;
	struct kule_strs env;
	char *copy, *tmp, *home, *cache;
	int64_t fsize;
	struct kule_strs writable, readonly, keep, hide_dirs, hide_files;
	size_t nlinks;
	struct kule_link *links;
	struct kule_strs devices;
	int netns;
	int64_t proxy_port;
	int landlock;
	int64_t seccomp;
	int pty;
	void *arena; // every string and list above
};

extern const char kule_plan_shape[];

// kule_plan_decode reads what the Go encodePlan wrote. It returns NULL and
// fills p, or a message saying why the bytes are not a plan of this build.
const char *kule_plan_decode(const unsigned char *b, size_t n, struct kule_plan *p);
void kule_plan_free(struct kule_plan *p);

#endif
