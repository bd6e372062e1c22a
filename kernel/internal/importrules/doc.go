// Package importrules guards the direction of every import in Kule
// (ARCHITECTURE.md §1), the way tailscale's dependency tests do: its test
// lists every package of the module with `go list -deps` and fails on
//
//   - kernel/... depending on plugins/... or extensions/...;
//   - sdk/... depending on kernel/..., plugins/... or extensions/...;
//   - plugins/... depending on kernel/... or extensions/...;
//   - contrib/example-differ/... depending on anything of Kule but sdk/;
//   - a package outside kernel/ importing any kernel package but the API,
//     package kernel (and the daemon's packages, while they live there,
//     and kernel/agentrun, which is built on the Kernel).
//
// The package has no code; it exists for its test.
package importrules
