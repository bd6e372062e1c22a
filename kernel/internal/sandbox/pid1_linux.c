//go:build linux && cgo

// The sandbox's helper: PID 1 of each sandbox (stage "init") and, where there
// are no user namespaces, the narrowing exec (stage "exec"). It is C, run from
// a constructor before the Go runtime starts, because the runtime's own start
// and end (about a millisecond: threads, heap, signals) were the largest part
// of the sandbox's cost that bubblewrap does not pay; runc's nsexec runs the
// same way. kule starts it as `kule-sandbox __sandbox <stage>` with the plan
// on fd 3 (see read_plan); any other arguments leave the binary to its Go
// main.
//
// What it does (see doc.go): the mounts, then the command, forked with every
// privilege dropped and inside the Landlock domain, then signals forwarded,
// the command's pty relayed, orphans reaped, and everything left in the
// namespace ended before the exit code is told.

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "pid1_linux.h"

static int exit_code(int ws) {
	return WIFSIGNALED(ws) ? 128 + WTERMSIG(ws) : WEXITSTATUS(ws);
}

// on_signals forwards what signalfd holds to the command (a resize goes to
// its pty instead) and reaps every child that ended; it returns 0 once the
// command has, its code in *code.
static int on_signals(int sfd, pid_t cmd, const struct kule_terminal *term, int *code) {
	struct signalfd_siginfo si;
	while (read(sfd, &si, sizeof si) == sizeof si) {
		int s = (int)si.ssi_signo;
		if (s == SIGCHLD)
			continue; // reaped below
		// Neither can fail in a way PID 1 could act on: a pty that takes
		// no new size keeps its last, and kill answers ESRCH only for a
		// command that has ended, which is reaped below (the signal and
		// the child are always valid).
		if (s == SIGWINCH && term)
			(void)kule_resize(term); // the pty tells the command itself
		else
			(void)kill(cmd, s);
	}
	for (;;) {
		int ws;
		pid_t got = waitpid(-1, &ws, WNOHANG);
		if (got < 0 && errno == ECHILD)
			return 0; // the command is gone, its status with it
		if (got <= 0)
			return 1;
		if (got == cmd) {
			*code = exit_code(ws);
			return 0;
		}
	}
}

// The signals PID 1 forwards to the command.
static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT, SIGALRM};

// read_plan reads the plan from FD_PLAN: its length in 4 bytes, then the
// plan (plancodec.go's form). The byte that lets the command start comes
// later (wait_for_go).
static void read_plan(struct kule_plan *p) {
	unsigned char len[4] = {0};
	size_t got = kule_read_full(FD_PLAN, len, 4);
	if (got == 0)
		_exit(125); // kule refused the plan and said why itself
	uint32_t n = len[0] | len[1] << 8 | len[2] << 16 | (uint32_t)len[3] << 24;
	if (got != 4 || n > 64 << 20)
		kule_die("the plan is cut short or too long (%u bytes)", n);
	unsigned char *b = malloc(n ? n : 1);
	if (!b)
		kule_die("read the plan: out of memory");
	if (kule_read_full(FD_PLAN, b, n) != n)
		kule_die("the plan is cut short");
	const char *err = kule_plan_decode(b, n, p);
	if (err && strcmp(err, kule_plan_not_ours) != 0 && strcmp(err, kule_plan_other_build) != 0)
		kule_die("the plan kule sent is damaged (%s); nothing ran", err);
	if (err) {
		char exe[4096];
		ssize_t l = readlink("/proc/self/exe", exe, sizeof exe - 1);
		exe[l > 0 ? l : 0] = 0;
		kule_die("the sandbox helper %s is from another build of kule than the kule that started it (%s); install both from one build", exe, err);
	}
	free(b);
	if (p->args.n == 0)
		kule_die("the plan names no command");
}

// wait_for_go waits for kule's go (its proxy is ready); without it the run
// ends here, before the command, and kule says why.
static void wait_for_go(void) {
	unsigned char go = 0;
	if (kule_read_full(FD_PLAN, &go, 1) != 1 || go != KULE_PLAN_GO)
		_exit(125);
	kule_close(FD_PLAN, "the plan's pipe");
}

