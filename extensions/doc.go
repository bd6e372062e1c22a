// Package extensions holds Kule's JavaScript extensions outside the
// kernel: the extension host (host), the skeleton `kule ext new` writes
// (skeleton), the SDK's TypeScript declarations (sdk/kule.d.ts) and three
// examples (examples/). The kernel never imports it; it starts the host as
// `kule-plugins __plugin extension/host` and talks to it through sdk/extension.
package extensions
