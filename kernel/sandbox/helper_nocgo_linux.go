//go:build linux && !cgo

package sandbox

// helperInC: a binary built without cgo has no helper (pid1_linux.c is C);
// HelperMain refuses the runs it is started for.
const helperInC = false
