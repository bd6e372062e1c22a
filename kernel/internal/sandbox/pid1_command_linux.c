//go:build linux && cgo

// The command: found on its PATH, forked narrowed, and executed.

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "pid1_linux.h"

// ---- The command ----

static const char *lookup_env(const struct kule_plan *p, const char *key) {
	size_t k = strlen(key);
	for (size_t i = p->env.n; i-- > 0;)
		if (strncmp(p->env.v[i], key, k) == 0 && p->env.v[i][k] == '=')
			return p->env.v[i] + k + 1;
	return "";
}

// look_path finds the command as Go's lookPath did: a name with a slash as
// it is, else the first regular executable file of that name on the
// command's PATH (an empty entry is the working directory).
char *kule_look_path(const struct kule_plan *p) {
	const char *name = p->args.v[0];
	if (strchr(name, '/'))
		return (char *)name;
	const char *path = lookup_env(p, "PATH");
	if (!*path)
		kule_die("command not found: %s (not found in the command's PATH)", name);
	for (const char *s = path;;) {
		const char *e = strchr(s, ':');
		size_t n = e ? (size_t)(e - s) : strlen(s);
		char *d = n ? strndup(s, n) : strdup(".");
		if (!d)
			kule_die("out of memory");
		char *c = kule_join(d, name);
		free(d);
		struct stat st;
		if (stat(c, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111))
			return c;
		free(c);
		if (!e)
			break;
		s = e + 1;
	}
	kule_die("command not found: %s (not found in the command's PATH)", name);
}

// exec_command becomes the command, with every signal back at its default,
// ignored ones too (kule under nohup), and none blocked: a command expects
// them so. By system call: glibc's sigaction refuses the two real-time
// signals it keeps for itself, which a Go parent may have left ignored.
__attribute__((noreturn)) void kule_exec_command(const struct kule_plan *p, const char *path) {
	struct {
		void (*handler)(int);
		unsigned long flags;
		void (*restorer)(void);
		uint64_t mask;
	} dfl = {SIG_DFL, 0, NULL, 0};
	for (int s = 1; s <= 64; s++)
		if (s != SIGKILL && s != SIGSTOP && syscall(SYS_rt_sigaction, s, &dfl, NULL, sizeof dfl.mask) != 0)
			kule_die("run %s: reset signal %d: %s", p->args.v[0], s, kule_why(errno));
	sigset_t none;
	if (sigemptyset(&none) != 0 || sigprocmask(SIG_SETMASK, &none, NULL) != 0)
		kule_die("run %s: unblock signals: %s", p->args.v[0], kule_why(errno));
	execve(path, p->args.v, p->env.n ? p->env.v : (char *[]){NULL});
	// The command's own failures start with the words cmderr.go reads: they
	// are the command's error (exit 127 or 126, as a shell says), never the
	// sandbox's.
	if (errno == ENOENT || errno == ENOTDIR)
		kule_die("command not found: %s (%s)", p->args.v[0], kule_why(errno));
	if (errno == ENOEXEC)
		kule_die("command cannot run: %s (%s)", p->args.v[0], kule_why(errno));
	kule_die("run %s: %s", p->args.v[0], kule_why(errno));
}

// start_command forks the command: a session of its own (the person's
// terminal is never its controlling terminal, so TIOCSTI cannot reach it;
// its own pty is), no capabilities, no_new_privs, the file size limit and
// the Landlock domain. PID 1 itself keeps what it needs to reap and forward,
// outside the domain. A failure before exec comes back on a pipe and ends
// the run as a setup failure.
pid_t kule_start_command(const struct kule_plan *p, const struct kule_terminal *term) {
	if (chdir(p->dir) != 0) // PATH entries like "." resolve from here
		kule_die("enter the working directory: %s", kule_why(errno));
	char *path = kule_look_path(p);
	int errp[2];
	if (pipe2(errp, O_CLOEXEC) != 0)
		kule_die("run %s: pipe: %s", p->args.v[0], kule_why(errno));
	pid_t pid = fork();
	if (pid < 0)
		kule_die("run %s: fork: %s", p->args.v[0], kule_why(errno));
	if (pid == 0) {
		kule_status_fd = errp[1];
		kule_close(errp[0], "the command's error pipe");
		if (setsid() < 0)
			kule_die("run %s: setsid: %s", p->args.v[0], kule_why(errno));
		if (term) {
			for (int fd = 0; fd <= 2; fd++)
				if (term->on_slave[fd] && dup2(term->slave, fd) < 0)
					kule_die("run %s: dup2: %s", p->args.v[0], kule_why(errno));
			if (ioctl(0, TIOCSCTTY, 0) != 0)
				kule_die("run %s: the pty as its terminal: %s", p->args.v[0], kule_why(errno));
		}
		kule_narrow(p);
		kule_exec_command(p, path);
	}
	kule_close(errp[1], "the command's error pipe");
	char buf[4096];
	ssize_t n;
	do
		n = read(errp[0], buf, sizeof buf - 1);
	while (n < 0 && errno == EINTR);
	if (n > 0) {
		buf[n] = 0;
		kule_die("%s", buf);
	}
	if (n < 0)
		kule_die("run %s: read its error pipe: %s", p->args.v[0], kule_why(errno));
	kule_close(errp[0], "the command's error pipe");
	return pid;
}
