//go:build linux && cgo

// The sandbox's view of the file system, made in PID 1's own mount
// namespace: what stays visible, read-only everything, the hides, /dev,
// /proc and the reveal links.

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "pid1_linux.h"

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

static void push_tree(struct trees *t, int fd, const char *target, int is_dir) {
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 16;
		t->v = realloc(t->v, t->cap * sizeof *t->v);
		if (!t->v)
			kule_die("out of memory");
	}
	t->v[t->n++] = (struct tree){fd, target, is_dir};
}

static void take(struct trees *t, const char *src, const char *target, int rw, int dev) {
	struct stat st;
	if (stat(src, &st) != 0)
		kule_die("keep %s visible: stat %s: %s", src, src, kule_why(errno));
	int fd = k_open_tree(AT_FDCWD, src, K_OPEN_TREE_CLONE | O_CLOEXEC | K_AT_RECURSIVE);
	if (fd < 0)
		kule_die("keep %s visible: open_tree: %s", src, kule_why(errno));
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
		kule_die("keep %s visible: set its mount flags: %s", src, kule_why(errno));
	push_tree(t, fd, target, S_ISDIR(st.st_mode));
}

// take_overlay makes the copy an overlayfs, detached like a taken tree:
// the copy its one lower layer, the plan's upper layer taking every write.
// It is made here, in the sandbox's own user namespace, with userxattr
// (the mark an unprivileged overlay keeps its whiteouts and opaque
// directories with), which also turns redirect_dir and metacopy off: its
// upper layer is one Kule folds back entry by entry.
static void take_overlay(struct trees *t, const struct kule_plan *p) {
	int fs = syscall(SYS_fsopen, "overlay", K_FSOPEN_CLOEXEC);
	if (fs < 0)
		kule_die("the copy's overlay: fsopen: %s (this kernel has no overlayfs a user namespace may mount; use the copy backend)", kule_why(errno));
	// lowerdir+ takes the path whole (no ':' or ',' parsing), Linux 6.8+.
	if (syscall(SYS_fsconfig, fs, K_FSCONFIG_SET_STRING, "lowerdir+", p->copy, 0) != 0)
		kule_die("the copy's overlay: lower layer %s: %s", p->copy, kule_why(errno));
	const char *kv[][2] = {{"upperdir", p->upper}, {"workdir", p->work}};
	for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
		if (syscall(SYS_fsconfig, fs, K_FSCONFIG_SET_STRING, kv[i][0], kv[i][1], 0) != 0)
			kule_die("the copy's overlay: %s=%s: %s", kv[i][0], kv[i][1], kule_why(errno));
	if (syscall(SYS_fsconfig, fs, K_FSCONFIG_SET_FLAG, "userxattr", NULL, 0) != 0)
		kule_die("the copy's overlay: userxattr: %s", kule_why(errno));
	if (syscall(SYS_fsconfig, fs, K_FSCONFIG_CMD_CREATE, NULL, NULL, 0) != 0)
		kule_die("the copy's overlay: mount: %s", kule_why(errno));
	int m = syscall(SYS_fsmount, fs, K_FSMOUNT_CLOEXEC, K_MOUNT_ATTR_NOSUID | K_MOUNT_ATTR_NODEV);
	if (m < 0)
		kule_die("the copy's overlay: fsmount: %s", kule_why(errno));
	kule_close(fs, "the overlay's context");
	push_tree(t, m, p->copy, 1);
}

static void place(const struct tree *t) {
	struct stat st;
	if (lstat(t->target, &st) != 0) {
		char *dir = kule_parent(t->target);
		int e = kule_mkdir_all(dir);
		free(dir);
		if (e)
			kule_die("place %s: mkdir: %s", t->target, kule_why(e));
		if (t->is_dir) {
			if (mkdir(t->target, 0755) != 0)
				kule_die("place %s: mkdir: %s", t->target, kule_why(errno));
		} else {
			int fd = open(t->target, O_CREAT | O_RDONLY | O_CLOEXEC, 0644);
			if (fd < 0)
				kule_die("place %s: open: %s", t->target, kule_why(errno));
			kule_close(fd, "place a kept file");
		}
	}
	if (k_move_mount(t->fd, t->target) != 0)
		kule_die("place %s: move_mount: %s", t->target, kule_why(errno));
}

