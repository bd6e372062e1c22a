//go:build linux

package sandbox

import ll "github.com/landlock-lsm/go-landlock/landlock/syscall"

// landlockABI is the Landlock ABI the kernel offers, 0 for none. The
// ruleset itself is made by the C helper (pid1_linux.c), as go-landlock's
// V7 with best effort would make it.
func landlockABI() int {
	v, err := ll.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
}
