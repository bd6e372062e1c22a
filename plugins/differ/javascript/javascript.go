// Package javascript is the built-in differ for JavaScript and JSX: it names
// functions, classes and their members (`method Foo.bar`, `get Foo.size`),
// and top-level variables, with decorators and doc comments, using
// tree-sitter-javascript.
package javascript

import (
	sitter "github.com/tree-sitter/go-tree-sitter"
	tsjs "github.com/tree-sitter/tree-sitter-javascript/bindings/go"

	"github.com/kulehq/kule/plugins/differ/internal/ecma"
	"github.com/kulehq/kule/plugins/differ/internal/treesit"
	"github.com/kulehq/kule/plugins/differ/names"
	"github.com/kulehq/kule/sdk/differ"
)

var grammar = treesit.Grammar(func() *sitter.Language { return sitter.NewLanguage(tsjs.Language()) })

var lang = &treesit.Lang{
	Name:    "javascript",
	Exts:    names.JavaScript,
	Grammar: func(string) *sitter.Language { return grammar() },
	Visit:   ecma.Visit,
}

// New returns the JavaScript (and JSX) differ; it is also a differ.Merger.
func New() differ.Differ { return treesit.Differ{L: lang} }
