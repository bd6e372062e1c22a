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
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>

#include "pid1_linux.h"


const char kule_plan_shape[] =
	"Args:[]string;Dir:string;Env:[]string;Copy:string;Tmp:string;Home:string;Cache:string;"
	"FSize:int64;Writable:[]string;ReadOnly:[]string;Keep:[]string;"
	"HideDirs:[]string;HideFiles:[]string;Links:[]sandbox.link;Path:string;Target:string;"
	"Devices:[]string;NetNS:bool;ProxyPort:int;Landlock:bool;Seccomp:int;"
	"PTY:bool;Shape:string;";

static const char plan_magic[] = "KSP1";

// ---- The plan (plancodec.go's form) ----

struct decoder {
	const unsigned char *b;
	size_t n;
	const char *err;
	char *arena, *end; // every allocation of one plan, freed at once
};

static void *take_mem(struct decoder *d, size_t size) {
	size = (size + 7) & ~(size_t)7;
	if (d->err || (size_t)(d->end - d->arena) < size) {
		if (!d->err)
			d->err = "the plan needs more memory than its size allows";
		return NULL;
	}
	void *p = d->arena;
	d->arena += size;
	return p;
}

static void fail(struct decoder *d, const char *what) {
	if (!d->err)
		d->err = what;
}

static uint64_t uvarint(struct decoder *d) {
	if (d->err)
		return 0;
	uint64_t v = 0;
	for (size_t i = 0; i < 10; i++) {
		if (i >= d->n) {
			fail(d, "a length is cut short");
			return 0;
		}
		unsigned char c = d->b[i];
		if (i == 9 && c > 1) {
			fail(d, "a length is cut short"); // overflows 64 bits, as Go's Uvarint says
			return 0;
		}
		v |= (uint64_t)(c & 0x7f) << (7 * i);
		if (c < 0x80) {
			if (i > 0 && c == 0) {
				fail(d, "a length is not in its shortest form");
				return 0;
			}
			d->b += i + 1;
			d->n -= i + 1;
			return v;
		}
	}
	fail(d, "a length is cut short");
	return 0;
}

static int64_t varint(struct decoder *d) {
	if (d->err)
		return 0;
	uint64_t u = uvarint(d);
	if (d->err) { // said of a length: this is a number
		d->err = strstr(d->err, "shortest") ? "a number is not in its shortest form" : "a number is cut short";
		return 0;
	}
	int64_t x = (int64_t)(u >> 1);
	if (u & 1)
		x = ~x;
	return x;
}

static size_t count(struct decoder *d, size_t min) {
	uint64_t n = uvarint(d);
	if (d->err)
		return 0;
	if (n > d->n / min) {
		fail(d, "a list is longer than the plan");
		return 0;
	}
	return (size_t)n;
}

static char *str(struct decoder *d) {
	uint64_t n = uvarint(d);
	if (d->err)
		return NULL;
	if (n > d->n) {
		fail(d, "a string is longer than the plan");
		return NULL;
	}
	if (memchr(d->b, 0, n)) {
		fail(d, "a string holds a NUL byte");
		return NULL;
	}
	char *s = take_mem(d, n + 1);
	if (!s)
		return NULL;
	memcpy(s, d->b, n);
	s[n] = 0;
	d->b += n;
	d->n -= n;
	return s;
}

static struct kule_strs strs(struct decoder *d) {
	struct kule_strs l = {0, NULL};
	size_t n = count(d, 1);
	if (n == 0)
		return l;
	// One slot more: args and env end in NULL for execve.
	l.v = take_mem(d, (n + 1) * sizeof(char *));
	if (!l.v)
		return l;
	for (size_t i = 0; i < n; i++)
		l.v[i] = str(d);
	l.v[n] = NULL;
	l.n = d->err ? 0 : n;
	return l;
}

static int flag(struct decoder *d) {
	if (d->err)
		return 0;
	if (d->n == 0) {
		fail(d, "a flag is cut short");
		return 0;
	}
	unsigned char v = d->b[0];
	d->b++;
	d->n--;
	if (v > 1)
		fail(d, "a flag is neither 0 nor 1");
	return v == 1;
}

// What the decoder says of a plan another build of kule wrote.
static const char plan_not_ours[] = "not a plan of this build", plan_other_build[] = "another build's plan";

const char *kule_plan_decode(const unsigned char *b, size_t n, struct kule_plan *p) {
	memset(p, 0, sizeof *p);
	size_t m = sizeof plan_magic - 1;
	if (n < m || memcmp(b, plan_magic, m) != 0)
		return plan_not_ours;
	// Every string and list of the plan fits 32 bytes an input byte.
	size_t size = 32 * n + 1024;
	char *arena = malloc(size);
	if (!arena)
		return "no memory for the plan";
	struct decoder d = {b + m, n - m, NULL, arena, arena + size};
	p->shape = str(&d);
	if (!d.err && strcmp(p->shape, kule_plan_shape) != 0)
		d.err = plan_other_build;
	p->args = strs(&d);
	p->dir = str(&d);
	p->env = strs(&d);
	p->copy = str(&d);
	p->tmp = str(&d);
	p->home = str(&d);
	p->cache = str(&d);
	p->fsize = varint(&d);
	p->writable = strs(&d);
	p->readonly = strs(&d);
	p->keep = strs(&d);
	p->hide_dirs = strs(&d);
	p->hide_files = strs(&d);
	size_t nl = count(&d, 2);
	if (nl > 0) {
		p->links = take_mem(&d, nl * sizeof(struct kule_link));
		for (size_t i = 0; i < nl && !d.err; i++) {
			p->links[i].path = str(&d);
			p->links[i].target = str(&d);
		}
		p->nlinks = d.err ? 0 : nl;
	}
	p->devices = strs(&d);
	p->netns = flag(&d);
	p->proxy_port = varint(&d);
	p->landlock = flag(&d);
	p->seccomp = varint(&d);
	p->pty = flag(&d);
	if (!d.err && d.n > 0)
		d.err = "bytes after its end";
	if (d.err) {
		free(arena);
		memset(p, 0, sizeof *p);
		return d.err;
	}
	p->arena = arena;
	return NULL;
}