// hold_signals holds the forwarded signals and SIGCHLD in mask from PID
// 1's first instruction, so that none sent before the command exists is
// lost or takes PID 1's default action (they are read from a signalfd once
// it runs); it makes SIGCHLD's action the default, every inherited
// descriptor close-on-exec and PID 1 undumpable.
static void hold_signals(sigset_t *mask) {
	int bad = sigemptyset(mask) != 0 || sigaddset(mask, SIGCHLD) != 0;
	for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++)
		bad |= sigaddset(mask, forwarded[i]) != 0;
	if (bad || sigprocmask(SIG_BLOCK, mask, NULL) != 0)
		kule_die("hold signals: %s", kule_why(errno));
	// Children must be waited for, whatever kule's parent left SIGCHLD as
	// (ignored, the kernel would reap them unseen and send no SIGCHLD).
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	if (sigaction(SIGCHLD, &dfl, NULL) != 0)
		kule_die("wait for children: SIGCHLD: %s", kule_why(errno));
	// Nothing the kule process held open reaches the command: every
	// descriptor past stdio is close-on-exec from here on.
	if (syscall(SYS_close_range, 3, ~0U, 4 /* CLOSE_RANGE_CLOEXEC */) != 0)
		kule_die("close inherited descriptors: %s", kule_why(errno));
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
		kule_die("make PID 1 undumpable: %s", kule_why(errno));
}

// start_relay starts the output thread of the command's pty. It is made
// before the command, so that a relay that cannot be made is a setup
// failure and nothing runs. It holds no lock a fork could copy held (it
// only polls, reads and writes), and it has every forwarded signal held,
// as PID 1 does.
static void start_relay(struct kule_relay *r) {
	int fl = fcntl(r->master, F_GETFL);
	if (fl < 0 || fcntl(r->master, F_SETFL, fl | O_NONBLOCK) != 0)
		kule_die("the command's pty: make it non-blocking: %s", kule_why(errno));
	int e = pthread_create(&r->output, NULL, kule_relay_output, r);
	if (e != 0)
		kule_die("relay the command's terminal: %s", kule_why(e));
	r->output_started = 1;
}

