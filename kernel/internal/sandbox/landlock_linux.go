//go:build linux

package sandbox

import ll "github.com/landlock-lsm/go-landlock/landlock/syscall"

// landlockABI is the Landlock ABI the kernel offers, 0 for none. The
// command's ruleset for it is landlockRules (landlock.go), as go-landlock's
// V7 with best effort would make it; the C helper applies that ruleset.
func landlockABI() int {
	v, err := ll.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
}
