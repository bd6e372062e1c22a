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

	csvpreviewer "github.com/kulehq/kule/plugins/previewer/csv"
	docxpreviewer "github.com/kulehq/kule/plugins/previewer/docx"
	imagepreviewer "github.com/kulehq/kule/plugins/previewer/image"
	mdpreviewer "github.com/kulehq/kule/plugins/previewer/markdown"
	textpreviewer "github.com/kulehq/kule/plugins/previewer/text"
	xlsxpreviewer "github.com/kulehq/kule/plugins/previewer/xlsx"
	"github.com/kulehq/kule/sdk/previewer"
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

// ExtensionHost is the built-in extension host, `kule __plugin
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

// Previewer is one built-in previewer.
type Previewer struct {
	Name string                     // "previewer/<name>", as `kule __plugin` takes it
	New  func() previewer.Previewer // a fresh previewer
}

// Previewers are the built-in previewers, in precedence order: the first
// that accepts a file's name previews it; text, which accepts any name that
// is not a known binary format, comes last.
var Previewers = []Previewer{
	{Name: "previewer/image", New: imagepreviewer.New},
	{Name: "previewer/markdown", New: mdpreviewer.New},
	{Name: "previewer/csv", New: csvpreviewer.New},
	{Name: "previewer/xlsx", New: xlsxpreviewer.New},
	{Name: "previewer/docx", New: docxpreviewer.New},
	{Name: "previewer/text", New: textpreviewer.New},
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