// pid1_loop forwards signals, bridges connections and passes on keys until
// the command has ended, and returns its exit code (125 when PID 1 could
// no longer wait for it).
static int pid1_loop(int sfd, int ln, pid_t cmd, struct kule_relay *r, const struct kule_terminal *term) {
	int code = 125, running = 1;
	while (running) {
		struct pollfd fds[4];
		int nfds = 0, i_sig = nfds++, i_ln = -1, i_in = -1;
		fds[i_sig] = (struct pollfd){sfd, POLLIN, 0};
		if (ln >= 0)
			fds[i_ln = nfds++] = (struct pollfd){ln, POLLIN, 0};
		if (r->stdin_open && r->in_len == 0)
			fds[i_in = nfds++] = (struct pollfd){0, POLLIN, 0};
		if (r->in_len && __atomic_load_n(&r->master_open, __ATOMIC_ACQUIRE))
			fds[nfds++] = (struct pollfd){r->master, POLLOUT, 0}; // room for the held keys
		if (poll(fds, nfds, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (fds[i_sig].revents)
			running = on_signals(sfd, cmd, term, &code);
		if (i_ln >= 0 && fds[i_ln].revents)
			ln = kule_bridge(ln);
		if (i_in >= 0 && fds[i_in].revents)
			kule_read_keys(r, fds[i_in].revents);
		kule_write_keys(r);
	}
	return code;
}

// end_all ends whatever the command left running (it may hold the pty
// open; and kule goes on once told the code, so that it need not wait for
// the kernel to take the namespaces down), then tells kule the code: every
// process of the namespace descends from PID 1, so none is left at ECHILD.
__attribute__((noreturn)) static void end_all(int code, struct kule_relay *r) {
	// kill answers ESRCH when nothing is left, the one error it can give
	// PID 1 here: then there is nothing to end.
	(void)kill(-1, SIGKILL);
	while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
		;
	// The last of the output, up to the pty's end (EIO). The thread is
	// joinable and joined once, so pthread_join cannot fail; were it to,
	// the code is told all the same (the output is all that is lost).
	if (r->output_started)
		(void)pthread_join(r->output, NULL);
	unsigned char b[4] = {code & 0xff, (code >> 8) & 0xff, (code >> 16) & 0xff, (code >> 24) & 0xff};
	kule_write_all(FD_DONE, (char *)b, 4);
	_exit(code);
}

// stage_init is PID 1 of the sandbox's namespaces.
__attribute__((noreturn)) static void stage_init(void) {
	sigset_t mask;
	hold_signals(&mask);

	struct kule_plan p;
	read_plan(&p);
	kule_setup_mounts(&p);
	if (sethostname("kule", 4) != 0)
		kule_die("name the sandbox's host: %s", kule_why(errno));
	if (p.netns)
		kule_loopback_up();
	int ln = -1;
	if (p.proxy_port > 0)
		ln = kule_listen_loopback((int)p.proxy_port);
	struct kule_terminal term = {-1, -1, -1, {0}};
	if (p.pty)
		kule_new_terminal(&term);
	int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0)
		kule_die("catch signals: %s", kule_why(errno));

	wait_for_go();
	// PID 1 writes the command's output to the person's terminal from
	// whichever process group kule is in; the command gets every signal
	// back at its default (start_command).
	struct sigaction ign = {.sa_handler = SIG_IGN};
	if (sigaction(SIGTTOU, &ign, NULL) != 0 || sigaction(SIGTTIN, &ign, NULL) != 0)
		kule_die("write to the terminal from the background: %s", kule_why(errno));
	// The relay lives in this frame, which never returns: the output
	// thread reads it to the end.
	struct kule_relay r = {.master = term.master, .out = term.out, .stdin_open = p.pty, .master_open = p.pty};
	if (p.pty)
		start_relay(&r);
	pid_t cmd = kule_start_command(&p, p.pty ? &term : NULL);
	kule_close(FD_STATUS, "the status pipe"); // EOF without text: the command runs
	kule_status_fd = -1;
	if (p.pty)
		kule_close(term.slave, "the command's pty"); // the output ends (EIO) when the last process in the sandbox does
	end_all(pid1_loop(sfd, ln, cmd, &r, p.pty ? &term : NULL), &r);
}

// stage_exec is the helper without namespaces (no user namespaces here, and
// weaker isolation accepted): it drops every privilege, applies Landlock and
// becomes the command.
__attribute__((noreturn)) static void stage_exec(void) {
	struct kule_plan p;
	read_plan(&p);
	if (chdir(p.dir) != 0)
		kule_die("enter the working directory: %s", kule_why(errno));
	char *path = kule_look_path(&p);
	wait_for_go();
	kule_narrow(&p);
	if (syscall(SYS_close_range, 3, ~0U, 4 /* CLOSE_RANGE_CLOEXEC */) != 0)
		kule_die("close inherited descriptors: %s", kule_why(errno));
	kule_exec_command(&p, path);
}

// helper_stage is the stage when the arguments are exactly the helper's
// (`kule-sandbox __sandbox <stage>`), else NULL.
static const char *helper_stage(int argc, char **argv) {
	if (argc != 3 || strcmp(argv[0], "kule-sandbox") != 0 || strcmp(argv[1], "__sandbox") != 0)
		return NULL;
	return argv[2];
}

#ifndef __GLIBC__
// Only glibc hands a constructor the program's arguments; elsewhere they
// are read from /proc.
static const char *stage_from_proc(void) {
	static char buf[64];
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	// Linux releases the descriptor whatever close reports, and what was
	// read stands; a failure here must not end a kule that is not the
	// helper, so it is not kule_close.
	(void)close(fd);
	if (n <= 0)
		return NULL;
	buf[n] = 0;
	char *argv[4];
	int argc = 0;
	for (char *s = buf; s < buf + n && argc < 4; s += strlen(s) + 1)
		argv[argc++] = s;
	return helper_stage(argc, argv);
}
#endif

// The constructor runs before the Go runtime, in every binary that links
// this package; it acts only on the exact arguments kule starts its helper
// with.
__attribute__((constructor)) static void kule_sandbox_helper(int argc, char **argv, char **envp) {
	(void)envp;
#ifdef __GLIBC__
	const char *stage = helper_stage(argc, argv);
#else
	(void)argc, (void)argv;
	const char *stage = stage_from_proc();
#endif
	if (!stage)
		return;
	if (strcmp(stage, "init") == 0)
		stage_init();
	if (strcmp(stage, "exec") == 0)
		stage_exec();
}
