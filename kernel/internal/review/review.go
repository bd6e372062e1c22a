// Package review says what changed inside each changed file by the names a
// person uses — functions, methods, sections, keys — by asking the differ
// that reads the file (through the plugin host) for the entities of its old
// and new bytes. It also finds where two tasks (or a task and the person's
// own edits) touch the same entity or file, and merges a file both changed
// three ways: entity by entity where the differ can, else by lines.
package review

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
	"unicode"

	"github.com/kulehq/kule/kernel/internal/pluginhost"
	"github.com/kulehq/kule/sdk/differ"
	sdkplugin "github.com/kulehq/kule/sdk/plugin"
)

// Sentinel errors.
var (
	// ErrUnimplemented is what a Differ's Merge returns when it cannot merge.
	ErrUnimplemented = sdkplugin.ErrUnimplemented
)

// Op is what happened to a file or an entity.
type Op string

// Ops, with the symbol a review prints for each.
const (
	Added   Op = "added"   // +
	Changed Op = "changed" // ~
	Deleted Op = "deleted" // -
	Renamed Op = "renamed" // »
)

// Symbol is the one-character mark of op.
func (op Op) Symbol() string {
	switch op {
	case Added:
		return "+"
	case Deleted:
		return "-"
	case Renamed:
		return "»"
	}
	return "~"
}

// TopLevel is the name under which changes outside every entity are listed.
const TopLevel = "top level"

// Change is one changed file: Old is nil for an added file, New for a
// deleted one.
type Change struct {
	Path     string // slash path relative to the folder
	Op       Op     // Added, Changed or Deleted
	Old, New []byte
}

// EntityChange is one entity of a file that changed.
type EntityChange struct {
	Op      Op     `json:"op"`
	Kind    string `json:"kind,omitempty"`
	Name    string `json:"name"`
	OldName string `json:"old_name,omitempty"` // for Renamed
}

// ID is "kind name", or TopLevel.
func (e EntityChange) ID() string {
	if e.Kind == "" {
		return e.Name
	}
	return e.Kind + " " + e.Name
}

func (e EntityChange) String() string {
	if e.Op == Renamed {
		return fmt.Sprintf("%s %s %s → %s", e.Op.Symbol(), e.Kind, e.OldName, e.Name)
	}
	return e.Op.Symbol() + " " + e.ID()
}

// File is the review of one changed file.
type File struct {
	Path string `json:"path"`
	Op   Op     `json:"op"`
	// Differ names the differ that read the file ("go", "ini"); empty when
	// none reads it.
	Differ   string         `json:"differ,omitempty"`
	Entities []EntityChange `json:"entities,omitempty"`
	// Whole is true when the file has no names: no differ reads it, or the
	// differ failed on it (then Note says why). It changed as a whole.
	Whole bool   `json:"whole,omitempty"`
	Note  string `json:"note,omitempty"`
}

// Review is what changed, file by file, in path order.
type Review struct {
	Files []File `json:"files"`
}

// Differ is a differ as review uses it; *pluginhost.Differ is one.
type Differ interface {
	Name() string
	Entities(ctx context.Context, path string, src []byte) ([]differ.Entity, error)
	// Merge returns an error wrapping ErrUnimplemented when it cannot merge.
	Merge(ctx context.Context, path string, base, ours, theirs []byte) (differ.MergeResponse, error)
}

// Differs finds the differ for a file; nil when none reads it.
type Differs interface {
	DifferFor(ctx context.Context, path string) Differ
}

// hostDiffers adapts a plugin host.
type hostDiffers struct{ h *pluginhost.Host }

func (hd hostDiffers) DifferFor(ctx context.Context, path string) Differ {
	if d := hd.h.DifferFor(ctx, path); d != nil {
		return d
	}
	return nil
}

// FromHost finds differs through the plugin host: each runs out of process.
func FromHost(h *pluginhost.Host) Differs { return hostDiffers{h} }

// InProcess is a Differs made of differs called in this process, in order;
// for tests and for tools that hold a differ already.
type InProcess []differ.Differ