static int under_tree(const char *path, const struct trees *t) {
	for (size_t i = 0; i < t->n; i++)
		if (kule_within(path, t->v[i].target))
			return 1;
	return 0;
}

static int holds_tree(const char *dir, const struct trees *t) {
	for (size_t i = 0; i < t->n; i++)
		if (strcmp(t->v[i].target, dir) != 0 && kule_within(t->v[i].target, dir))
			return 1;
	return 0;
}

static int holds_link(const char *dir, const struct kule_plan *p) {
	for (size_t i = 0; i < p->nlinks; i++)
		if (kule_within(p->links[i].path, dir))
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
		if (close(fs) != 0 && errno != EINTR)
			return "close the tmpfs's context";
		errno = e;
		if (empty_tree < 0)
			return "fsmount";
	}
	int c = k_open_tree(empty_tree, "", K_OPEN_TREE_CLONE | O_CLOEXEC | AT_EMPTY_PATH);
	if (c < 0)
		return "open_tree";
	int r = k_move_mount(c, dir);
	int e = errno;
	if (close(c) != 0 && errno != EINTR)
		return "close the clone";
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
			kule_die("out of memory");
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
				kule_die("hide %s: %s: %s", d, what, kule_why(errno));
			continue;
		}
		if (mount_("tmpfs", d, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755,size=1m,nr_inodes=4096") != 0) {
			if (errno == ENOENT)
				continue; // gone since the lstat: nothing left to hide, as if it had never been
			kule_die("hide %s: %s", d, kule_why(errno));
		}
		int fd = open(d, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			kule_die("hide %s: %s", d, kule_why(errno));
		push_fd(tmpfs_hides, fd);
	}
	for (size_t i = 0; i < p->hide_files.n; i++) {
		const char *f = p->hide_files.v[i];
		if (again && !under_tree(f, t))
			continue;
		if (lstat(f, &st) != 0)
			continue;
		if (mount_("/dev/null", f, "", MS_BIND, "") != 0) {
			// A socket of another session (a daemon that just stopped) may go
			// between the lstat and the mount: then there is nothing to hide,
			// the same as when the lstat finds nothing.
			if (errno == ENOENT)
				continue;
			kule_die("hide %s: %s", f, kule_why(errno));
		}
	}
}

static int by_name(const void *a, const void *b) {
	return strcmp(*(char *const *)a, *(char *const *)b);
}

// take_trees clones what must stay visible (the task's folders, openings,
// reveals and keeps into t, the named devices into devs) before anything
// is hidden.
static void take_trees(const struct kule_plan *p, struct trees *t, struct trees *devs) {
	if (p->upper[0])
		take_overlay(t, p);
	else
		take(t, p->copy, p->copy, 1, 0);
	take(t, p->home, p->home, 1, 0);
	take(t, p->cache, p->cache, 1, 0);
	take(t, p->tmp, "/tmp", 1, 0);
	for (size_t i = 0; i < p->writable.n; i++)
		take(t, p->writable.v[i], p->writable.v[i], 1, 0);
	for (size_t i = 0; i < p->readonly.n; i++)
		take(t, p->readonly.v[i], p->readonly.v[i], 0, 0);
	for (size_t i = 0; i < p->keep.n; i++)
		take(t, p->keep.v[i], p->keep.v[i], 0, 0);
	for (size_t i = 0; i < p->devices.n; i++) {
		char *d = kule_join("/dev", p->devices.v[i]);
		take(devs, d, d, 0, 1);
	}
}

// put_back places the kept trees again, shallow first (a stable insertion
// sort: equal depths keep the plan's order).
static void put_back(struct trees *t) {
	for (size_t i = 1; i < t->n; i++) {
		struct tree x = t->v[i];
		size_t j = i;
		for (; j > 0 && kule_depth(t->v[j - 1].target) > kule_depth(x.target); j--)
			t->v[j] = t->v[j - 1];
		t->v[j] = x;
	}
	for (size_t i = 0; i < t->n; i++)
		place(&t->v[i]);
}

