package treesit

import (
	"context"
	"sync"

	sitter "github.com/tree-sitter/go-tree-sitter"

	"github.com/kulehq/kule/plugins/differ/names"
	"github.com/kulehq/kule/sdk/differ"
)

// Lang describes one tree-sitter differ.
type Lang struct {
	// Name is the differ's name.
	Name string
	// Exts are the file extensions it reads, lower case with the dot.
	Exts []string
	// Grammar picks the grammar for a path (TS and TSX differ by extension).
	Grammar func(path string) *sitter.Language
	// Visit names the entities under the root.
	Visit func(w *Walker, root *sitter.Node)
}

// Differ is a differ.Differ and differ.Merger over a Lang.
type Differ struct{ L *Lang }

var (
	_ differ.Differ = Differ{}
	_ differ.Merger = Differ{}
)

// Name is the differ's name.
func (d Differ) Name() string { return d.L.Name }

// Accepts says whether path has one of the differ's extensions.
func (d Differ) Accepts(path string) bool { return names.Accepts(path, d.L.Exts) }

// Entities names the entities of req.Content.
func (d Differ) Entities(ctx context.Context, req differ.EntitiesRequest) (differ.EntitiesResponse, error) {
	es, err := Parse(ctx, d.L.Grammar(req.Path), req.Content, d.L.Visit)
	return differ.EntitiesResponse{Entities: es}, err
}

// Merge merges entity by entity with differ.MergeEntities.
func (d Differ) Merge(ctx context.Context, req differ.MergeRequest) (differ.MergeResponse, error) {
	return differ.MergeEntities(ctx, differ.EntitiesOf(d, req.Path), req)
}

// Grammar wraps a binding's language pointer once.
func Grammar(ptr func() *sitter.Language) func() *sitter.Language {
	return sync.OnceValue(ptr)
}
