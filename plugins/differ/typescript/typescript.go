// Package typescript is the built-in differ for TypeScript and TSX: it names
// functions (overloads by parameter types), classes and their members
// (`method Foo.bar`, `get Foo.size`), interfaces, type aliases, enums,
// namespaces and top-level variables, with decorators and doc comments,
// using tree-sitter-typescript.
package typescript

import (
	"path/filepath"
	"strings"

	sitter "github.com/tree-sitter/go-tree-sitter"
	tsts "github.com/tree-sitter/tree-sitter-typescript/bindings/go"

	"github.com/kulehq/kule/plugins/differ/internal/ecma"
	"github.com/kulehq/kule/plugins/differ/internal/treesit"
	"github.com/kulehq/kule/plugins/differ/names"
	"github.com/kulehq/kule/sdk/differ"
)

var (
	ts  = treesit.Grammar(func() *sitter.Language { return sitter.NewLanguage(tsts.LanguageTypescript()) })
	tsx = treesit.Grammar(func() *sitter.Language { return sitter.NewLanguage(tsts.LanguageTSX()) })
)

var lang = &treesit.Lang{
	Name: "typescript",
	Exts: names.TypeScript,
	Grammar: func(path string) *sitter.Language {
		if strings.EqualFold(filepath.Ext(path), ".tsx") {
			return tsx()
		}
		return ts()
	},
	Visit: ecma.Visit,
}

// New returns the TypeScript (and TSX) differ; it is also a differ.Merger.
func New() differ.Differ { return treesit.Differ{L: lang} }
