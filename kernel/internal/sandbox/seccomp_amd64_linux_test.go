//go:build linux && amd64

package sandbox

import "golang.org/x/sys/unix"

// archRefusedCalls are the refused calls only x86_64 has.
var archRefusedCalls = []refusedCall{
	{"iopl", func() error { return sys(unix.SYS_IOPL, 0) }},
	{"ioperm", func() error { return sys(unix.SYS_IOPERM, 0, 0, 0) }},
	{"uselib", func() error { return sys(unix.SYS_USELIB, 0) }},
}
