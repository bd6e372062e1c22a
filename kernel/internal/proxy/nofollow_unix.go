//go:build unix

package proxy

import "syscall"

// oNoFollow refuses a link at the last component (O_EXCL does too; both, to
// be plain about it).
const oNoFollow = syscall.O_NOFOLLOW
