// Package ecma names the entities of JavaScript and TypeScript syntax trees
// (both tree-sitter grammars share their node names): functions, classes and
// their members, interfaces, type aliases, enums, namespaces and top-level
// variables, each with its decorators and the comments right above it.
package ecma

import (
	"strings"

	sitter "github.com/tree-sitter/go-tree-sitter"

	"github.com/kulehq/kule/plugins/differ/internal/treesit"
)

// Visit names the entities under a program node.
func Visit(w *treesit.Walker, root *sitter.Node) { statements(w, root, "", "") }

func isLead(n *sitter.Node) bool {
	k := n.Kind()
	return k == "comment" || k == "decorator"
}

// declOf looks through export and ambient (declare) wrappers.
func declOf(w *treesit.Walker, n *sitter.Node) *sitter.Node {
	switch n.Kind() {
	case "export_statement":
		if d := w.Child(n, "declaration"); d != nil {
			return declOf(w, d)
		}
		if v := w.Child(n, "value"); v != nil {
			return v
		}
		return nil
	case "ambient_declaration":
		if n.NamedChildCount() > 0 {
			for _, c := range treesit.Children(n) {
				if c.Kind() != "comment" {
					return declOf(w, c)
				}
			}
		}
		return nil
	case "expression_statement":
		if n.NamedChildCount() == 1 {
			if c := n.NamedChild(0); c.Kind() == "internal_module" {
				return c
			}
		}
	}
	return n
}

// statements names the declarations in a program or namespace body; ns is
// the namespace prefix ("NS.").
func statements(w *treesit.Walker, body *sitter.Node, ns, parent string) {
	kids := treesit.Children(body)
	count := overloads(w, kids, func(n *sitter.Node) *sitter.Node { return declOf(w, n) })
	for i, n := range kids {
		if n.Kind() == "ERROR" {
			statements(w, n, ns, parent)
			continue
		}
		d := declOf(w, n)
		if d == nil {
			continue
		}
		start := w.Lead(kids, i, isLead)
		end := n.EndByte()
		name := w.Field(d, "name")
		isDefault := n.Kind() == "export_statement" && hasToken(n, "default")
		if name == "" && isDefault {
			name = "default"
		}
		switch d.Kind() {
		case "function_declaration", "generator_function_declaration", "function_signature", "function_expression", "function":
			if count[name] > 1 {
				name += signature(w, d)
			}
			w.Add("function", ns+name, start, end, parent)
		case "class_declaration", "abstract_class_declaration", "class":
			got := w.Add("class", ns+name, start, end, parent)
			if b := w.Child(d, "body"); b != nil {
				members(w, b, ns+name, got)
			}
		case "interface_declaration":
			w.Add("interface", ns+name, start, end, parent)
		case "type_alias_declaration":
			w.Add("type", ns+name, start, end, parent)
		case "enum_declaration":
			w.Add("enum", ns+name, start, end, parent)
		case "internal_module", "module":
			got := w.Add("namespace", ns+strings.Trim(name, `"'`), start, end, parent)
			if b := w.Child(d, "body"); b != nil {
				statements(w, b, ns+strings.Trim(name, `"'`)+".", got)
			}
		case "lexical_declaration", "variable_declaration":
			kind := "var"
			if d.Kind() == "lexical_declaration" {
				kind = "let"
				if hasToken(d, "const") {
					kind = "const"
				}
			}
			decls := treesit.Children(d)
			var named []*sitter.Node
			for _, v := range decls {
				if v.Kind() == "variable_declarator" {
					named = append(named, v)
				}
			}
			for _, v := range named {
				s, e := v.StartByte(), v.EndByte()
				if len(named) == 1 {
					s, e = start, end
				}
				w.Add(kind, ns+w.Field(v, "name"), s, e, parent)
			}
		default:
			if isDefault {
				w.Add("export", "default", start, end, parent)
			}
		}
	}
}

// members names the members of a class body.
func members(w *treesit.Walker, body *sitter.Node, class, parent string) {
	kids := treesit.Children(body)
	count := overloads(w, kids, func(n *sitter.Node) *sitter.Node { return n })
	for i, n := range kids {
		start := w.Lead(kids, i, isLead)
		name := w.Field(n, "name")
		switch n.Kind() {
		case "method_definition", "method_signature", "abstract_method_signature":
			kind := "method"
			if tok := accessorToken(n); tok != "" {
				kind = tok
			}
			if kind == "method" && count[name] > 1 {
				name += signature(w, n)
			}
			w.Add(kind, class+"."+name, start, n.EndByte(), parent)
		case "field_definition", "public_field_definition":
			if name == "" {
				name = w.Field(n, "property")
			}
			if name == "accessor" {
				// `accessor x = 1` (auto-accessors) is newer than the
				// grammar: it reads "accessor" as the name and x as an error.
				for _, c := range treesit.Children(n) {
					if c.Kind() == "ERROR" && c.NamedChildCount() == 1 {
						name = w.Text(c.NamedChild(0))
						break
					}
				}
			}
			w.Add("field", class+"."+name, start, n.EndByte(), parent)
		case "class_static_block":
			w.Add("static", class, start, n.EndByte(), parent)
		case "ERROR":
			members(w, n, class, parent)
		}
	}
}

// overloads counts the function and method names among kids.
func overloads(w *treesit.Walker, kids []*sitter.Node, decl func(*sitter.Node) *sitter.Node) map[string]int {
	count := map[string]int{}
	for _, n := range kids {
		d := decl(n)
		if d == nil {
			continue
		}
		switch d.Kind() {
		case "function_declaration", "function_signature", "generator_function_declaration",
			"method_definition", "method_signature", "abstract_method_signature":
			if accessorToken(d) == "" {
				count[w.Field(d, "name")]++
			}
		}
	}
	return count
}

// signature renders parameter types, "(string, number)"; an untyped
// parameter shows its name.
func signature(w *treesit.Walker, fn *sitter.Node) string {
	params := w.Child(fn, "parameters")
	if params == nil {
		return "()"
	}
	var parts []string
	for _, p := range treesit.Children(params) {
		if p.Kind() == "comment" {
			continue
		}
		if t := w.Child(p, "type"); t != nil {
			parts = append(parts, strings.TrimSpace(strings.TrimPrefix(w.Text(t), ":")))
			continue
		}
		if pat := w.Child(p, "pattern"); pat != nil {
			parts = append(parts, w.Text(pat))
			continue
		}
		parts = append(parts, w.Text(p))
	}
	return "(" + treesit.Squash(strings.Join(parts, ", ")) + ")"
}

// hasToken says whether n has an anonymous child token tok ("get",
// "static", "default", "const").
// accessorToken is "get" or "set" for an accessor, "" for other methods:
// one pass over the children where two hasToken calls took two.
func accessorToken(n *sitter.Node) string {
	c := n.ChildCount()
	for i := range c {
		ch := n.Child(i)
		if ch == nil {
			continue
		}
		k := ch.Kind()
		if !ch.IsNamed() && (k == "get" || k == "set") {
			return k
		}
		if k == "statement_block" || k == "class_body" || k == "formal_parameters" {
			break
		}
	}
	return ""
}

func hasToken(n *sitter.Node, tok string) bool {
	c := n.ChildCount()
	for i := range c {
		ch := n.Child(i)
		if ch == nil {
			continue
		}
		k := ch.Kind()
		if k == tok && !ch.IsNamed() {
			return true
		}
		if k == "statement_block" || k == "class_body" || k == "formal_parameters" {
			break
		}
	}
	return false
}
