// Command kule-previewer-ini is an example third-party Kule previewer for
// INI files: build it, write its sha256 into plugin.toml (build.sh does
// both), then `kule plugins install DIR` and `kule plugins approve ini-preview`.
package main

import (
	"example.com/kule-ini-previewer/ini"
	"github.com/kulehq/kule/sdk/plugin"
)

func main() { plugin.ServePreviewer(ini.New()) }
