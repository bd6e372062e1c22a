//go:build linux && cgo

// The seccomp filter the command runs under.

#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "pid1_linux.h"

// ---- Seccomp ----

// The seccomp filter refuses, with EPERM (so that a tool that tries one
// degrades as it does on a kernel without the call, rather than dying),
// the system calls a command has no business making and that widen what
// it reaches beyond the mounts and Landlock:
//   - io_uring (its operations pass neither seccomp nor, on older kernels,
//     Landlock);
//   - ptrace, process_vm_readv/writev, process_madvise, pidfd_getfd and
//     kcmp: reading or steering another process. Refused whole, not only
//     for processes outside the command: the PID namespace and Landlock
//     already keep those out, and a debugger inside that could trace its
//     own children could not be told from one reading the agent's memory
//     (strace and gdb do not work in a sandboxed command);
//   - keyctl, add_key, request_key: the kernel's keyrings;
//   - new user namespaces inside (clone, unshare with CLONE_NEWUSER; clone3,
//     whose flags seccomp cannot read, answers ENOSYS, and libc falls back
//     to clone), setns;
//   - ioctl TIOCSTI and TIOCLINUX (typing into, or reading, a terminal);
//   - the usual list: modules, kexec, bpf, perf_event_open, userfaultfd,
//     mounts old and new, pivot_root, swap, reboot, file handles, acct,
//     quotactl, the clock, syslog, iopl/ioperm.
// It checks the architecture first: a system call of another ABI (i386 on
// x86_64 through int 0x80, x32) is refused whole, since its numbers differ.

// The kernel's seccomp and classic BPF structures and constants
// (linux/seccomp.h, linux/filter.h, linux/audit.h), declared here so that
// libc's headers are all the helper needs (musl's come without the
// kernel's).
struct k_sock_filter {
	uint16_t code;
	uint8_t jt, jf;
	uint32_t k;
};
struct k_sock_fprog {
	unsigned short len;
	struct k_sock_filter *filter;
};
struct k_seccomp_data {
	int nr;
	uint32_t arch;
	uint64_t instruction_pointer;
	uint64_t args[6];
};
enum {
	K_BPF_LD_W_ABS = 0x00 | 0x00 | 0x20, // BPF_LD | BPF_W | BPF_ABS
	K_BPF_JEQ_K = 0x05 | 0x10 | 0x00,    // BPF_JMP | BPF_JEQ | BPF_K
	K_BPF_JSET_K = 0x05 | 0x40 | 0x00,   // BPF_JMP | BPF_JSET | BPF_K
	K_BPF_RET_K = 0x06 | 0x00,           // BPF_RET | BPF_K
};
#define K_SECCOMP_MODE_FILTER 2
#define K_SECCOMP_RET_ALLOW 0x7fff0000U
#define K_SECCOMP_RET_ERRNO 0x00050000U
#define K_SECCOMP_RET_DATA 0x0000ffffU

#if defined(__x86_64__)
#define KULE_AUDIT_ARCH 0xc000003eU // AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define KULE_AUDIT_ARCH 0xc00000b7U // AUDIT_ARCH_AARCH64
#endif

#ifndef __NR_io_uring_setup
#define __NR_io_uring_setup 425
#define __NR_io_uring_enter 426
#define __NR_io_uring_register 427
#endif
#ifndef __NR_open_tree
#define __NR_open_tree 428
#define __NR_move_mount 429
#define __NR_fsopen 430
#define __NR_fsconfig 431
#define __NR_fsmount 432
#define __NR_fspick 433
#endif
#ifndef __NR_pidfd_getfd
#define __NR_pidfd_getfd 438
#endif
#ifndef __NR_process_madvise
#define __NR_process_madvise 440
#endif
#ifndef __NR_mount_setattr
#define __NR_mount_setattr 442
#endif
#ifndef __NR_clone3
#define __NR_clone3 435
#endif

#define K_CLONE_NEWUSER 0x10000000
#define K_TIOCSTI 0x5412
#define K_TIOCLINUX 0x541C

// The system calls refused outright (those the architecture has).
static const int seccomp_refused[] = {
	__NR_io_uring_setup, __NR_io_uring_enter, __NR_io_uring_register,
	__NR_ptrace, __NR_process_vm_readv, __NR_process_vm_writev, __NR_process_madvise,
	__NR_pidfd_getfd, __NR_kcmp,
	__NR_keyctl, __NR_add_key, __NR_request_key,
	__NR_setns,
	__NR_init_module, __NR_finit_module, __NR_delete_module,
	__NR_kexec_load,
#ifdef __NR_kexec_file_load
	__NR_kexec_file_load,
#endif
	__NR_bpf, __NR_perf_event_open, __NR_userfaultfd,
	__NR_mount, __NR_umount2, __NR_pivot_root, __NR_chroot,
	__NR_open_tree, __NR_move_mount, __NR_fsopen, __NR_fsconfig, __NR_fsmount, __NR_fspick,
	__NR_mount_setattr,
	__NR_swapon, __NR_swapoff, __NR_reboot,
	__NR_open_by_handle_at, __NR_name_to_handle_at,
	__NR_acct, __NR_quotactl, __NR_settimeofday, __NR_clock_settime, __NR_clock_adjtime,
	__NR_adjtimex, __NR_syslog, __NR_vhangup, __NR_fanotify_init,
#ifdef __NR_lookup_dcookie
	__NR_lookup_dcookie,
#endif
#ifdef __NR_iopl
	__NR_iopl, __NR_ioperm,
#endif
#ifdef __NR_uselib
	__NR_uselib,
#endif
};

