//go:build linux && cgo

// The sandbox's helper in C: the one header of its files, each of one
// concern, as bubblewrap's sources are split:
//
//   pid1_linux.c           the stages (init: PID 1 that reaps, forwards and
//                          relays; exec: no namespaces) and the constructor
//   pid1_plan_linux.c      the plan's decoder (plancodec.go's form)
//   pid1_util_linux.c      failing (die), errno in words, paths, reads
//   pid1_mounts_linux.c    the sandbox's view of the file system
//   pid1_net_linux.c       loopback and the proxy bridge
//   pid1_privs_linux.c     capabilities and no_new_privs (narrow)
//   pid1_landlock_linux.c  the Landlock domain the plan hands over
//   pid1_seccomp_linux.c   the seccomp filter
//   pid1_pty_linux.c       the command's pty and the relay to the terminal
//   pid1_command_linux.c   finding, forking and executing the command
//
// Only the plan's decoder and its shape are reached from Go (the tests
// hold them against the Go ones); every other name here is the helper's
// own, prefixed kule_ so that nothing clashes in a static link.

#ifndef KULE_PID1_H
#define KULE_PID1_H

#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <sys/types.h>

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

// kule_rule is one Landlock rule as the plan hands it over (landlock.go's
// landlockRule): access beneath path or, with a port, TCP connect to it.
struct kule_rule {
	char *path;
	int64_t access;
	int64_t port;
	int optional;
};

// kule_ruleset is the command's Landlock domain (landlock.go's
// landlockRuleset); nothing handled: no domain.
struct kule_ruleset {
	int64_t handled_fs, handled_net, scoped;
	size_t nrules;
	struct kule_rule *rules;
};

// kule_plan mirrors the Go plan field by field (plan.go); kule_plan_shape is
// the Go planShape() this decoder reads, checked by a Go test.
struct kule_plan {
	char *shape;
	struct kule_strs args;
	char *dir;
	struct kule_strs env;
	char *copy, *tmp, *home, *cache;
	char *upper, *work; // "" or the copy's overlay layers
	int64_t fsize;
	struct kule_strs writable, readonly, keep, hide_dirs, hide_files;
	size_t nlinks;
	struct kule_link *links;
	struct kule_strs devices;
	int netns;
	int64_t proxy_port;
	struct kule_ruleset landlock;
	int64_t seccomp;
	int pty;
	void *arena; // every string and list above
};

extern const char kule_plan_shape[];

// kule_plan_decode reads what the Go encodePlan wrote. It returns NULL and
// fills p, or a message saying why the bytes are not a plan of this build.
const char *kule_plan_decode(const unsigned char *b, size_t n, struct kule_plan *p);
void kule_plan_free(struct kule_plan *p);

// What the decoder says of a plan another build of kule wrote.
extern const char kule_plan_not_ours[], kule_plan_other_build[];

// ---- Failing (pid1_util_linux.c) ----

// kule_status_fd is where kule_die tells why nothing ran: FD_STATUS, the
// command's error pipe in its fork, -1 once the command runs.
extern int kule_status_fd;

// kule_die tells kule why nothing ran, as Go words an error ("what: why"),
// and ends the helper with 125, the code a setup failure has.
__attribute__((noreturn, format(printf, 1, 2))) void kule_die(const char *fmt, ...);
// kule_why is errno as Go words it (lower case, like Go's errors).
const char *kule_why(int e);
// kule_write_all writes b whole, or as much as fd takes before it is gone.
void kule_write_all(int fd, const char *b, size_t n);
// kule_read_full reads n bytes of the plan from fd; it returns how many it
// got before EOF.
size_t kule_read_full(int fd, void *buf, size_t n);
// kule_close closes a descriptor the set-up is done with, or fails it.
void kule_close(int fd, const char *what);

// ---- Paths (pid1_util_linux.c) ----

int kule_within(const char *path, const char *dir);
int kule_depth(const char *p);
char *kule_join(const char *a, const char *b);
int kule_mkdir_all(const char *dir);
char *kule_parent(const char *path);

// ---- The stages' parts ----

// kule_setup_mounts builds the sandbox's view of the file system in PID 1's
// own mount namespace (pid1_mounts_linux.c).
void kule_setup_mounts(struct kule_plan *p);

// kule_loopback_up, kule_listen_loopback and kule_bridge are the network
// namespace's loopback and the proxy bridge (pid1_net_linux.c).
void kule_loopback_up(void);
int kule_listen_loopback(int port);
int kule_bridge(int ln);

// kule_narrow drops the calling process's privileges for good and puts it
// in the plan's Landlock domain, then under the seccomp filter
// (pid1_privs_linux.c).
void kule_narrow(const struct kule_plan *p);

// kule_landlock_ruleset makes the plan's Landlock ruleset, not yet in
// force; kule_restrict_landlock puts the calling process in it
// (pid1_landlock_linux.c). The rules are the plan's alone.
int kule_landlock_ruleset(const struct kule_plan *p);
void kule_restrict_landlock(const struct kule_plan *p);

// kule_seccomp_filter puts the calling process (no_new_privs already set)
// under the filter, which refuses with err; it returns what failed, or NULL
// (pid1_seccomp_linux.c).
const char *kule_seccomp_filter(int64_t err);

// The command's own pty (pid1_pty_linux.c), made in the sandbox's private
// devpts when the command is run from a terminal: it stands in for each of
// the command's stdio that was the person's terminal, and PID 1 copies the
// person's keys in and the pty's output out. The person's terminal itself never reaches
// the command, so neither TIOCSTI nor anything else it does to its terminal
// touches the person's.
struct kule_terminal {
	int master, slave;
	int out; // the person's terminal among stdout and stderr; -1: none
	int on_slave[3];
};

int kule_is_terminal(int fd);
void kule_new_terminal(struct kule_terminal *t);
int kule_resize(const struct kule_terminal *t);

// The relay: the person's keys into the pty (held back while the pty's
// input is full), the pty's output to the person's terminal. The output has
// a thread of its own: a terminal that takes no output (stopped, or its
// window frozen) holds only that thread, while PID 1's loop still forwards
// signals, reaps, bridges and passes on keys — a Ctrl-C typed at a command
// flooding a stalled terminal reaches it.
struct kule_relay {
	int master, out;
	char in[4096];
	size_t in_len, in_off;
	int stdin_open;
	int master_open; // cleared by the output thread at the pty's end (atomic)
	int empty_poll;  // the last poll found stdin readable with nothing in it
	pthread_t output;
	int output_started;
};

void *kule_relay_output(void *relay);
void kule_read_keys(struct kule_relay *r, short revents);
void kule_write_keys(struct kule_relay *r);

// The command (pid1_command_linux.c).
char *kule_look_path(const struct kule_plan *p);
__attribute__((noreturn)) void kule_exec_command(const struct kule_plan *p, const char *path);
pid_t kule_start_command(const struct kule_plan *p, const struct kule_terminal *term);

#endif
