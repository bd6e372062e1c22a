package bigalloc

import "golang.org/x/sys/unix"

func advise(start, length uintptr) {
	_, _, _ = unix.Syscall(unix.SYS_MADVISE, start, length, unix.MADV_HUGEPAGE)
}