#define K_DENY deny
#define K_ARG_LO(i) (offsetof(struct k_seccomp_data, args) + 8 * (i)) // little endian: the low half first

// seccomp_filter puts the calling process (no_new_privs already set) under
// the filter, which refuses with err (the plan's Seccomp: EPERM); it
// returns what failed, or NULL.
const char *kule_seccomp_filter(int64_t err) {
#ifndef KULE_AUDIT_ARCH
	(void)err;
	return "this architecture has no filter (x86_64 and aarch64 have)";
#else
	if (err < 1 || err > 4095) {
		errno = EINVAL;
		return "the plan's errno";
	}
	const uint32_t deny = K_SECCOMP_RET_ERRNO | ((uint32_t)err & K_SECCOMP_RET_DATA);
	enum { N_REFUSED = sizeof seccomp_refused / sizeof seccomp_refused[0] };
	struct k_sock_filter f[32 + 2 * N_REFUSED];
	size_t n = 0;
#define EMIT(x) (f[n++] = (x))
#define STMT(code, k) ((struct k_sock_filter){(code), 0, 0, (k)})
#define JUMP(code, k, jt, jf) ((struct k_sock_filter){(code), (jt), (jf), (k)})
	EMIT(STMT(K_BPF_LD_W_ABS, offsetof(struct k_seccomp_data, arch)));
	EMIT(JUMP(K_BPF_JEQ_K, KULE_AUDIT_ARCH, 1, 0));
	EMIT(STMT(K_BPF_RET_K, K_DENY)); // another ABI
	EMIT(STMT(K_BPF_LD_W_ABS, offsetof(struct k_seccomp_data, nr)));
#if defined(__x86_64__)
	EMIT(JUMP(K_BPF_JSET_K, 0x40000000 /* __X32_SYSCALL_BIT */, 0, 1));
	EMIT(STMT(K_BPF_RET_K, K_DENY));
#endif
	// ioctl: TIOCSTI and TIOCLINUX (the kernel reads the request as 32 bits).
	EMIT(JUMP(K_BPF_JEQ_K, __NR_ioctl, 0, 5));
	EMIT(STMT(K_BPF_LD_W_ABS, K_ARG_LO(1)));
	EMIT(JUMP(K_BPF_JEQ_K, K_TIOCSTI, 2, 0));
	EMIT(JUMP(K_BPF_JEQ_K, K_TIOCLINUX, 1, 0));
	EMIT(STMT(K_BPF_RET_K, K_SECCOMP_RET_ALLOW));
	EMIT(STMT(K_BPF_RET_K, K_DENY));
	// clone and unshare: no new user namespace (flags are the first argument
	// of both, on both architectures).
	static const int ns_calls[] = {__NR_clone, __NR_unshare};
	for (size_t i = 0; i < 2; i++) {
		EMIT(JUMP(K_BPF_JEQ_K, ns_calls[i], 0, 4));
		EMIT(STMT(K_BPF_LD_W_ABS, K_ARG_LO(0)));
		EMIT(JUMP(K_BPF_JSET_K, K_CLONE_NEWUSER, 0, 1));
		EMIT(STMT(K_BPF_RET_K, K_DENY));
		EMIT(STMT(K_BPF_RET_K, K_SECCOMP_RET_ALLOW));
	}
	// clone3: its flags lie behind a pointer; ENOSYS makes libc use clone.
	EMIT(JUMP(K_BPF_JEQ_K, __NR_clone3, 0, 1));
	EMIT(STMT(K_BPF_RET_K, K_SECCOMP_RET_ERRNO | (ENOSYS & K_SECCOMP_RET_DATA)));
	for (size_t i = 0; i < N_REFUSED; i++) {
		EMIT(JUMP(K_BPF_JEQ_K, (unsigned)seccomp_refused[i], 0, 1));
		EMIT(STMT(K_BPF_RET_K, K_DENY));
	}
	EMIT(STMT(K_BPF_RET_K, K_SECCOMP_RET_ALLOW));
#undef EMIT
#undef STMT
#undef JUMP
	struct k_sock_fprog prog = {(unsigned short)n, f};
	if (prctl(PR_SET_SECCOMP, K_SECCOMP_MODE_FILTER, &prog, 0, 0) != 0)
		return "install the filter";
	return NULL;
#endif
}
