//go:build linux && !amd64

package sandbox

// archRefusedCalls: aarch64 has no call the filter refuses beyond the
// common ones.
var archRefusedCalls []refusedCall
