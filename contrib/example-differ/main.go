// Command kule-differ-ini is an example third-party Kule differ for INI
// files: build it, write its sha256 into plugin.toml (build.sh does both),
// then `kule plugins install DIR` and `kule plugins approve ini`.
package main

import (
	"example.com/kule-ini-differ/ini"
	"github.com/kulehq/kule/sdk/plugin"
)

func main() { plugin.ServeDiffer(ini.New()) }