void kule_plan_free(struct kule_plan *p) {
	free(p->arena);
	memset(p, 0, sizeof *p);
}

// ---- Failing: the reason goes to kule on FD_STATUS ----

static int status_fd = FD_STATUS;

// write_all writes b whole, or as much as fd takes before it is gone.
static void write_all(int fd, const char *b, size_t n) {
	while (n > 0) {
		ssize_t w = write(fd, b, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) { // a terminal left non-blocking by another program
			struct pollfd pf = {fd, POLLOUT, 0};
			poll(&pf, 1, -1);
			continue;
		}
		if (w <= 0)
			return; // the person's terminal is gone: the output has nowhere to go
		b += w;
		n -= w;
	}
}

// die tells kule why nothing ran, as Go words an error ("what: why"), and
// ends the helper with 125, the code a setup failure has.
__attribute__((noreturn, format(printf, 1, 2))) static void die(const char *fmt, ...) {
	char buf[4096];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (n > 0)
		write_all(status_fd, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
	_exit(125);
}

// why is errno as Go words it (lower case, like Go's errors).
static const char *why(int e) {
	static char buf[128];
	const char *s = strerror(e);
	snprintf(buf, sizeof buf, "%s", s);
	if (buf[0] >= 'A' && buf[0] <= 'Z' && !(buf[1] >= 'A' && buf[1] <= 'Z'))
		buf[0] += 'a' - 'A';
	return buf;
}

// ---- Paths ----

static int within(const char *path, const char *dir) {
	if (strcmp(dir, "/") == 0)
		return 1;
	size_t n = strlen(dir);
	return strncmp(path, dir, n) == 0 && (path[n] == 0 || path[n] == '/');
}

static int depth(const char *p) {
	int n = 0;
	for (; *p; p++)
		n += *p == '/';
	return n;
}

static char *join(const char *a, const char *b) {
	size_t la = strlen(a), lb = strlen(b);
	char *s = malloc(la + lb + 2);
	if (!s)
		die("out of memory");
	memcpy(s, a, la);
	s[la] = '/';
	memcpy(s + la + 1, b, lb + 1);
	return s;
}

// mkdir_all makes dir and its parents, as os.MkdirAll does: what exists is
// looked at first (on a read-only mount, mkdir of an existing folder may
// answer EROFS).
static int mkdir_all(const char *dir) {
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

static char *parent(const char *path) {
	char *d = strdup(path);
	if (!d)
		die("out of memory");
	char *slash = strrchr(d, '/');
	if (!slash) {
		free(d);
		d = strdup(".");
		if (!d)
			die("out of memory");
	} else if (slash == d) {
		d[1] = 0;
	} else {
		*slash = 0;
	}
	return d;
}

// ---- Mounts (the new mount API, by raw system call: Debian's headers and
// glibc differ on which of them they declare) ----

#define K_OPEN_TREE_CLONE 1
#define K_AT_RECURSIVE 0x8000
#define K_MOVE_MOUNT_F_EMPTY_PATH 0x4
#define K_MOUNT_ATTR_RDONLY 0x1
#define K_MOUNT_ATTR_NOSUID 0x2
#define K_MOUNT_ATTR_NODEV 0x4
#define K_MOUNT_ATTR_NOEXEC 0x8
#define K_FSOPEN_CLOEXEC 1
#define K_FSCONFIG_SET_FLAG 0
#define K_FSCONFIG_SET_STRING 1
#define K_FSCONFIG_CMD_CREATE 6
#define K_FSMOUNT_CLOEXEC 1

struct k_mount_attr {
	uint64_t attr_set, attr_clr, propagation, userns_fd;
};

static int k_open_tree(int dfd, const char *path, unsigned flags) {
	return syscall(SYS_open_tree, dfd, path, flags);
}

static int k_move_mount(int from, const char *to) {
	return syscall(SYS_move_mount, from, "", AT_FDCWD, to, K_MOVE_MOUNT_F_EMPTY_PATH);
}

static int k_mount_setattr(int dfd, const char *path, unsigned flags, uint64_t set, uint64_t clr) {
	struct k_mount_attr a = {set, clr, 0, 0};
	return syscall(SYS_mount_setattr, dfd, path, flags, &a, sizeof a);
}

static int mount_(const char *src, const char *target, const char *type, unsigned long flags, const char *data) {
	return syscall(SYS_mount, src, target, type, flags, data);
}

// A tree is a detached mount (open_tree clone) taken before anything is
// hidden and placed back afterwards.
struct tree {
	int fd;
	const char *target;
	int is_dir;
};

struct trees {
	struct tree *v;
	size_t n, cap;
};

static void take(struct trees *t, const char *src, const char *target, int rw, int dev) {
	struct stat st;
	if (stat(src, &st) != 0)
		die("keep %s visible: stat %s: %s", src, src, why(errno));
	int fd = k_open_tree(AT_FDCWD, src, K_OPEN_TREE_CLONE | O_CLOEXEC | K_AT_RECURSIVE);
	if (fd < 0)
		die("keep %s visible: open_tree: %s", src, why(errno));
	uint64_t set = K_MOUNT_ATTR_NOSUID, clr = 0;
	if (dev) {
		clr = K_MOUNT_ATTR_NODEV;
	} else if (rw) {
		set |= K_MOUNT_ATTR_NODEV;
		clr = K_MOUNT_ATTR_RDONLY;
	} else {
		set |= K_MOUNT_ATTR_NODEV | K_MOUNT_ATTR_RDONLY;
	}
	if (k_mount_setattr(fd, "", AT_EMPTY_PATH | K_AT_RECURSIVE, set, clr) != 0)
		die("keep %s visible: set its mount flags: %s", src, why(errno));
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 16;
		t->v = realloc(t->v, t->cap * sizeof *t->v);
		if (!t->v)
			die("out of memory");
	}
	t->v[t->n++] = (struct tree){fd, target, S_ISDIR(st.st_mode)};
}

static void place(const struct tree *t) {
	struct stat st;
	if (lstat(t->target, &st) != 0) {
		char *dir = parent(t->target);
		int e = mkdir_all(dir);
		free(dir);
		if (e)
			die("place %s: mkdir: %s", t->target, why(e));
		if (t->is_dir) {
			if (mkdir(t->target, 0755) != 0)
				die("place %s: mkdir: %s", t->target, why(errno));
		} else {
			int fd = open(t->target, O_CREAT | O_RDONLY | O_CLOEXEC, 0644);
			if (fd < 0)
				die("place %s: open: %s", t->target, why(errno));
			close(fd);
		}
	}
	if (k_move_mount(t->fd, t->target) != 0)
		die("place %s: move_mount: %s", t->target, why(errno));
}

static int under_tree(const char *path, const struct trees *t) {
	for (size_t i = 0; i < t->n; i++)
		if (within(path, t->v[i].target))
			return 1;
	return 0;
}

static int holds_tree(const char *dir, const struct trees *t) {
	for (size_t i = 0; i < t->n; i++)
		if (strcmp(t->v[i].target, dir) != 0 && within(t->v[i].target, dir))
			return 1;
	return 0;
}

static int holds_link(const char *dir, const struct kule_plan *p) {
	for (size_t i = 0; i < p->nlinks; i++)
		if (within(p->links[i].path, dir))
			return 1;
	return 0;
}

// One empty tmpfs, read-only in its superblock, made once and detached; each
// hide that nothing is made in is a clone of it moved into place.
static int empty_tree = -1;

static const char *cover_empty(const char *dir) {
	if (empty_tree < 0) {
		int fs = syscall(SYS_fsopen, "tmpfs", K_FSOPEN_CLOEXEC);
		if (fs < 0)
			return "fsopen";
		const char *kv[][2] = {{"mode", "0755"}, {"size", "4k"}, {"nr_inodes", "16"}};
		for (size_t i = 0; i < 3; i++)
			if (syscall(SYS_fsconfig, fs, K_FSCONFIG_SET_STRING, kv[i][0], kv[i][1], 0) != 0)
				return "fsconfig";
		if (syscall(SYS_fsconfig, fs, K_FSCONFIG_SET_FLAG, "ro", NULL, 0) != 0)
			return "fsconfig ro";
		if (syscall(SYS_fsconfig, fs, K_FSCONFIG_CMD_CREATE, NULL, NULL, 0) != 0)
			return "fsconfig create";
		empty_tree = syscall(SYS_fsmount, fs, K_FSMOUNT_CLOEXEC,
			K_MOUNT_ATTR_RDONLY | K_MOUNT_ATTR_NOSUID | K_MOUNT_ATTR_NODEV | K_MOUNT_ATTR_NOEXEC);
		int e = errno;
		close(fs);
		errno = e;
		if (empty_tree < 0)
			return "fsmount";
	}
	int c = k_open_tree(empty_tree, "", K_OPEN_TREE_CLONE | O_CLOEXEC | AT_EMPTY_PATH);
	if (c < 0)
		return "open_tree";
	int r = k_move_mount(c, dir);
	int e = errno;
	close(c);
	errno = e;
	return r == 0 ? NULL : "move_mount";
}

struct fds {
	int *v;
	size_t n, cap;
};

static void push_fd(struct fds *f, int fd) {
	if (f->n == f->cap) {
		f->cap = f->cap ? 2 * f->cap : 16;
		f->v = realloc(f->v, f->cap * sizeof *f->v);
		if (!f->v)
			die("out of memory");
	}
	f->v[f->n++] = fd;
}

// hide covers the plan's hidden folders with an empty read-only tmpfs and its
// hidden files with /dev/null. again: after the trees are back, only the
// hides inside them are made again, and never one that would cover a tree.
static void hide(const struct kule_plan *p, const struct trees *t, struct fds *tmpfs_hides, int again) {
	struct stat st;
	for (size_t i = 0; i < p->hide_dirs.n; i++) {
		const char *d = p->hide_dirs.v[i];
		if (again && (!under_tree(d, t) || holds_tree(d, t)))
			continue;
		if (lstat(d, &st) != 0)
			continue; // inside an area already hidden
		if (!holds_link(d, p) && !holds_tree(d, t)) {
			const char *what = cover_empty(d);
			if (what)
				die("hide %s: %s: %s", d, what, why(errno));
			continue;
		}
		if (mount_("tmpfs", d, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755,size=1m,nr_inodes=4096") != 0)
			die("hide %s: %s", d, why(errno));
		int fd = open(d, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			die("hide %s: %s", d, why(errno));
		push_fd(tmpfs_hides, fd);
	}
	for (size_t i = 0; i < p->hide_files.n; i++) {
		const char *f = p->hide_files.v[i];
		if (again && !under_tree(f, t))
			continue;
		if (lstat(f, &st) != 0)
			continue;
		if (mount_("/dev/null", f, "", MS_BIND, "") != 0)
			die("hide %s: %s", f, why(errno));
	}
}

static int by_name(const void *a, const void *b) {
	return strcmp(*(char *const *)a, *(char *const *)b);
}

// setup_mounts builds the sandbox's view of the file system in PID 1's own
// mount namespace. Order matters: clone what must stay visible, make
// everything read-only, hide, put the clones back, hide again what lies in
// them, then /dev, /proc and the reveal links.
static void setup_mounts(struct kule_plan *p) {
	if (mount_("", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		die("mount namespace: make / private: %s", why(errno));
	struct trees t = {0}, devs = {0};
	take(&t, p->copy, p->copy, 1, 0);
	take(&t, p->home, p->home, 1, 0);
	take(&t, p->cache, p->cache, 1, 0);
	take(&t, p->tmp, "/tmp", 1, 0);
	for (size_t i = 0; i < p->writable.n; i++)
		take(&t, p->writable.v[i], p->writable.v[i], 1, 0);
	for (size_t i = 0; i < p->readonly.n; i++)
		take(&t, p->readonly.v[i], p->readonly.v[i], 0, 0);
	for (size_t i = 0; i < p->keep.n; i++)
		take(&t, p->keep.v[i], p->keep.v[i], 0, 0);
	for (size_t i = 0; i < p->devices.n; i++) {
		char *d = join("/dev", p->devices.v[i]);
		take(&devs, d, d, 0, 1);
	}

	// Every mount: read-only, no setuid, no devices.
	if (k_mount_setattr(AT_FDCWD, "/", K_AT_RECURSIVE, K_MOUNT_ATTR_RDONLY | K_MOUNT_ATTR_NOSUID | K_MOUNT_ATTR_NODEV, 0) != 0)
		die("make every mount read-only: %s", why(errno));

	struct fds tmpfs_hides = {0};
	if (p->hide_dirs.n > 1)
		qsort(p->hide_dirs.v, p->hide_dirs.n, sizeof(char *), by_name);
	hide(p, &t, &tmpfs_hides, 0);

	// Put the kept trees back, shallow first (a stable insertion sort: equal
	// depths keep the plan's order).
	for (size_t i = 1; i < t.n; i++) {
		struct tree x = t.v[i];
		size_t j = i;
		for (; j > 0 && depth(t.v[j - 1].target) > depth(x.target); j--)
			t.v[j] = t.v[j - 1];
		t.v[j] = x;
	}
	for (size_t i = 0; i < t.n; i++)
		place(&t.v[i]);
	hide(p, &t, &tmpfs_hides, 1);

	// A /dev of named devices only.
	if (mount_("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k,nr_inodes=1024") != 0)
		die("/dev: %s", why(errno));
	for (size_t i = 0; i < devs.n; i++)
		place(&devs.v[i]);
	if (mkdir("/dev/pts", 0755) != 0 || mkdir("/dev/shm", 0755) != 0)
		die("/dev: mkdir: %s", why(errno));
	if (mount_("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620") != 0)
		die("/dev/pts: %s", why(errno));
	if (mount_("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=64m") != 0)
		die("/dev/shm: %s", why(errno));
	static const char *const dev_links[][2] = {
		{"/dev/ptmx", "pts/ptmx"}, {"/dev/fd", "/proc/self/fd"}, {"/dev/stdin", "/proc/self/fd/0"},
		{"/dev/stdout", "/proc/self/fd/1"}, {"/dev/stderr", "/proc/self/fd/2"},
	};
	for (size_t i = 0; i < sizeof dev_links / sizeof dev_links[0]; i++)
		if (symlink(dev_links[i][1], dev_links[i][0]) != 0)
			die("/dev: symlink %s: %s", dev_links[i][0], why(errno));

	// A /proc of this PID namespace only.
	if (mount_("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "") != 0)
		die("/proc: %s", why(errno));

	// The copy sits next to links to the revealed projects.
	for (size_t i = 0; i < p->nlinks; i++) {
		const struct kule_link *l = &p->links[i];
		char *dir = parent(l->path);
		int e = mkdir_all(dir);
		free(dir);
		if (e)
			die("reveal link %s: mkdir: %s", l->path, why(e));
		if (symlink(l->target, l->path) != 0 && errno != EEXIST)
			die("reveal link %s: %s", l->path, why(errno));
	}

	// The hiding tmpfs and /dev become read-only too (by descriptor: a hide
	// may since lie beneath another mount).
	for (size_t i = 0; i < tmpfs_hides.n; i++)
		if (k_mount_setattr(tmpfs_hides.v[i], "", AT_EMPTY_PATH, K_MOUNT_ATTR_RDONLY, 0) != 0)
			die("make a hiding tmpfs read-only: %s", why(errno));
	if (k_mount_setattr(AT_FDCWD, "/dev", 0, K_MOUNT_ATTR_RDONLY, 0) != 0)
		die("make /dev read-only: %s", why(errno));
	for (size_t i = 0; i < t.n; i++)
		close(t.v[i].fd);
	for (size_t i = 0; i < devs.n; i++)
		close(devs.v[i].fd);
	for (size_t i = 0; i < tmpfs_hides.n; i++)
		close(tmpfs_hides.v[i]);
	if (empty_tree >= 0)
		close(empty_tree);
}

// ---- Network ----

static void loopback_up(void) {
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("network namespace: bring up loopback: %s", why(errno));
	struct ifreq ifr;
	memset(&ifr, 0, sizeof ifr);
	strcpy(ifr.ifr_name, "lo");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) != 0)
		die("network namespace: bring up loopback: %s", why(errno));
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(fd, SIOCSIFFLAGS, &ifr) != 0)
		die("network namespace: bring up loopback: %s", why(errno));
	close(fd);
}

// listen_loopback listens on 127.0.0.1:port inside the namespace; PID 1 hands
// each connection to kule (FD_CTRL), which joins it to the proxy. Only
// descriptors cross: no address outside the namespace is reachable from in
// here.
static int listen_loopback(int port) {
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		die("proxy bridge: listen inside the sandbox: %s", why(errno));
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, SOMAXCONN) != 0)
		die("proxy bridge: listen inside the sandbox: %s", why(errno));
	return fd;
}

// bridge passes the connections waiting on ln to kule, a few at a time (poll
// comes back for the rest, so that a flood of connections cannot keep PID 1
// from its signals and children); it returns -1 once kule is gone (the
// listener is closed: a command then sees its connections refused).
static int bridge(int ln) {
	for (int k = 0; k < 32; k++) {
		int c = accept4(ln, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EAGAIN)
				return ln;
			close(ln);
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
		close(c);
		if (r < 0 && errno != ETOOMANYREFS && errno != ENOBUFS && errno != ENOMEM) {
			close(ln);
			return -1;
		}
		// A descriptor the kernel would not pass now (too many in flight
		// for this uid): that one connection is closed, the bridge stays.
	}
	return ln;
}

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
		close(fd);
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
		die("landlock: build the ruleset: populating ruleset for \"%s\": open: %s", path, why(errno));
	}
	struct ll_path_beneath a = {access, fd};
	if (syscall(SYS_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &a, 0) != 0)
		die("landlock: build the ruleset: populating ruleset for \"%s\": landlock_add_rule: %s", path, why(errno));
	close(fd);
}

// restrict_landlock puts the calling process in the command's domain: read
// and execute everywhere the mounts show, write only to the copy, the task's
// home, caches and /tmp, --allow-write and the named devices; TCP connect
// only to the proxy port; no signals or abstract sockets out of the domain.
// It asks for what go-landlock's V7 handles and keeps what the kernel has,
// as go-landlock's best effort does (a kernel without the right to rename
// across folders, ABI 1, offers none that is of use).
static void restrict_landlock(const struct kule_plan *p) {
	int abi = landlock_abi();
	uint64_t fs_supported = abi >= 5 ? (1 << 16) - 1 : abi >= 3 ? (1 << 15) - 1 : abi == 2 ? (1 << 14) - 1 : 0;
	struct ll_ruleset_attr attr = {
		.fs = ((1 << 16) - 1) & fs_supported,
		.net = p->netns && abi >= 4 ? LL_NET_CONNECT_TCP : 0,
		.scoped = abi >= 6 ? LL_SCOPE_ABSTRACT_UNIX | LL_SCOPE_SIGNAL : 0,
	};
	if (abi < 2) // kule asks for Landlock only from ABI 2 (Availability.Landlock)
		die("landlock: the kernel offers ABI %d, and 2 is needed; nothing ran", abi);
	int rs = syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
	if (rs < 0)
		die("landlock: build the ruleset: landlock_create_ruleset: %s", why(errno));
	add_path(rs, "/", ll_read, attr.fs, 0);
	const char *rw[] = {p->copy, p->home, p->cache, "/tmp"};
	for (size_t i = 0; i < 4; i++)
		add_path(rs, rw[i], ll_read | ll_write | LL_REFER, attr.fs, 0);
	for (size_t i = 0; i < p->writable.n; i++)
		add_path(rs, p->writable.v[i], ll_read | ll_write | LL_REFER, attr.fs, 0);
	add_path(rs, "/dev/shm", ll_read | ll_write, attr.fs, 0);
	for (size_t i = 0; i < p->devices.n; i++) {
		char *d = join("/dev", p->devices.v[i]);
		add_path(rs, d, ((ll_read | ll_write) & ll_file) | LL_IOCTL_DEV, attr.fs, 1);
		free(d);
	}
	add_path(rs, "/dev/pts", ((ll_read | ll_write) & ll_file) | LL_IOCTL_DEV, attr.fs, 1);
	add_path(rs, "/dev/ptmx", ((ll_read | ll_write) & ll_file) | LL_IOCTL_DEV, attr.fs, 1);
	if (p->proxy_port > 0 && attr.net) {
		struct ll_net_port n = {LL_NET_CONNECT_TCP, (uint64_t)p->proxy_port};
		if (syscall(SYS_landlock_add_rule, rs, LL_RULE_NET_PORT, &n, 0) != 0)
			die("landlock: build the ruleset: the proxy's port: %s", why(errno));
	}
	if (syscall(SYS_landlock_restrict_self, rs, 0) != 0)
		die("landlock: restrict: %s", why(errno));
	close(rs);
}

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
static const char *seccomp_filter(int64_t err) {
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

// narrow drops the calling process's privileges for good and puts it in the
// command's Landlock domain, then under the seccomp filter.
static void narrow(const struct kule_plan *p) {
	if (p->fsize > 0) {
		struct rlimit r = {(rlim_t)p->fsize, (rlim_t)p->fsize};
		if (setrlimit(RLIMIT_FSIZE, &r) != 0)
			die("limit file size: %s", why(errno));
	}
	const char *what = drop_caps();
	if (what)
		die("drop capabilities: %s: %s", what, why(errno));
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		die("set no_new_privs: %s", why(errno));
	if (p->landlock)
		restrict_landlock(p);
	if (p->seccomp) { // last: what the helper does after it is exec alone
		const char *what = seccomp_filter(p->seccomp);
		if (what)
			die("seccomp: %s: %s", what, why(errno));
	}
}

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
static char *look_path(const struct kule_plan *p) {
	const char *name = p->args.v[0];
	if (strchr(name, '/'))
		return (char *)name;
	const char *path = lookup_env(p, "PATH");
	if (!*path)
		die("command not found: %s (not found in the command's PATH)", name);
	for (const char *s = path;;) {
		const char *e = strchr(s, ':');
		size_t n = e ? (size_t)(e - s) : strlen(s);
		char *d = n ? strndup(s, n) : strdup(".");
		char *c = join(d, name);
		free(d);
		struct stat st;
		if (stat(c, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111))
			return c;
		free(c);
		if (!e)
			break;
		s = e + 1;
	}
	die("command not found: %s (not found in the command's PATH)", name);
}

static int is_terminal(int fd) {
	struct termios t;
	return ioctl(fd, TCGETS, &t) == 0;
}

// The command's own pty, made in the sandbox's private devpts when the
// command is run from a terminal: it stands in for each of the command's
// stdio that was the person's terminal, and PID 1 copies the person's keys
// in and the pty's output out. The person's terminal itself never reaches
// the command, so neither TIOCSTI nor anything else it does to its terminal
// touches the person's.
struct terminal {
	int master, slave;
	int out; // the person's terminal among stdout and stderr; -1: none
	int on_slave[3];
};

static void resize(const struct terminal *t) {
	struct winsize ws;
	if (ioctl(0, TIOCGWINSZ, &ws) == 0)
		ioctl(t->master, TIOCSWINSZ, &ws);
}

static void new_terminal(struct terminal *t) {
	t->master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (t->master < 0)
		die("the command's pty: %s", why(errno));
	int unlock = 0;
	if (ioctl(t->master, TIOCSPTLCK, &unlock) != 0)
		die("the command's pty: unlock: %s", why(errno));
	// The peer by descriptor, not by a path another process could swap.
	t->slave = ioctl(t->master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (t->slave < 0)
		die("the command's pty: open its other end: %s", why(errno));
	t->out = -1;
	t->on_slave[0] = 1;
	for (int fd = 1; fd <= 2; fd++) {
		t->on_slave[fd] = is_terminal(fd);
		if (t->on_slave[fd] && t->out < 0)
			t->out = fd;
	}
	resize(t);
}

// exec_command becomes the command, with every signal back at its default,
// ignored ones too (kule under nohup), and none blocked: a command expects
// them so. By system call: glibc's sigaction refuses the two real-time
// signals it keeps for itself, which a Go parent may have left ignored.
__attribute__((noreturn)) static void exec_command(const struct kule_plan *p, const char *path) {
	struct {
		void (*handler)(int);
		unsigned long flags;
		void (*restorer)(void);
		uint64_t mask;
	} dfl = {SIG_DFL, 0, NULL, 0};
	for (int s = 1; s <= 64; s++)
		if (s != SIGKILL && s != SIGSTOP)
			syscall(SYS_rt_sigaction, s, &dfl, NULL, sizeof dfl.mask);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execve(path, p->args.v, p->env.n ? p->env.v : (char *[]){NULL});
	// The command's own failures start with the words cmderr.go reads: they
	// are the command's error (exit 127 or 126, as a shell says), never the
	// sandbox's.
	if (errno == ENOENT || errno == ENOTDIR)
		die("command not found: %s (%s)", p->args.v[0], why(errno));
	if (errno == ENOEXEC)
		die("command cannot run: %s (%s)", p->args.v[0], why(errno));
	die("run %s: %s", p->args.v[0], why(errno));
}

// start_command forks the command: a session of its own (the person's
// terminal is never its controlling terminal, so TIOCSTI cannot reach it;
// its own pty is), no capabilities, no_new_privs, the file size limit and
// the Landlock domain. PID 1 itself keeps what it needs to reap and forward,
// outside the domain. A failure before exec comes back on a pipe and ends
// the run as a setup failure.
static pid_t start_command(const struct kule_plan *p, const struct terminal *term) {
	if (chdir(p->dir) != 0) // PATH entries like "." resolve from here
		die("enter the working directory: %s", why(errno));
	char *path = look_path(p);
	int errp[2];
	if (pipe2(errp, O_CLOEXEC) != 0)
		die("run %s: pipe: %s", p->args.v[0], why(errno));
	pid_t pid = fork();
	if (pid < 0)
		die("run %s: fork: %s", p->args.v[0], why(errno));
	if (pid == 0) {
		status_fd = errp[1];
		close(errp[0]);
		if (setsid() < 0)
			die("run %s: setsid: %s", p->args.v[0], why(errno));
		if (term) {
			for (int fd = 0; fd <= 2; fd++)
				if (term->on_slave[fd] && dup2(term->slave, fd) < 0)
					die("run %s: dup2: %s", p->args.v[0], why(errno));
			if (ioctl(0, TIOCSCTTY, 0) != 0)
				die("run %s: the pty as its terminal: %s", p->args.v[0], why(errno));
		}
		narrow(p);
		exec_command(p, path);
	}
	close(errp[1]);
	char buf[4096];
	ssize_t n;
	do
		n = read(errp[0], buf, sizeof buf - 1);
	while (n < 0 && errno == EINTR);
	if (n > 0) {
		buf[n] = 0;
		die("%s", buf);
	}
	close(errp[0]);
	return pid;
}

static int exit_code(int ws) {
	return WIFSIGNALED(ws) ? 128 + WTERMSIG(ws) : WEXITSTATUS(ws);
}

// The relay: the person's keys into the pty (held back while the pty's
// input is full), the pty's output to the person's terminal. The output has
// a thread of its own: a terminal that takes no output (stopped, or its
// window frozen) holds only that thread, while PID 1's loop still forwards
// signals, reaps, bridges and passes on keys — a Ctrl-C typed at a command
// flooding a stalled terminal reaches it.
struct relay {
	int master, out;
	char in[4096];
	size_t in_len, in_off;
	int stdin_open;
	int master_open; // cleared by the output thread at the pty's end (atomic)
	int empty_poll;  // the last poll found stdin readable with nothing in it
	pthread_t output;
	int output_started;
};

// read_keys reads what the person typed. Only what is there: the terminal
// is shared with the person's shell, and a read that blocks would hold PID
// 1. Readable with nothing to read twice running is an end of input (a
// terminal in canonical mode at its EOF character): then the read returns
// at once.
static void read_keys(struct relay *r, short revents) {
	int avail = -1;
	if (ioctl(0, FIONREAD, &avail) == 0 && avail == 0 && !r->empty_poll) {
		r->empty_poll = 1;
		if (revents & (POLLHUP | POLLERR | POLLNVAL))
			r->stdin_open = 0;
		return;
	}
	r->empty_poll = 0;
	size_t want = avail > 0 && (size_t)avail < sizeof r->in ? (size_t)avail : sizeof r->in;
	ssize_t n = read(0, r->in, want);
	if (n > 0)
		r->in_len = n, r->in_off = 0;
	else if (n == 0 || (errno != EINTR && errno != EAGAIN))
		r->stdin_open = 0;
}

// write_keys passes on what is held of the person's keys, as far as the
// pty's input takes it.
static void write_keys(struct relay *r) {
	if (!r->in_len || !__atomic_load_n(&r->master_open, __ATOMIC_ACQUIRE))
		return;
	ssize_t w = write(r->master, r->in + r->in_off, r->in_len - r->in_off);
	if (w > 0) {
		r->in_off += w;
		if (r->in_off == r->in_len)
			r->in_len = 0;
	} else if (w < 0 && errno != EAGAIN && errno != EINTR) {
		r->in_len = 0;
	}
}

// relay_output is the output thread: it copies what the command writes to
// its pty to the person's terminal (or nowhere, when neither stdout nor
// stderr is one) until the pty's end (EIO: the last process in the
// sandbox has closed it). The master is non-blocking (the keys are written
// to it from the loop), so the thread waits in poll.
static void *relay_output(void *arg) {
	struct relay *r = arg;
	char out[8192];
	for (;;) {
		struct pollfd pf = {r->master, POLLIN, 0};
		if (poll(&pf, 1, -1) < 0 && errno != EINTR)
			break;
		ssize_t n = read(r->master, out, sizeof out);
		if (n > 0) {
			if (r->out >= 0)
				write_all(r->out, out, n);
		} else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
			break;
		}
	}
	__atomic_store_n(&r->master_open, 0, __ATOMIC_RELEASE);
	return NULL;
}

// on_signals forwards what signalfd holds to the command (a resize goes to
// its pty instead) and reaps every child that ended; it returns 0 once the
// command has, its code in *code.
static int on_signals(int sfd, pid_t cmd, const struct terminal *term, int *code) {
	struct signalfd_siginfo si;
	while (read(sfd, &si, sizeof si) == sizeof si) {
		int s = (int)si.ssi_signo;
		if (s == SIGCHLD)
			continue; // reaped below
		if (s == SIGWINCH && term)
			resize(term); // the pty tells the command itself
		else
			kill(cmd, s);
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

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT, SIGALRM};

// read_full reads n bytes from fd; it returns how many it got before EOF.
static size_t read_full(int fd, void *buf, size_t n) {
	size_t got = 0;
	while (got < n) {
		ssize_t r = read(fd, (char *)buf + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			die("read the plan: %s", why(errno));
		if (r == 0)
			break;
		got += r;
	}
	return got;
}

// read_plan reads the plan from FD_PLAN: its length in 4 bytes, then the
// plan (plancodec.go's form). The byte that lets the command start comes
// later (wait_for_go).
static void read_plan(struct kule_plan *p) {
	unsigned char len[4] = {0};
	size_t got = read_full(FD_PLAN, len, 4);
	if (got == 0)
		_exit(125); // kule refused the plan and said why itself
	uint32_t n = len[0] | len[1] << 8 | len[2] << 16 | (uint32_t)len[3] << 24;
	if (got != 4 || n > 64 << 20)
		die("the plan is cut short or too long (%u bytes)", n);
	unsigned char *b = malloc(n ? n : 1);
	if (!b)
		die("read the plan: out of memory");
	if (read_full(FD_PLAN, b, n) != n)
		die("the plan is cut short");
	const char *err = kule_plan_decode(b, n, p);
	if (err && strcmp(err, plan_not_ours) != 0 && strcmp(err, plan_other_build) != 0)
		die("the plan kule sent is damaged (%s); nothing ran", err);
	if (err) {
		char exe[4096];
		ssize_t l = readlink("/proc/self/exe", exe, sizeof exe - 1);
		exe[l > 0 ? l : 0] = 0;
		die("the sandbox helper %s is from another build of kule than the kule that started it (%s); install both from one build", exe, err);
	}
	free(b);
	if (p->args.n == 0)
		die("the plan names no command");
}

// wait_for_go waits for kule's go (its proxy is ready); without it the run
// ends here, before the command, and kule says why.
static void wait_for_go(void) {
	unsigned char go = 0;
	if (read_full(FD_PLAN, &go, 1) != 1 || go != KULE_PLAN_GO)
		_exit(125);
	close(FD_PLAN);
}

// stage_init is PID 1 of the sandbox's namespaces.
__attribute__((noreturn)) static void stage_init(void) {
	// Signals are held from the first instruction, so none sent before the
	// command exists is lost or takes PID 1's default action; they are read
	// from a signalfd once it runs.
	sigset_t mask;
	sigemptyset(&mask);
	for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++)
		sigaddset(&mask, forwarded[i]);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	// Children must be waited for, whatever kule's parent left SIGCHLD as
	// (ignored, the kernel would reap them unseen and send no SIGCHLD).
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	sigaction(SIGCHLD, &dfl, NULL);
	// Nothing the kule process held open reaches the command: every
	// descriptor past stdio is close-on-exec from here on.
	syscall(SYS_close_range, 3, ~0U, 4 /* CLOSE_RANGE_CLOEXEC */);
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);

	struct kule_plan p;
	read_plan(&p);
	setup_mounts(&p);
	sethostname("kule", 4);
	if (p.netns)
		loopback_up();
	int ln = -1;
	if (p.proxy_port > 0)
		ln = listen_loopback((int)p.proxy_port);
	struct terminal term = {-1, -1, -1, {0}};
	if (p.pty)
		new_terminal(&term);
	int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0)
		die("catch signals: %s", why(errno));

	wait_for_go();
	// PID 1 writes the command's output to the person's terminal from
	// whichever process group kule is in; the command gets every signal
	// back at its default (start_command).
	struct sigaction ign = {.sa_handler = SIG_IGN};
	sigaction(SIGTTOU, &ign, NULL);
	sigaction(SIGTTIN, &ign, NULL);
	struct relay r = {.master = term.master, .out = term.out, .stdin_open = p.pty, .master_open = p.pty};
	if (p.pty) {
		fcntl(term.master, F_SETFL, fcntl(term.master, F_GETFL) | O_NONBLOCK);
		// Made before the command, so that a relay that cannot be made
		// is a setup failure and nothing runs. It holds no lock a fork
		// could copy held (it only polls, reads and writes), and it
		// has every forwarded signal held, as PID 1 does.
		int e = pthread_create(&r.output, NULL, relay_output, &r);
		if (e != 0)
			die("relay the command's terminal: %s", why(e));
		r.output_started = 1;
	}
	pid_t cmd = start_command(&p, p.pty ? &term : NULL);
	close(FD_STATUS); // EOF without text: the command runs
	status_fd = -1;
	if (p.pty)
		close(term.slave); // the output ends (EIO) when the last process in the sandbox does
	int code = 125, running = 1;
	while (running) {
		struct pollfd fds[4];
		int nfds = 0, i_sig = nfds++, i_ln = -1, i_in = -1;
		fds[i_sig] = (struct pollfd){sfd, POLLIN, 0};
		if (ln >= 0)
			fds[i_ln = nfds++] = (struct pollfd){ln, POLLIN, 0};
		if (r.stdin_open && r.in_len == 0)
			fds[i_in = nfds++] = (struct pollfd){0, POLLIN, 0};
		if (r.in_len && __atomic_load_n(&r.master_open, __ATOMIC_ACQUIRE))
			fds[nfds++] = (struct pollfd){r.master, POLLOUT, 0}; // room for the held keys
		if (poll(fds, nfds, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (fds[i_sig].revents)
			running = on_signals(sfd, cmd, p.pty ? &term : NULL, &code);
		if (i_ln >= 0 && fds[i_ln].revents)
			ln = bridge(ln);
		if (i_in >= 0 && fds[i_in].revents)
			read_keys(&r, fds[i_in].revents);
		write_keys(&r);
	}

	// Whatever the command left running is ended now (it may hold the pty
	// open; and kule goes on once told the code, so that it need not wait
	// for the kernel to take the namespaces down): every process of the
	// namespace descends from PID 1, so none is left at ECHILD.
	kill(-1, SIGKILL);
	while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
		;
	if (r.output_started) // the last of the output, up to the pty's end (EIO)
		pthread_join(r.output, NULL);
	unsigned char b[4] = {code & 0xff, (code >> 8) & 0xff, (code >> 16) & 0xff, (code >> 24) & 0xff};
	write_all(FD_DONE, (char *)b, 4);
	_exit(code);
}

// stage_exec is the helper without namespaces (no user namespaces here, and
// weaker isolation accepted): it drops every privilege, applies Landlock and
// becomes the command.
__attribute__((noreturn)) static void stage_exec(void) {
	struct kule_plan p;
	read_plan(&p);
	if (chdir(p.dir) != 0)
		die("enter the working directory: %s", why(errno));
	char *path = look_path(&p);
	wait_for_go();
	narrow(&p);
	if (syscall(SYS_close_range, 3, ~0U, 4 /* CLOSE_RANGE_CLOEXEC */) != 0)
		die("close inherited descriptors: %s", why(errno));
	exec_command(&p, path);
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
	close(fd);
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