// DifferFor returns the first differ that accepts path.
func (ip InProcess) DifferFor(_ context.Context, path string) Differ {
	for _, d := range ip {
		if d.Accepts(path) {
			return inProcess{d}
		}
	}
	return nil
}

type inProcess struct{ differ.Differ }

func (d inProcess) Merge(ctx context.Context, path string, base, ours, theirs []byte) (differ.MergeResponse, error) {
	m, ok := d.Differ.(differ.Merger)
	if !ok {
		return differ.MergeResponse{}, ErrUnimplemented
	}
	return m.Merge(ctx, differ.MergeRequest{Path: path, Base: base, Ours: ours, Theirs: theirs})
}

func (d inProcess) Entities(ctx context.Context, path string, src []byte) ([]differ.Entity, error) {
	r, err := d.Differ.Entities(ctx, differ.EntitiesRequest{Path: path, Content: src})
	if err != nil {
		return nil, err
	}
	es := r.Entities
	if err := differ.Validate(src, es); err != nil {
		return nil, err
	}
	return es, nil
}

// Compute reviews changes. A differ that fails on a file costs that file its
// names (it is shown changed as a whole, with a note); never the review.
func Compute(ctx context.Context, ds Differs, changes []Change) Review {
	var r Review
	for _, c := range changes {
		r.Files = append(r.Files, file(ctx, ds, c))
	}
	sort.Slice(r.Files, func(i, j int) bool { return r.Files[i].Path < r.Files[j].Path })
	return r
}

func file(ctx context.Context, ds Differs, c Change) File {
	f := File{Path: c.Path, Op: c.Op}
	if c.Op == Deleted {
		f.Whole = true
		return f
	}
	var d Differ
	if ds != nil {
		d = ds.DifferFor(ctx, c.Path)
	}
	if d == nil {
		f.Whole = true
		return f
	}
	f.Differ = d.Name()
	newEs, err := d.Entities(ctx, c.Path, c.New)
	if err != nil {
		f.Whole, f.Note = true, "no names: "+err.Error()
		return f
	}
	if c.Op == Added {
		for _, e := range newEs {
			f.Entities = append(f.Entities, EntityChange{Op: Added, Kind: e.Kind, Name: e.Name})
		}
		return f
	}
	oldEs, err := d.Entities(ctx, c.Path, c.Old)
	if err != nil {
		f.Whole, f.Note = true, "no names: "+err.Error()
		return f
	}
	f.Entities = compare(c.Old, oldEs, c.New, newEs)
	return f
}

// compare lists the entities that differ between two versions of a file.
// An entity counts as changed when its own text changed — its bytes with its
// children cut out — so a changed method does not also list its class.
func compare(oldSrc []byte, oldEs []differ.Entity, newSrc []byte, newEs []differ.Entity) []EntityChange {
	oldOwn, newOwn := ownTexts(oldSrc, oldEs), ownTexts(newSrc, newEs)
	oldBy := map[string]int{}
	for i, e := range oldEs {
		oldBy[e.ID()] = i
	}
	newBy := map[string]int{}
	for i, e := range newEs {
		newBy[e.ID()] = i
	}
	var out []EntityChange
	var added []int
	for i, e := range newEs {
		j, ok := oldBy[e.ID()]
		if !ok {
			added = append(added, i)
			continue
		}
		if oldOwn.entity[j] != newOwn.entity[i] {
			out = append(out, EntityChange{Op: Changed, Kind: e.Kind, Name: e.Name})
		}
	}
	var deleted []int
	for j, e := range oldEs {
		if _, ok := newBy[e.ID()]; !ok {
			deleted = append(deleted, j)
		}
	}
	renamedNew := map[int]bool{}
	renamedOld := map[int]bool{}
	for _, j := range deleted {
		for _, i := range added {
			if renamedNew[i] {
				continue
			}
			o, n := oldEs[j], newEs[i]
			if o.Kind != n.Kind || o.Parent != n.Parent {
				continue
			}
			if strings.ReplaceAll(oldOwn.entity[j], lastSegment(o.Name), lastSegment(n.Name)) == newOwn.entity[i] {
				renamedNew[i], renamedOld[j] = true, true
				out = append(out, EntityChange{Op: Renamed, Kind: n.Kind, Name: n.Name, OldName: o.Name})
				break
			}
		}
	}
	for _, i := range added {
		if !renamedNew[i] {
			out = append(out, EntityChange{Op: Added, Kind: newEs[i].Kind, Name: newEs[i].Name})
		}
	}
	for _, j := range deleted {
		if !renamedOld[j] {
			out = append(out, EntityChange{Op: Deleted, Kind: oldEs[j].Kind, Name: oldEs[j].Name})
		}
	}
	if oldOwn.top != newOwn.top || (len(out) == 0 && !bytes.Equal(oldSrc, newSrc)) {
		out = append([]EntityChange{{Op: Changed, Name: TopLevel}}, out...)
	}
	return out
}