// make_dev mounts a /dev of the named devices only, with a private devpts,
// its own /dev/shm and the usual links.
static void make_dev(const struct trees *devs) {
	if (mount_("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k,nr_inodes=1024") != 0)
		kule_die("/dev: %s", kule_why(errno));
	for (size_t i = 0; i < devs->n; i++)
		place(&devs->v[i]);
	if (mkdir("/dev/pts", 0755) != 0 || mkdir("/dev/shm", 0755) != 0)
		kule_die("/dev: mkdir: %s", kule_why(errno));
	if (mount_("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620") != 0)
		kule_die("/dev/pts: %s", kule_why(errno));
	if (mount_("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=64m") != 0)
		kule_die("/dev/shm: %s", kule_why(errno));
	static const char *const dev_links[][2] = {
		{"/dev/ptmx", "pts/ptmx"}, {"/dev/fd", "/proc/self/fd"}, {"/dev/stdin", "/proc/self/fd/0"},
		{"/dev/stdout", "/proc/self/fd/1"}, {"/dev/stderr", "/proc/self/fd/2"},
	};
	for (size_t i = 0; i < sizeof dev_links / sizeof dev_links[0]; i++)
		if (symlink(dev_links[i][1], dev_links[i][0]) != 0)
			kule_die("/dev: symlink %s: %s", dev_links[i][0], kule_why(errno));
}

// make_links makes the plan's links: to the revealed projects beside the
// copy, and the run folders' top-level links inside their hides.
static void make_links(const struct kule_plan *p) {
	for (size_t i = 0; i < p->nlinks; i++) {
		const struct kule_link *l = &p->links[i];
		char *dir = kule_parent(l->path);
		int e = kule_mkdir_all(dir);
		free(dir);
		if (e)
			kule_die("reveal link %s: mkdir: %s", l->path, kule_why(e));
		if (symlink(l->target, l->path) != 0 && errno != EEXIST)
			kule_die("reveal link %s: %s", l->path, kule_why(errno));
	}
}

// seal makes the hiding tmpfs and /dev read-only too (by descriptor: a hide
// may since lie beneath another mount) and closes every descriptor the
// mounts were made with.
static void seal(struct trees *t, struct trees *devs, struct fds *tmpfs_hides) {
	for (size_t i = 0; i < tmpfs_hides->n; i++)
		if (k_mount_setattr(tmpfs_hides->v[i], "", AT_EMPTY_PATH, K_MOUNT_ATTR_RDONLY, 0) != 0)
			kule_die("make a hiding tmpfs read-only: %s", kule_why(errno));
	if (k_mount_setattr(AT_FDCWD, "/dev", 0, K_MOUNT_ATTR_RDONLY, 0) != 0)
		kule_die("make /dev read-only: %s", kule_why(errno));
	for (size_t i = 0; i < t->n; i++)
		kule_close(t->v[i].fd, "a kept tree");
	for (size_t i = 0; i < devs->n; i++)
		kule_close(devs->v[i].fd, "a device");
	for (size_t i = 0; i < tmpfs_hides->n; i++)
		kule_close(tmpfs_hides->v[i], "a hiding tmpfs");
	if (empty_tree >= 0)
		kule_close(empty_tree, "the empty tmpfs");
}

// kule_setup_mounts builds the sandbox's view of the file system in PID 1's
// own mount namespace. Order matters: clone what must stay visible, make
// everything read-only, hide, put the clones back, hide again what lies in
// them, then /dev, /proc and the reveal links.
void kule_setup_mounts(struct kule_plan *p) {
	if (mount_("", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		kule_die("mount namespace: make / private: %s", kule_why(errno));
	struct trees t = {0}, devs = {0};
	take_trees(p, &t, &devs);

	// Every mount: read-only, no setuid, no devices.
	if (k_mount_setattr(AT_FDCWD, "/", K_AT_RECURSIVE, K_MOUNT_ATTR_RDONLY | K_MOUNT_ATTR_NOSUID | K_MOUNT_ATTR_NODEV, 0) != 0)
		kule_die("make every mount read-only: %s", kule_why(errno));

	struct fds tmpfs_hides = {0};
	if (p->hide_dirs.n > 1)
		qsort(p->hide_dirs.v, p->hide_dirs.n, sizeof(char *), by_name);
	hide(p, &t, &tmpfs_hides, 0);
	put_back(&t);
	hide(p, &t, &tmpfs_hides, 1);
	make_dev(&devs);

	// A /proc of this PID namespace only.
	if (mount_("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "") != 0)
		kule_die("/proc: %s", kule_why(errno));

	// The copy sits next to links to the revealed projects.
	make_links(p);
	seal(&t, &devs, &tmpfs_hides);
}
