// Package golang is the built-in differ for Go, on go/parser: it names
// functions (`func Open`), methods by receiver type (`method Task.Commit`,
// also for generic receivers), types, and each constant and variable, inside
// a group or not, each with its doc comment.
package golang

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"

	"github.com/kulehq/kule/plugins/differ/internal/naming"
	"github.com/kulehq/kule/sdk/differ"
)

// Differ is the Go differ.
type Differ struct{}

var (
	_ differ.Differ = Differ{}
	_ differ.Merger = Differ{}
)

// New returns the Go differ; it is also a differ.Merger.
func New() differ.Differ { return Differ{} }

// Name is "go".
func (Differ) Name() string { return "go" }

// Accepts reads .go files.
func (Differ) Accepts(path string) bool { return strings.EqualFold(filepath.Ext(path), ".go") }

// maxSize is the largest file the differ names; a bigger one is changed as
// a whole.
const maxSize = 8 << 20

// Entities names the entities of req.Content (see entities).
func (Differ) Entities(ctx context.Context, req differ.EntitiesRequest) (differ.EntitiesResponse, error) {
	es, err := entities(ctx, req.Path, req.Content)
	return differ.EntitiesResponse{Entities: es}, err
}

// entities names the declarations of src. A file with syntax errors yields
// the declarations go/parser could still read.
func entities(ctx context.Context, path string, src []byte) ([]differ.Entity, error) {
	if len(src) > maxSize {
		return nil, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("go differ: %w", err)
	}
	fset := token.NewFileSet()
	f, _ := parser.ParseFile(fset, path, src, parser.ParseComments|parser.SkipObjectResolution)
	if f == nil {
		return nil, nil
	}
	tf := fset.File(f.Pos())
	if tf == nil {
		return nil, nil
	}
	off := func(p token.Pos) int {
		if !p.IsValid() || int(p) < tf.Base() || int(p) > tf.Base()+tf.Size() {
			return -1
		}
		return tf.Offset(p)
	}
	w := walker{used: map[string]int{}, n: len(src)}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			start := d.Pos()
			if d.Doc != nil {
				start = d.Doc.Pos()
			}
			kind, name := "func", d.Name.Name
			if d.Recv != nil && len(d.Recv.List) > 0 {
				kind, name = "method", recvName(d.Recv.List[0].Type)+"."+name
			}
			w.add(kind, name, off(start), off(d.End()), "")
		case *ast.GenDecl:
			if d.Tok == token.IMPORT {
				continue
			}
			kind := d.Tok.String()
			if !d.Lparen.IsValid() && len(d.Specs) == 1 {
				start := d.Pos()
				if d.Doc != nil {
					start = d.Doc.Pos()
				}
				w.add(kind, specName(d.Specs[0]), off(start), off(d.End()), "")
				continue
			}
			for _, s := range d.Specs {
				start := s.Pos()
				if doc := specDoc(s); doc != nil {
					start = doc.Pos()
				}
				end := s.End()
				if c := specComment(s); c != nil && c.End() > end {
					end = c.End()
				}
				w.add(kind, specName(s), off(start), off(end), "")
			}
		}
	}
	return w.ents, nil
}

// Merge merges entity by entity with differ.MergeEntities.
func (d Differ) Merge(ctx context.Context, req differ.MergeRequest) (differ.MergeResponse, error) {
	return differ.MergeEntities(ctx, differ.EntitiesOf(d, req.Path), req)
}

type walker struct {
	ents []differ.Entity
	used map[string]int
	n    int
	last int
}

func (w *walker) add(kind, name string, start, end int, parent string) {
	if start < 0 || end < start || end > w.n || start < w.last || name == "" {
		return // a broken declaration: its text stays glue
	}
	name = naming.Clean(name)
	id := kind + " " + name
	w.used[id]++
	if c := w.used[id]; c > 1 {
		name = fmt.Sprintf("%s (%d)", name, c) // init, or _ twice
	}
	w.last = start
	w.ents = append(w.ents, differ.Entity{Kind: kind, Name: name, Start: start, End: end, Parent: parent})
}

// recvName is the receiver's type name without pointer or type parameters.
func recvName(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.ParenExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return "?"
		}
	}
}

func specName(s ast.Spec) string {
	switch s := s.(type) {
	case *ast.TypeSpec:
		return s.Name.Name
	case *ast.ValueSpec:
		var names []string
		for _, n := range s.Names {
			names = append(names, n.Name)
		}
		return strings.Join(names, ", ")
	}
	return ""
}

func specDoc(s ast.Spec) *ast.CommentGroup {
	switch s := s.(type) {
	case *ast.TypeSpec:
		return s.Doc
	case *ast.ValueSpec:
		return s.Doc
	}
	return nil
}

func specComment(s ast.Spec) *ast.CommentGroup {
	switch s := s.(type) {
	case *ast.TypeSpec:
		return s.Comment
	case *ast.ValueSpec:
		return s.Comment
	}
	return nil
}
