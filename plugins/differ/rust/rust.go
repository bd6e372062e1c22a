// Package rust is the built-in differ for Rust: it names functions, structs,
// enums, traits, impls and their methods (`method Task::commit`,
// `method <Task as Display>::fmt`; an inherent impl is `impl <Task>`), modules, constants and macros, each with
// its doc comments and attributes, using tree-sitter-rust.
package rust

import (
	"strings"

	sitter "github.com/tree-sitter/go-tree-sitter"
	tsrust "github.com/tree-sitter/tree-sitter-rust/bindings/go"

	"github.com/kulehq/kule/plugins/differ/internal/treesit"
	"github.com/kulehq/kule/plugins/differ/names"
	"github.com/kulehq/kule/sdk/differ"
)

var grammar = treesit.Grammar(func() *sitter.Language { return sitter.NewLanguage(tsrust.Language()) })

var lang = &treesit.Lang{
	Name:    "rust",
	Exts:    names.Rust,
	Grammar: func(string) *sitter.Language { return grammar() },
	Visit:   func(w *treesit.Walker, root *sitter.Node) { items(w, root, "", "", "") },
}

// New returns the Rust differ; it is also a differ.Merger.
func New() differ.Differ { return treesit.Differ{L: lang} }

func isLead(n *sitter.Node) bool {
	switch n.Kind() {
	case "line_comment", "block_comment", "attribute_item":
		return true
	}
	return false
}

var kinds = map[string]string{
	"struct_item": "struct", "enum_item": "enum", "union_item": "union",
	"trait_item": "trait", "type_item": "type", "const_item": "const",
	"static_item": "static", "macro_definition": "macro", "mod_item": "mod",
	"function_item": "fn", "function_signature_item": "fn", "impl_item": "impl",
}

// items names the items in a source file or a block body. mod is the module
// path prefix ("tests::"), self the type methods belong to ("Task" or
// "<Task as Display>"), parent the enclosing entity's name.
func items(w *treesit.Walker, body *sitter.Node, mod, self, parent string) {
	kids := treesit.Children(body)
	for i, n := range kids {
		k := n.Kind()
		if k == "ERROR" {
			items(w, n, mod, self, parent)
			continue
		}
		kind, ok := kinds[k]
		if !ok {
			continue
		}
		start := w.Lead(kids, i, isLead)
		name := w.Field(n, "name")
		switch k {
		case "impl_item":
			typ := w.Text(w.Child(n, "type"))
			// An inherent impl is named like Rust's qualified path, <Task>,
			// so it never shares a name with the struct it implements.
			name = "<" + mod + typ + ">"
			selfName := mod + stripGenerics(typ)
			if tr := w.Child(n, "trait"); tr != nil {
				name = w.Text(tr) + " for " + mod + typ
				selfName = "<" + selfName + " as " + stripGenerics(w.Text(tr)) + ">"
			}
			got := w.Add(kind, name, start, n.EndByte(), parent)
			if b := w.Child(n, "body"); b != nil {
				items(w, b, mod, selfName, got)
			}
			continue
		case "trait_item":
			got := w.Add(kind, mod+name, start, n.EndByte(), parent)
			if b := w.Child(n, "body"); b != nil {
				items(w, b, mod, mod+name, got)
			}
			continue
		case "mod_item":
			got := w.Add(kind, mod+name, start, n.EndByte(), parent)
			if b := w.Child(n, "body"); b != nil {
				items(w, b, mod+name+"::", "", got)
			}
			continue
		}
		if self != "" {
			if kind == "fn" {
				kind = "method"
			}
			name = self + "::" + name
		} else {
			name = mod + name
		}
		w.Add(kind, name, start, n.EndByte(), parent)
	}
}

// stripGenerics turns "Stack<T>" into "Stack" and "fmt::Display" stays.
func stripGenerics(s string) string {
	if i := strings.IndexByte(s, '<'); i > 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}
