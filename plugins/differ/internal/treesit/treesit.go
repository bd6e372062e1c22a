// Package treesit runs a tree-sitter grammar over one file for the built-in
// differs: it parses with a deadline, never panics on bad input, frees what
// cgo allocated, and offers the walking helpers every language shares
// (widening an entity over its doc comments and attributes, making names
// unique).
package treesit

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	sitter "github.com/tree-sitter/go-tree-sitter"

	"github.com/kulehq/kule/plugins/differ/internal/naming"
	"github.com/kulehq/kule/sdk/differ"
)

// Errors of a parse, in one place.
var (
	// ErrParse is returned when tree-sitter gives no tree (cancelled, out of
	// time, or a grammar that cannot be loaded).
	ErrParse = errors.New("treesit: no syntax tree")
)

// DefaultTimeout bounds one parse when the caller's context has no deadline.
const DefaultTimeout = 10 * time.Second

// MaxSize is the largest file a differ names; a bigger one is changed as a
// whole.
const MaxSize = 8 << 20

// chunk is how much text the parser is handed per read callback; the Go
// binding copies each answer into C memory, so answering with the whole rest
// of the file would be quadratic.
const chunk = 64 << 10

// Walker collects entities while a language's visit function walks a tree.
type Walker struct {
	Src    []byte
	ents   []differ.Entity
	used   map[string]int
	fields map[string]uint16 // field ids of this grammar, by name
	lang   *sitter.Language
}

// Parse parses src with lang and calls visit on the root node. Entities
// added through the Walker come back in file order with unique IDs.
// A file that does not parse at all yields an empty list; one with errors
// yields what the visit could name.
func Parse(ctx context.Context, lang *sitter.Language, src []byte, visit func(w *Walker, root *sitter.Node)) (ents []differ.Entity, err error) {
	if len(src) > MaxSize {
		return nil, nil
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	useLibcAllocator()
	p := sitter.NewParser()
	defer p.Close()
	if err := p.SetLanguage(lang); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrParse, err)
	}
	n := len(src)
	tree := p.ParseWithOptions(func(i int, _ sitter.Point) []byte {
		if i >= n {
			return nil
		}
		end := min(i+chunk, n)
		return src[i:end]
	}, nil, &sitter.ParseOptions{ProgressCallback: func(sitter.ParseState) bool { return ctx.Err() != nil }})
	if tree == nil {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrParse, err)
		}
		return nil, ErrParse
	}
	defer tree.Close()
	defer func() {
		// A walking bug on a strange tree costs this file its names, never
		// the caller.
		if r := recover(); r != nil {
			ents, err = nil, fmt.Errorf("treesit: walk panicked: %v\n%s", r, debug.Stack())
		}
	}()
	w := &Walker{Src: src, used: map[string]int{}, lang: lang, fields: fieldIDs(lang)}
	visit(w, tree.RootNode())
	storeFieldIDs(lang, w.fields)
	return w.ents, ctx.Err()
}

// Text is the source text of n.
func (w *Walker) Text(n *sitter.Node) string {
	if n == nil {
		return ""
	}
	return string(w.Src[n.StartByte():n.EndByte()])
}

// Field is the text of n's child named field, "" if none.
func (w *Walker) Field(n *sitter.Node, field string) string {
	return w.Text(w.Child(n, field))
}

// Child is n's child named field, nil if none. It looks the field up by its
// id: ChildByFieldName costs three cgo calls (a C string made and freed
// around the lookup), this one, which on a 5,000-line file is a good part
// of the walk.
func (w *Walker) Child(n *sitter.Node, field string) *sitter.Node {
	id, ok := w.fields[field]
	if !ok {
		id = w.lang.FieldIdForName(field)
		w.fields[field] = id
	}
	if id == 0 {
		return nil
	}
	return n.ChildByFieldId(id)
}

// fieldCache keeps each grammar's field ids, found once per process (the
// binding's FieldIdForName leaks its C string, so it is called once a name).
var fieldCache sync.Map // unsafe.Pointer of the grammar → *sync.Mutex-guarded map

type grammarFields struct {
	mu sync.Mutex
	m  map[string]uint16
}

// fieldIDs is a copy of what is known of lang's field ids; Child adds to
// the copy, and Parse stores it back.
func fieldIDs(lang *sitter.Language) map[string]uint16 {
	v, _ := fieldCache.LoadOrStore(lang.Inner, &grammarFields{m: map[string]uint16{}})
	g := v.(*grammarFields)
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string]uint16, len(g.m))
	for k, id := range g.m {
		out[k] = id
	}
	return out
}

func storeFieldIDs(lang *sitter.Language, m map[string]uint16) {
	v, _ := fieldCache.LoadOrStore(lang.Inner, &grammarFields{m: map[string]uint16{}})
	g := v.(*grammarFields)
	g.mu.Lock()
	defer g.mu.Unlock()
	for k, id := range m {
		g.m[k] = id
	}
}

// Add records an entity covering [start, end) and returns the name it got.
// A Kind+Name already used in the file gets " (2)", " (3)", ... so IDs stay
// unique and stable in file order.
func (w *Walker) Add(kind, name string, start, end uint, parent string) string {
	name = naming.Clean(Squash(name))
	if name == "" {
		name = "(anonymous)"
	}
	id := kind + " " + name
	w.used[id]++
	if c := w.used[id]; c > 1 {
		name = fmt.Sprintf("%s (%d)", name, c)
	}
	w.ents = append(w.ents, differ.Entity{Kind: kind, Name: name, Start: int(start), End: int(end), Parent: parent})
	return name
}

// Squash folds runs of white space into one space.
func Squash(s string) string { return strings.Join(strings.Fields(s), " ") }

// Lead is where the entity kids[i] really starts: widened back over the
// comments and attributes right above it (no blank line between), as isLead
// says of its previous siblings.
func (w *Walker) Lead(kids []*sitter.Node, i int, isLead func(*sitter.Node) bool) uint {
	start := kids[i].StartByte()
	for j := i - 1; j >= 0; j-- {
		p := kids[j]
		if !isLead(p) || blankLineBetween(w.Src, p.EndByte(), start) {
			break
		}
		// A trailing comment on the line of the previous code is not ours.
		if ls := lineStart(w.Src, p.StartByte()); strings.TrimSpace(string(w.Src[ls:p.StartByte()])) != "" {
			break
		}
		start = p.StartByte()
	}
	return start
}

func lineStart(src []byte, i uint) uint {
	for i > 0 && src[i-1] != '\n' {
		i--
	}
	return i
}

func blankLineBetween(src []byte, a, b uint) bool {
	if a > b || b > uint(len(src)) {
		return true
	}
	return strings.Count(string(src[a:b]), "\n") > 1
}

// Children returns the named children of n.
func Children(n *sitter.Node) []*sitter.Node {
	cur := n.Walk()
	defer cur.Close()
	ns := n.NamedChildren(cur)
	out := make([]*sitter.Node, len(ns))
	for i := range ns {
		out[i] = &ns[i]
	}
	return out
}