// lastSegment is the last part of a qualified name ("commit" of
// "Task::commit").
func lastSegment(name string) string {
	i := strings.LastIndexFunc(name, func(r rune) bool { return !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '-') })
	if i < 0 || i == len(name)-1 {
		return name
	}
	return name[i+1:]
}

type own struct {
	top    string
	entity []string
}

// ownTexts cuts each entity's children (and the whitespace around them) out
// of its bytes, and the top-level entities out of the file.
func ownTexts(src []byte, es []differ.Entity) own {
	children := make([][]differ.Entity, len(es))
	var top []differ.Entity
	for i, e := range es {
		p := parentIndex(es, i)
		if p < 0 {
			top = append(top, e)
		} else {
			children[p] = append(children[p], e)
		}
	}
	o := own{top: cut(src, 0, len(src), top), entity: make([]string, len(es))}
	for i, e := range es {
		o.entity[i] = cut(src, e.Start, e.End, children[i])
	}
	return o
}

// parentIndex is the index of es[i]'s parent: the smallest entity named
// es[i].Parent that contains it; -1 at the top level.
func parentIndex(es []differ.Entity, i int) int {
	e := es[i]
	best := -1
	if e.Parent == "" {
		return best
	}
	for j, p := range es {
		if j == i || p.Name != e.Parent || p.Start > e.Start || p.End < e.End {
			continue
		}
		if best < 0 || p.End-p.Start < es[best].End-es[best].Start {
			best = j
		}
	}
	return best
}

// cut returns src[start:end] without the children's ranges, trimming the
// whitespace on both sides of each cut, so adding, removing or moving a child
// does not change its parent's own text.
func cut(src []byte, start, end int, children []differ.Entity) string {
	var b strings.Builder
	pos := start
	trimLeft, broke := false, false
	for _, c := range children {
		if c.Start < pos || c.End > end {
			continue
		}
		seg := src[pos:c.Start]
		if trimLeft {
			seg = bytes.TrimLeftFunc(seg, unicode.IsSpace)
		}
		seg = bytes.TrimRightFunc(seg, unicode.IsSpace)
		b.Write(seg)
		if len(seg) > 0 || !broke {
			b.WriteByte('\n') // one line break stands for any run of children
		}
		broke = true
		pos, trimLeft = c.End, true
	}
	seg := src[pos:end]
	if trimLeft {
		seg = bytes.TrimLeftFunc(seg, unicode.IsSpace)
	}
	b.Write(seg)
	return b.String()
}

// String renders the review the way kule status prints it:
//
//	~ src/task.rs
//	    ~ method Task::commit
//	    + method Task::check
func (r Review) String() string {
	var b strings.Builder
	for _, f := range r.Files {
		b.WriteString(f.String())
	}
	return b.String()
}

// String renders one file and its entities.
func (f File) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "  %s %s", f.Op.Symbol(), f.Path)
	if f.Note != "" {
		fmt.Fprintf(&b, "  (changed as a whole: %s)", f.Note)
	}
	b.WriteByte('\n')
	for _, e := range f.Entities {
		fmt.Fprintf(&b, "      %s\n", e)
	}
	return b.String()
}
