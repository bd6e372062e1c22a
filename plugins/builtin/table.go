// Package builtin is the table of plugins compiled into the kule binary. They
// still run out of process: the kernel starts `kule __plugin differ/<name>`
// (the binary re-executing itself) through the same host path as a
// third-party plugin. This table is the only init-style registration Kule has.
package builtin

import (
	"github.com/kulehq/kule/plugins/differ/csharp"
	"github.com/kulehq/kule/plugins/differ/golang"
	"github.com/kulehq/kule/plugins/differ/javascript"
	jsondiffer "github.com/kulehq/kule/plugins/differ/json"
	"github.com/kulehq/kule/plugins/differ/markdown"
	"github.com/kulehq/kule/plugins/differ/python"
	"github.com/kulehq/kule/plugins/differ/rust"
	"github.com/kulehq/kule/plugins/differ/text"
	tomldiffer "github.com/kulehq/kule/plugins/differ/toml"
	"github.com/kulehq/kule/plugins/differ/typescript"
	"github.com/kulehq/kule/sdk/differ"
)

// Differ is one built-in differ.
type Differ struct {
	Name string               // "differ/<name>", as `kule __plugin` takes it
	New  func() differ.Differ // a fresh differ
}

// Differs are the built-in differs, in precedence order: when two accept the
// same file, the first one in this list reads it. Add a differ with one line.
var Differs = []Differ{
	{Name: "differ/go", New: golang.New},
	{Name: "differ/rust", New: rust.New},
	{Name: "differ/typescript", New: typescript.New},
	{Name: "differ/javascript", New: javascript.New},
	{Name: "differ/python", New: python.New},
	{Name: "differ/csharp", New: csharp.New},
	{Name: "differ/markdown", New: markdown.New},
	{Name: "differ/json", New: jsondiffer.New},
	{Name: "differ/toml", New: tomldiffer.New},
	{Name: "differ/text", New: text.New},
}

// Lookup returns the built-in differ named "differ/<name>".
func Lookup(name string) (Differ, bool) {
	for _, d := range Differs {
		if d.Name == name {
			return d, true
		}
	}
	return Differ{}, false
}
