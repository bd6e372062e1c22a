// Package sdk holds the JavaScript SDK's TypeScript declarations, kule.d.ts:
// the one copy that editors read here and that `kule ext new` writes beside
// a new extension's main.js (extensions/skeleton embeds it from here).
package sdk

import _ "embed"

// DTS is kule.d.ts: every call the host gives an extension's scripts.
//
//go:embed kule.d.ts
var DTS []byte
