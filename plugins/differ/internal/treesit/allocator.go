package treesit

/*
#include <stddef.h>
void ts_set_allocator(void *(*new_malloc)(size_t), void *(*new_calloc)(size_t, size_t), void *(*new_realloc)(void *, size_t), void (*new_free)(void *));
static void kule_ts_default_allocator(void) { ts_set_allocator(NULL, NULL, NULL, NULL); }
*/
import "C"

import "sync"

// useLibcAllocator hands tree-sitter back its default allocator (libc
// malloc). The Go binding routes every allocation of the C library through
// a cgo callback into Go that then calls C.malloc anyway; that round trip
// is a large part of a parse of a big file (BenchmarkAllocator). Memory
// stays libc memory either way, so trees made before and after mix safely.
var useLibcAllocator = sync.OnceFunc(libcAllocator)

func libcAllocator() { C.kule_ts_default_allocator() }
