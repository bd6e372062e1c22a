// Package python is the built-in differ for Python: it names classes
// (`class Foo`, nested `class Foo.Inner`), functions, methods
// (`method Foo.bar`), module variables and class attributes, each with its
// decorators and the comments right above it, using tree-sitter-python.
// Overloads (`@overload`) are told apart by their parameter types.
package python

import (
	"strings"

	sitter "github.com/tree-sitter/go-tree-sitter"
	tspython "github.com/tree-sitter/tree-sitter-python/bindings/go"

	"github.com/kulehq/kule/plugins/differ/internal/treesit"
	"github.com/kulehq/kule/plugins/differ/names"
	"github.com/kulehq/kule/sdk/differ"
)

var grammar = treesit.Grammar(func() *sitter.Language { return sitter.NewLanguage(tspython.Language()) })

var lang = &treesit.Lang{
	Name:    "python",
	Exts:    names.Python,
	Grammar: func(string) *sitter.Language { return grammar() },
	Visit:   func(w *treesit.Walker, root *sitter.Node) { block(w, root, "", "") },
}

// New returns the Python differ; it is also a differ.Merger.
func New() differ.Differ { return treesit.Differ{L: lang} }

func isLead(n *sitter.Node) bool { return n.Kind() == "comment" }

// block names the definitions directly in a module or class body. class is
// the qualified class name ("Foo.Inner") or "" at module level.
func block(w *treesit.Walker, body *sitter.Node, class, parent string) {
	kids := treesit.Children(body)
	// Names defined more than once in this body (overloads, properties with
	// setters) get their parameter types.
	count := map[string]int{}
	for _, n := range kids {
		if d := definition(w, n); d != nil && d.Kind() == "function_definition" {
			count[w.Field(d, "name")]++
		}
	}
	for i, n := range kids {
		if n.Kind() == "ERROR" {
			block(w, n, class, parent)
			continue
		}
		start := w.Lead(kids, i, isLead)
		d := definition(w, n)
		if n.Kind() == "type_alias_statement" { // type Pair[K, V] = tuple[K, V]
			name, _, _ := strings.Cut(w.Field(n, "left"), "[")
			if class != "" {
				name = class + "." + name
			}
			w.Add("type", name, start, n.EndByte(), parent)
			continue
		}
		if d == nil {
			if class == "" || parent != "" {
				assignment(w, n, start, class, parent)
			}
			continue
		}
		name := w.Field(d, "name")
		qual := name
		if class != "" {
			qual = class + "." + name
		}
		switch d.Kind() {
		case "class_definition":
			got := w.Add("class", qual, start, n.EndByte(), parent)
			if b := w.Child(d, "body"); b != nil {
				block(w, b, qual, got)
			}
		case "function_definition":
			kind := "function"
			if class != "" {
				kind = "method"
			}
			if count[name] > 1 {
				qual += signature(w, w.Child(d, "parameters"))
			}
			w.Add(kind, qual, start, n.EndByte(), parent)
		}
	}
}

// definition is the class or function n defines, looking through
// decorators; nil for other statements.
func definition(w *treesit.Walker, n *sitter.Node) *sitter.Node {
	switch n.Kind() {
	case "class_definition", "function_definition":
		return n
	case "decorated_definition":
		return w.Child(n, "definition")
	}
	return nil
}

// assignment names `NAME = ...` and `NAME: T = ...` at module or class level.
func assignment(w *treesit.Walker, n *sitter.Node, start uint, class, parent string) {
	if n.Kind() != "expression_statement" || n.NamedChildCount() != 1 {
		return
	}
	a := n.NamedChild(0)
	if a.Kind() != "assignment" {
		return
	}
	left := w.Child(a, "left")
	if left == nil || left.Kind() != "identifier" {
		return
	}
	if class != "" {
		w.Add("attribute", class+"."+w.Text(left), start, n.EndByte(), parent)
		return
	}
	w.Add("variable", w.Text(left), start, n.EndByte(), parent)
}

// signature renders the parameter types of a def, "(int, str)", without
// self/cls; an untyped parameter shows its name.
func signature(w *treesit.Walker, params *sitter.Node) string {
	if params == nil {
		return "()"
	}
	var parts []string
	for _, p := range treesit.Children(params) {
		var s string
		switch p.Kind() {
		case "identifier":
			s = w.Text(p)
			if s == "self" || s == "cls" {
				continue
			}
		case "typed_parameter", "typed_default_parameter":
			s = w.Field(p, "type")
		case "default_parameter":
			s = w.Field(p, "name")
		default:
			s = w.Text(p)
		}
		parts = append(parts, treesit.Squash(s))
	}
	return "(" + strings.Join(parts, ", ") + ")"
}
