// Package builtin is the table of Kule's built-in plugins. They run out of
// process, served by kule-plugins: the kernel starts `kule-plugins __plugin
// differ/<name>` through the same host path as a third-party plugin. kule
// links this table to choose a plugin for a file: the differs, which are
// light, and the previewers' names only (plugins/previewer/names), so that
// the spreadsheet and Markdown libraries stay out of every kule command's
// start; kule-plugins links the previewers themselves
// (plugins/builtin/previewers). This table is the only init-style
// registration Kule has.
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

	"github.com/kulehq/kule/plugins/previewer/names"
)

// Differ is one built-in differ.
type Differ struct {
	Name string               // "differ/<name>", as `kule-plugins __plugin` takes it
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

// ExtensionHost is the built-in extension host, `kule-plugins __plugin
// extension/host`. Plugins may not import extensions/, so cmd/kule serves it
// from extensions/host under this name.
const ExtensionHost = "extension/host"

// Lookup returns the built-in differ named "differ/<name>".
func Lookup(name string) (Differ, bool) {
	for _, d := range Differs {
		if d.Name == name {
			return d, true
		}
	}
	return Differ{}, false
}

// Previewer is one built-in previewer, as kule knows it: its name and the
// files it reads.
type Previewer struct {
	Name    string            // "previewer/<name>", as `kule-plugins __plugin` takes it
	Accepts func(string) bool // the previewer's own Accepts (plugins/previewer/names)
}

// Previewers are the built-in previewers, in precedence order: the first
// that accepts a file's name previews it; text, which accepts any name that
// is not a known binary format, comes last.
var Previewers = []Previewer{
	{Name: "previewer/image", Accepts: names.Image},
	{Name: "previewer/markdown", Accepts: names.Markdown},
	{Name: "previewer/csv", Accepts: names.CSV},
	{Name: "previewer/xlsx", Accepts: names.Sheet},
	{Name: "previewer/docx", Accepts: names.Word},
	{Name: "previewer/text", Accepts: names.Text},
}

// LookupPreviewer returns the built-in previewer named "previewer/<name>".
func LookupPreviewer(name string) (Previewer, bool) {
	for _, p := range Previewers {
		if p.Name == name {
			return p, true
		}
	}
	return Previewer{}, false
}
