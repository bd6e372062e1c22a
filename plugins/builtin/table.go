// Package builtin is the table of Kule's built-in plugins. They run out of
// process, served by kule-plugins: the kernel starts `kule-plugins __plugin
// differ/<name>` through the same host path as a third-party plugin. kule
// links this table to choose a plugin for a file: the light differs' own
// Accepts, the tree-sitter differs' extensions (plugins/differ/names) and
// the previewers' names (plugins/previewer/names), so that tree-sitter, its
// C grammars and the spreadsheet and Markdown libraries stay out of every
// kule command's start; kule-plugins links the differs and previewers
// themselves (plugins/builtin/differs, plugins/builtin/previewers). This table is the only init-style
// registration Kule has.
package builtin

import (
	"github.com/kulehq/kule/plugins/differ/golang"
	jsondiffer "github.com/kulehq/kule/plugins/differ/json"
	"github.com/kulehq/kule/plugins/differ/markdown"
	"github.com/kulehq/kule/plugins/differ/names"
	"github.com/kulehq/kule/plugins/differ/text"
	tomldiffer "github.com/kulehq/kule/plugins/differ/toml"

	previewers "github.com/kulehq/kule/plugins/previewer/names"
)

// Differ is one built-in differ, as kule knows it: its name and the files
// it reads. kule-plugins makes the differ itself (plugins/builtin/differs).
type Differ struct {
	Name    string            // "differ/<name>", as `kule-plugins __plugin` takes it
	Accepts func(string) bool // the differ's own Accepts
}

// treeSitter is the Accepts of a tree-sitter differ, from its extensions
// alone (plugins/differ/names): its grammars stay kule-plugins'.
func treeSitter(exts []string) func(string) bool {
	return func(p string) bool { return names.Accepts(p, exts) }
}

// Differs are the built-in differs, in precedence order: when two accept the
// same file, the first one in this list reads it. Add a differ with one line
// here and one in plugins/builtin/differs.
var Differs = []Differ{
	{Name: "differ/go", Accepts: golang.Differ{}.Accepts},
	{Name: "differ/rust", Accepts: treeSitter(names.Rust)},
	{Name: "differ/typescript", Accepts: treeSitter(names.TypeScript)},
	{Name: "differ/javascript", Accepts: treeSitter(names.JavaScript)},
	{Name: "differ/python", Accepts: treeSitter(names.Python)},
	{Name: "differ/csharp", Accepts: treeSitter(names.CSharp)},
	{Name: "differ/markdown", Accepts: markdown.Differ{}.Accepts},
	{Name: "differ/json", Accepts: jsondiffer.Differ{}.Accepts},
	{Name: "differ/toml", Accepts: tomldiffer.Differ{}.Accepts},
	{Name: "differ/text", Accepts: text.Differ{}.Accepts},
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
	{Name: "previewer/image", Accepts: previewers.Image},
	{Name: "previewer/markdown", Accepts: previewers.Markdown},
	{Name: "previewer/csv", Accepts: previewers.CSV},
	{Name: "previewer/xlsx", Accepts: previewers.Sheet},
	{Name: "previewer/docx", Accepts: previewers.Word},
	{Name: "previewer/text", Accepts: previewers.Text},
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
