// Package differs makes the built-in differs kule-plugins serves, by the
// names of plugins/builtin's table. It links tree-sitter and its C
// grammars, which kule itself never does: kule chooses a differ by the
// table alone.
package differs

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

var byName = map[string]func() differ.Differ{
	"differ/go":         golang.New,
	"differ/rust":       rust.New,
	"differ/typescript": typescript.New,
	"differ/javascript": javascript.New,
	"differ/python":     python.New,
	"differ/csharp":     csharp.New,
	"differ/markdown":   markdown.New,
	"differ/json":       jsondiffer.New,
	"differ/toml":       tomldiffer.New,
	"differ/text":       text.New,
}

// New makes the built-in differ named "differ/<name>".
func New(name string) (differ.Differ, bool) {
	mk, ok := byName[name]
	if !ok {
		return nil, false
	}
	return mk(), true
}
