// Package csharp is the built-in differ for C#: it names namespaces, types
// (classes, structs, records, interfaces, enums, delegates, nested types)
// and their members — methods and constructors with their parameter types
// (`method Task.Commit(int, string)`), properties, fields, events, indexers
// and operators — each with its attributes and /// doc comments, using
// tree-sitter-c-sharp.
package csharp

import (
	"strings"

	sitter "github.com/tree-sitter/go-tree-sitter"
	tscs "github.com/tree-sitter/tree-sitter-c-sharp/bindings/go"

	"github.com/kulehq/kule/plugins/differ/internal/treesit"
	"github.com/kulehq/kule/plugins/differ/names"
	"github.com/kulehq/kule/sdk/differ"
)

var grammar = treesit.Grammar(func() *sitter.Language { return sitter.NewLanguage(tscs.Language()) })

var lang = &treesit.Lang{
	Name:    "csharp",
	Exts:    names.CSharp,
	Grammar: func(string) *sitter.Language { return grammar() },
	Visit:   func(w *treesit.Walker, root *sitter.Node) { decls(w, root, "", "") },
}

// New returns the C# differ; it is also a differ.Merger.
func New() differ.Differ { return treesit.Differ{L: lang} }

func isLead(n *sitter.Node) bool { return n.Kind() == "comment" }

var typeKinds = map[string]string{
	"class_declaration": "class", "struct_declaration": "struct",
	"record_declaration": "record", "record_struct_declaration": "record",
	"interface_declaration": "interface", "enum_declaration": "enum",
}

// decls names the declarations in a compilation unit, a namespace body or a
// type body. typ is the enclosing type's qualified name ("Task.Inner").
func decls(w *treesit.Walker, body *sitter.Node, typ, parent string) {
	kids := treesit.Children(body)
	for i, n := range kids {
		k := n.Kind()
		start := w.Lead(kids, i, isLead)
		end := n.EndByte()
		name := w.Field(n, "name")
		member := func(s string) string {
			if typ == "" {
				return s
			}
			return typ + "." + s
		}
		switch k {
		case "ERROR", "declaration_list":
			decls(w, n, typ, parent)
		case "namespace_declaration":
			got := w.Add("namespace", name, start, end, parent)
			if b := w.Child(n, "body"); b != nil {
				decls(w, b, "", got)
			}
		case "file_scoped_namespace_declaration":
			// Its members follow it as siblings; it is glue.
		case "class_declaration", "struct_declaration", "record_declaration", "record_struct_declaration", "interface_declaration":
			q := member(name)
			got := w.Add(typeKinds[k], q, start, end, parent)
			if b := w.Child(n, "body"); b != nil {
				decls(w, b, q, got)
			}
		case "enum_declaration":
			w.Add("enum", member(name), start, end, parent)
		case "delegate_declaration":
			w.Add("delegate", member(name)+params(w, n), start, end, parent)
		case "method_declaration":
			w.Add("method", member(name)+params(w, n), start, end, parent)
		case "constructor_declaration":
			w.Add("constructor", member(name)+params(w, n), start, end, parent)
		case "destructor_declaration":
			w.Add("destructor", member("~"+name), start, end, parent)
		case "operator_declaration":
			w.Add("operator", member(w.Field(n, "operator"))+params(w, n), start, end, parent)
		case "conversion_operator_declaration":
			w.Add("operator", member(w.Field(n, "type"))+params(w, n), start, end, parent)
		case "indexer_declaration":
			w.Add("indexer", member("this")+params(w, n), start, end, parent)
		case "property_declaration":
			w.Add("property", member(name), start, end, parent)
		case "event_declaration":
			w.Add("event", member(name), start, end, parent)
		case "field_declaration", "event_field_declaration":
			kind := "field"
			if k == "event_field_declaration" {
				kind = "event"
			}
			var names []string
			for _, c := range treesit.Children(n) {
				if c.Kind() == "variable_declaration" {
					for _, v := range treesit.Children(c) {
						if v.Kind() == "variable_declarator" {
							names = append(names, w.Field(v, "name"))
						}
					}
				}
			}
			w.Add(kind, member(strings.Join(names, ", ")), start, end, parent)
		case "global_statement":
			if c := n.NamedChild(0); c != nil && c.Kind() == "local_function_statement" {
				w.Add("function", w.Field(c, "name")+params(w, c), start, end, parent)
			}
		}
	}
}

// params renders parameter types, "(int, string)".
func params(w *treesit.Walker, n *sitter.Node) string {
	p := w.Child(n, "parameters")
	if p == nil {
		for _, c := range treesit.Children(n) {
			if c.Kind() == "parameter_list" || c.Kind() == "bracketed_parameter_list" {
				p = c
				break
			}
		}
	}
	if p == nil {
		return "()"
	}
	var parts []string
	for _, c := range treesit.Children(p) {
		if c.Kind() != "parameter" {
			continue
		}
		t := w.Field(c, "type")
		if t == "" {
			t = w.Field(c, "name")
		}
		// ref/out/params modifiers are part of the signature.
		for _, m := range treesit.Children(c) {
			if m.Kind() == "modifier" || m.Kind() == "parameter_modifier" {
				t = w.Text(m) + " " + t
			}
		}
		parts = append(parts, treesit.Squash(t))
	}
	return "(" + strings.Join(parts, ", ") + ")"
}
