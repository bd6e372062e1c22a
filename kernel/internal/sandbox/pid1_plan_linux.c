//go:build linux && cgo

// The plan's decoder: plancodec.go's form, read whole and strictly.

#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "pid1_linux.h"

const char kule_plan_shape[] =
	"Args:[]string;Dir:string;Env:[]string;Copy:string;Tmp:string;Home:string;Cache:string;"
	"Upper:string;Work:string;"
	"FSize:int64;Writable:[]string;ReadOnly:[]string;Keep:[]string;"
	"HideDirs:[]string;HideFiles:[]string;Links:[]sandbox.link;Path:string;Target:string;"
	"Devices:[]string;NetNS:bool;ProxyPort:int;"
	"Landlock:sandbox.landlockRuleset;HandledFS:int64;HandledNet:int64;Scoped:int64;"
	"Rules:[]sandbox.landlockRule;Path:string;Access:int64;Port:int;Optional:bool;Seccomp:int;"
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
const char kule_plan_not_ours[] = "not a plan of this build", kule_plan_other_build[] = "another build's plan";

const char *kule_plan_decode(const unsigned char *b, size_t n, struct kule_plan *p) {
	memset(p, 0, sizeof *p);
	size_t m = sizeof plan_magic - 1;
	if (n < m || memcmp(b, plan_magic, m) != 0)
		return kule_plan_not_ours;
	// Every string and list of the plan fits 32 bytes an input byte.
	size_t size = 32 * n + 1024;
	char *arena = malloc(size);
	if (!arena)
		return "no memory for the plan";
	struct decoder d = {b + m, n - m, NULL, arena, arena + size};
	p->shape = str(&d);
	if (!d.err && strcmp(p->shape, kule_plan_shape) != 0)
		d.err = kule_plan_other_build;
	p->args = strs(&d);
	p->dir = str(&d);
	p->env = strs(&d);
	p->copy = str(&d);
	p->tmp = str(&d);
	p->home = str(&d);
	p->cache = str(&d);
	p->upper = str(&d);
	p->work = str(&d);
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
	p->landlock.handled_fs = varint(&d);
	p->landlock.handled_net = varint(&d);
	p->landlock.scoped = varint(&d);
	size_t nr = count(&d, 4);
	if (nr > 0) {
		p->landlock.rules = take_mem(&d, nr * sizeof(struct kule_rule));
		for (size_t i = 0; i < nr && !d.err; i++) {
			p->landlock.rules[i].path = str(&d);
			p->landlock.rules[i].access = varint(&d);
			p->landlock.rules[i].port = varint(&d);
			p->landlock.rules[i].optional = flag(&d);
		}
		p->landlock.nrules = d.err ? 0 : nr;
	}
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
