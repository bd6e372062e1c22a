// Package depaware holds the checked-in list of the packages the kule
// binary is built from (kule.deps) and the test that keeps it true: a
// change that adds or drops a dependency of the binary changes the list in
// the same commit, where a reviewer sees it, and packages the trusted
// binary must never link (SSH, OpenPGP, git transports, profiling
// handlers, a browser driver) fail the test even when the list was
// refreshed to name them.
//
// Refresh the list with `go test ./internal/depaware -update`.
package depaware
