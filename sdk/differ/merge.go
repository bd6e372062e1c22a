package differ

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Errors of the entity merge, in one place.
var (
	// ErrMergeParse is returned when the differ fails (an error, not a
	// syntax error it reports as an empty list) on one of the versions.
	ErrMergeParse = errors.New("merge: naming entities failed")
)

// ParseFunc names the entities of one version of a file; a differ's
// Entities method bound to a path (EntitiesOf).
type ParseFunc func(ctx context.Context, src []byte) ([]Entity, error)

// EntitiesOf binds d's Entities to path, for MergeEntities:
//
//	func (d myDiffer) Merge(ctx context.Context, req differ.MergeRequest) (differ.MergeResponse, error) {
//		return differ.MergeEntities(ctx, differ.EntitiesOf(d, req.Path), req)
//	}
func EntitiesOf(d Differ, path string) ParseFunc {
	return func(ctx context.Context, src []byte) ([]Entity, error) {
		r, err := d.Entities(ctx, EntitiesRequest{Path: path, Content: src})
		return r.Entities, err
	}
}

// MergeEntities merges req.Ours and req.Theirs, both changed from req.Base,
// entity by entity, naming the entities of each version with parse. It is the merge every built-in differ's Merger uses, and a plugin
// author's differ may use it too.
//
// How it decides:
//  1. Each version is cut into a skeleton: the text between entities
//     (imports, top-level glue), split into lines, and one placeholder per
//     entity. The skeletons are merged three ways; a line region both sides
//     changed differently is a conflict at the level it is in ("top level",
//     or the enclosing entity).
//  2. Two sides that both inserted entities at one place keep both: ours,
//     then theirs. A reorder on one side is kept. An entity both sides moved
//     to different places, or an order no side asked for, is a conflict.
//  3. Each entity takes the side that changed it. The same entity changed on
//     both sides is merged inside (its children, e.g. a class's methods) when
//     it has children, else it is a conflict by name ("both changed method
//     Task::commit"), even when the lines do not touch. Deleted on one side
//     and changed on the other is a conflict.
//  4. The merged file is named again: every entity either side changed must
//     be there (with that side's text when only one side changed it) and
//     every entity one side deleted must be gone; otherwise it is a conflict.
//
// A result with conflicts has Merged == nil.
func MergeEntities(ctx context.Context, parse ParseFunc, req MergeRequest) (MergeResponse, error) {
	base, ours, theirs := req.Base, req.Ours, req.Theirs
	switch {
	case bytes.Equal(ours, theirs):
		return MergeResponse{Merged: clone(ours)}, nil
	case bytes.Equal(ours, base):
		return MergeResponse{Merged: clone(theirs)}, nil
	case bytes.Equal(theirs, base):
		return MergeResponse{Merged: clone(ours)}, nil
	}
	var trees [3][]*node
	for i, src := range [][]byte{base, ours, theirs} {
		if err := ctx.Err(); err != nil {
			return MergeResponse{}, fmt.Errorf("merge: %w", err)
		}
		ents, err := parse(ctx, src)
		if err != nil {
			return MergeResponse{}, fmt.Errorf("%w: %s: %w", ErrMergeParse, [3]string{"base", "ours", "theirs"}[i], err)
		}
		trees[i] = buildTree(src, ents)
	}
	m := &merger{ctx: ctx, src: [3][]byte{base, ours, theirs}}
	var out bytes.Buffer
	m.level(&out, [3]span{{0, len(base)}, {0, len(ours)}, {0, len(theirs)}}, trees, "")
	if err := ctx.Err(); err != nil {
		return MergeResponse{}, fmt.Errorf("merge: %w", err)
	}
	if len(m.conflicts) > 0 {
		return MergeResponse{Conflicts: uniq(m.conflicts), Notes: m.notes}, nil
	}
	merged := out.Bytes()
	if merged == nil {
		merged = []byte{} // an empty file, not "no result"
	}
	ents, err := parse(ctx, merged)
	if err != nil {
		return MergeResponse{Conflicts: []string{"top level (the merged file could not be named: " + err.Error() + ")"}}, nil
	}
	if lost := verify(trees, m.src, buildTree(merged, ents), merged); len(lost) > 0 {
		return MergeResponse{Conflicts: lost, Notes: m.notes}, nil
	}
	return MergeResponse{Merged: merged, Notes: m.notes}, nil
}

func clone(b []byte) []byte { return append([]byte{}, b...) }

func uniq(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

type span struct{ start, end int }

// node is an entity in the containment tree of one version.
type node struct {
	id    string // Kind+Name, made unique among siblings
	raw   span   // the differ's byte range
	span  span   // raw widened to whole lines where only blanks are around it
	kids  []*node
	label string // what a person reads: the entity's ID
}

// buildTree nests the entities of src by byte range and widens each to whole
// lines where that takes only blanks. Entities out of range or overlapping a
// sibling partially are dropped: the merge then treats their text as glue.
func buildTree(src []byte, ents []Entity) []*node {
	es := make([]Entity, 0, len(ents))
	for _, e := range ents {
		if e.Start >= 0 && e.End <= len(src) && e.Start < e.End {
			es = append(es, e)
		}
	}
	sort.SliceStable(es, func(i, j int) bool {
		if es[i].Start != es[j].Start {
			return es[i].Start < es[j].Start
		}
		return es[i].End > es[j].End
	})
	root := &node{raw: span{0, len(src)}}
	stack := []*node{root}
	for _, e := range es {
		for len(stack) > 1 && stack[len(stack)-1].raw.end <= e.Start {
			stack = stack[:len(stack)-1]
		}
		top := stack[len(stack)-1]
		if e.End > top.raw.end {
			continue // partial overlap
		}
		n := &node{id: e.ID(), label: e.ID(), raw: span{e.Start, e.End}}
		top.kids = append(top.kids, n)
		stack = append(stack, n)
	}
	widen(src, root.raw, root.kids)
	return root.kids
}

// widen extends each sibling over the indentation before it on its first
// line, within region, and makes sibling ids unique. The newline after an
// entity stays glue, so that a separator such as "," added after it on one
// side does not count as a change of the entity.
func widen(src []byte, region span, kids []*node) {
	seen := map[string]int{}
	for i, k := range kids {
		seen[k.id]++
		if c := seen[k.id]; c > 1 {
			k.id = fmt.Sprintf("%s #%d", k.id, c)
		}
		lo := region.start
		if i > 0 {
			lo = kids[i-1].span.end
		}
		s := k.raw.start
		for s > lo && (src[s-1] == ' ' || src[s-1] == '\t') {
			s--
		}
		if !(s == 0 || src[s-1] == '\n') || s < lo {
			s = k.raw.start
		}
		e := k.raw.end
		k.span = span{s, e}
		widen(src, k.span, k.kids)
	}
}

type merger struct {
	ctx       context.Context
	src       [3][]byte
	conflicts []string
	notes     []string
	noteIdx   map[string]int
	glue      map[string]int
	ids       map[string]int
	names     []string // placeholder int/2 → id
}

func (m *merger) conflict(format string, args ...any) {
	m.conflicts = append(m.conflicts, fmt.Sprintf(format, args...))
}

// tok interns a glue line (even) or an entity placeholder (odd).
func (m *merger) tok(s string, entity bool) int {
	if m.glue == nil {
		m.glue, m.ids = map[string]int{}, map[string]int{}
	}
	if entity {
		if v, ok := m.ids[s]; ok {
			return v
		}
		v := 2*len(m.names) + 1
		m.ids[s] = v
		m.names = append(m.names, s)
		return v
	}
	if v, ok := m.glue[s]; ok {
		return v
	}
	v := 2 * len(m.glue)
	m.glue[s] = v
	return v
}

// skeleton is one version of one level cut into tokens.
type skeleton struct {
	toks  []int
	text  map[int]string // glue token → text
	ents  map[string]*node
	order []string
}

func (m *merger) skeleton(v int, region span, kids []*node) skeleton {
	src := m.src[v]
	sk := skeleton{text: map[int]string{}, ents: map[string]*node{}}
	addGlue := func(s, e int) {
		for s < e {
			i := bytes.IndexByte(src[s:e], '\n')
			end := e
			if i >= 0 {
				end = s + i + 1
			}
			line := string(src[s:end])
			t := m.tok(line, false)
			sk.text[t] = line
			sk.toks = append(sk.toks, t)
			s = end
		}
	}
	pos := region.start
	for _, k := range kids {
		addGlue(pos, k.span.start)
		sk.toks = append(sk.toks, m.tok(k.id, true))
		sk.ents[k.id] = k
		sk.order = append(sk.order, k.id)
		pos = k.span.end
	}
	addGlue(pos, region.end)
	return sk
}

func (m *merger) text(v int, n *node) string { return string(m.src[v][n.span.start:n.span.end]) }

// level merges one level (the file, or the inside of an entity both sides
// changed) and writes the result to out. where names the level for
// conflicts in its glue.
func (m *merger) level(out *bytes.Buffer, regions [3]span, kids [3][]*node, where string) {
	if m.ctx.Err() != nil {
		return
	}
	whereName := "top level"
	if where != "" {
		whereName = "both changed " + where
	}
	var sk [3]skeleton
	for v := range 3 {
		sk[v] = m.skeleton(v, regions[v], kids[v])
	}
	b, o, t := sk[0], sk[1], sk[2]
	before := len(m.conflicts)

	// Entities deleted on one side and changed on the other, or added on
	// both sides with different text.
	for _, id := range b.order {
		bn := b.ents[id]
		on, oOK := o.ents[id]
		tn, tOK := t.ents[id]
		switch {
		case !oOK && tOK && m.text(2, tn) != m.text(0, bn):
			m.conflict("deleted in ours, changed in theirs: %s", bn.label)
		case oOK && !tOK && m.text(1, on) != m.text(0, bn):
			m.conflict("changed in ours, deleted in theirs: %s", bn.label)
		}
	}
	for _, id := range b.order {
		bn := b.ents[id]
		on, oOK := o.ents[id]
		tn, tOK := t.ents[id]
		switch {
		case !oOK && tOK && m.text(2, tn) == m.text(0, bn):
			m.note("ours deleted", bn.label)
		case oOK && !tOK && m.text(1, on) == m.text(0, bn):
			m.note("theirs deleted", bn.label)
		}
	}
	for _, id := range o.order {
		if _, inBase := b.ents[id]; inBase {
			continue
		}
		if tn, ok := t.ents[id]; ok && m.text(2, tn) != m.text(1, o.ents[id]) {
			m.conflict("both added %s", tn.label)
		}
	}

	hunks, mo, mt, ok := diff3(b.toks, o.toks, t.toks)
	if !ok {
		m.conflict("%s (the versions are too far apart to merge)", whereName)
		return
	}
	var res []int
	for _, h := range hunks {
		bt, ot, tt := b.toks[h.base[0]:h.base[1]], o.toks[h.ours[0]:h.ours[1]], t.toks[h.theirs[0]:h.theirs[1]]
		switch {
		case h.stable, equalInts(ot, tt):
			res = append(res, ot...)
		case equalInts(ot, bt):
			res = append(res, tt...)
		case equalInts(tt, bt):
			res = append(res, ot...)
		case len(bt) == 0:
			// Both inserted at one place: keep both, ours first, unless
			// both inserted text of their own between entities.
			if m.meaningfulGlue(o, ot) && m.meaningfulGlue(t, tt) {
				m.conflict("%s (both added lines at one place)", whereName)
				continue
			}
			res = append(res, ot...)
			res = append(res, tt...)
			var names []string
			for _, x := range append(append([]int{}, ot...), tt...) {
				if x%2 == 1 {
					names = append(names, o.label(x, m, t))
				}
			}
			if len(names) > 0 {
				m.notes = append(m.notes, "kept both: "+strings.Join(names, ", "))
			}
		default:
			if keep, ok := m.fine(h, b, o, t, mo, mt); ok {
				res = append(res, keep...)
				continue
			}
			var names []string
			for _, x := range append(append(append([]int{}, bt...), ot...), tt...) {
				if x%2 == 1 {
					names = append(names, m.names[x/2])
				}
			}
			if len(names) > 0 && !m.meaningfulGlue(b, bt) && !m.meaningfulGlue(o, ot) && !m.meaningfulGlue(t, tt) {
				m.conflict("both moved or removed around %s", strings.Join(uniq(names), ", "))
			} else {
				m.conflict("%s", whereName)
			}
		}
	}
	if len(m.conflicts) > before {
		return
	}

	// An entity placed twice (moved to different places), or an order of
	// two entities that neither side asked for, is a conflict.
	seen := map[int]bool{}
	var order []string
	for _, x := range res {
		if x%2 == 1 {
			if seen[x] {
				m.conflict("moved to different places on both sides: %s", m.names[x/2])
			}
			seen[x] = true
			order = append(order, m.names[x/2])
		}
	}
	if a, c, bad := misordered(order, b.order, o.order, t.order); bad {
		m.conflict("order of %s and %s would not stay where either side put them", a, c)
	}
	if len(m.conflicts) > before {
		return
	}

	for _, x := range res {
		if x%2 == 0 {
			if s, ok := o.text[x]; ok {
				out.WriteString(s)
			} else if s, ok := t.text[x]; ok {
				out.WriteString(s)
			} else {
				out.WriteString(b.text[x])
			}
			continue
		}
		id := m.names[x/2]
		bn, bOK := b.ents[id]
		on, oOK := o.ents[id]
		tn, tOK := t.ents[id]
		switch {
		case bOK && oOK != tOK:
			// One side deleted it, the other only moved it (had it
			// changed it, that is a conflict above): it stays deleted.
			trimBlankLine(out)
		case oOK && !tOK:
			out.WriteString(m.text(1, on))
			m.note("ours added", on.label)
		case tOK && !oOK:
			out.WriteString(m.text(2, tn))
			m.note("theirs added", tn.label)
		case !bOK: // both added, the same text (checked above)
			out.WriteString(m.text(1, on))
		default:
			bs, os, ts := m.text(0, bn), m.text(1, on), m.text(2, tn)
			switch {
			case os == ts || ts == bs:
				out.WriteString(os)
				if os != bs && ts == bs {
					m.note("ours changed", on.label)
				}
			case os == bs:
				out.WriteString(ts)
				m.note("theirs changed", tn.label)
			case len(bn.kids)+len(on.kids)+len(tn.kids) > 0:
				n := len(m.conflicts)
				m.level(out, [3]span{bn.span, on.span, tn.span}, [3][]*node{bn.kids, on.kids, tn.kids}, on.label)
				if len(m.conflicts) == n {
					m.notes = append(m.notes, "merged inside "+on.label)
				}
			default:
				m.conflict("both changed %s", on.label)
			}
		}
	}
}

// note records what the merge took from a side, grouped by what happened:
// "ours changed: method A, func B".
func (m *merger) note(what, label string) {
	if m.noteIdx == nil {
		m.noteIdx = map[string]int{}
	}
	if i, ok := m.noteIdx[what]; ok {
		m.notes[i] += ", " + label
		return
	}
	m.noteIdx[what] = len(m.notes)
	m.notes = append(m.notes, what+": "+label)
}

// label names a placeholder for a note.
func (s skeleton) label(x int, m *merger, other skeleton) string {
	id := m.names[x/2]
	if n, ok := s.ents[id]; ok {
		return n.label
	}
	if n, ok := other.ents[id]; ok {
		return n.label
	}
	return id
}

// meaningfulGlue says whether inserted tokens hold text of their own
// between entities (more than blanks and separators such as "," or ";").
func (m *merger) meaningfulGlue(sk skeleton, toks []int) bool {
	for _, x := range toks {
		if x%2 == 1 {
			continue
		}
		if strings.Trim(sk.text[x], " \t\r\n,;") != "" {
			return true
		}
	}
	return false
}

// fine resolves a hunk both sides changed token by token: each side's
// deletions apply, and each side's insertions go where that side put them
// (ours first where both inserted at one place). It refuses — the hunk is a
// conflict — when both sides changed text between entities (other than
// blank lines and separators), since that text has no name to merge by.
func (m *merger) fine(h hunk, b, o, t skeleton, mo, mt []int) ([]int, bool) {
	b0, b1 := h.base[0], h.base[1]
	type side struct {
		sk      skeleton
		m       []int
		lo, hi  int
		ins     map[int][]int // base gap → inserted tokens
		changed bool          // inserted or deleted meaningful glue
	}
	sides := [2]*side{{sk: o, m: mo, lo: h.ours[0], hi: h.ours[1]}, {sk: t, m: mt, lo: h.theirs[0], hi: h.theirs[1]}}
	for _, s := range sides {
		s.ins = map[int][]int{}
		inv := map[int]int{}
		kept := map[int]bool{}
		for k := b0; k < b1; k++ {
			if s.m[k] >= 0 {
				inv[s.m[k]] = k
				kept[k] = true
			} else if x := b.toks[k]; x%2 == 0 && strings.Trim(b.text[x], " \t\r\n,;") != "" {
				s.changed = true
			}
		}
		var pending []int
		for i := s.lo; i < s.hi; i++ {
			if k, ok := inv[i]; ok {
				s.ins[k] = append(s.ins[k], pending...)
				pending = nil
				continue
			}
			x := s.sk.toks[i]
			pending = append(pending, x)
			if x%2 == 0 && strings.Trim(s.sk.text[x], " \t\r\n,;") != "" {
				s.changed = true
			}
		}
		s.ins[b1] = append(s.ins[b1], pending...)
	}
	if sides[0].changed && sides[1].changed {
		return nil, false
	}
	var out []int
	for k := b0; k <= b1; k++ {
		out = append(out, sides[0].ins[k]...)
		out = append(out, sides[1].ins[k]...)
		if k < b1 && mo[k] >= 0 && mt[k] >= 0 {
			out = append(out, b.toks[k])
		}
	}
	return out, true
}

// misordered checks every pair of entities that all three versions have:
// the merge must keep the relative order of a side that changed it, and the
// base order when neither did.
func misordered(merged, base, ours, theirs []string) (string, string, bool) {
	pos := func(s []string) map[string]int {
		p := make(map[string]int, len(s))
		for i, x := range s {
			p[x] = i
		}
		return p
	}
	pb, po, pt := pos(base), pos(ours), pos(theirs)
	var common []string
	for _, x := range merged {
		_, b := pb[x]
		_, o := po[x]
		_, t := pt[x]
		if b && o && t {
			common = append(common, x)
		}
	}
	if len(common) > 2000 {
		common = common[:2000]
	}
	for i := range common {
		for j := i + 1; j < len(common); j++ {
			x, y := common[i], common[j]
			bo := pb[x] < pb[y]
			oo := po[x] < po[y]
			to := pt[x] < pt[y]
			want := bo
			if oo != bo {
				want = oo
			} else if to != bo {
				want = to
			}
			if oo != bo && to != bo && oo != to {
				return x, y, true
			}
			if !want { // merged has x before y
				return x, y, true
			}
		}
	}
	return "", "", false
}

// verify names the merged file again and checks that every entity a side
// changed is there as that side left it, and that deletions stayed deleted.
func verify(trees [3][]*node, src [3][]byte, merged []*node, msrc []byte) []string {
	flat := func(v int, kids []*node, src []byte) map[string]string {
		out := map[string]string{}
		var walk func(prefix string, ns []*node)
		walk = func(prefix string, ns []*node) {
			for _, n := range ns {
				p := prefix + n.id
				out[p] = string(src[n.raw.start:n.raw.end])
				walk(p+"\x00", n.kids)
			}
		}
		walk("", kids)
		return out
	}
	b, o, t := flat(0, trees[0], src[0]), flat(1, trees[1], src[1]), flat(2, trees[2], src[2])
	got := flat(-1, merged, msrc)
	label := func(p string) string { return p[strings.LastIndexByte(p, 0)+1:] }
	var lost []string
	check := func(side, other map[string]string) {
		for p, s := range side {
			bs, inBase := b[p]
			if inBase && s == bs {
				continue // this side did not change it
			}
			g, ok := got[p]
			if !ok {
				lost = append(lost, "the merge would lose "+label(p))
				continue
			}
			if os, ok := other[p]; ok && (os == bs && inBase) && g != s {
				lost = append(lost, "the merge would not keep "+label(p)+" as changed")
			}
		}
		for p, bs := range b {
			if _, ok := side[p]; ok {
				continue
			}
			if os, ok := other[p]; ok && os == bs {
				if _, still := got[p]; still {
					lost = append(lost, "the merge would keep deleted "+label(p))
				}
			}
		}
	}
	check(o, t)
	check(t, o)
	sort.Strings(lost)
	return uniq(lost)
}

// trimBlankLine drops a trailing blank line from out, so an entity left out
// does not leave two blank lines behind.
func trimBlankLine(out *bytes.Buffer) {
	b := out.Bytes()
	if bytes.HasSuffix(b, []byte("\n\n")) {
		out.Truncate(len(b) - 1)
	}
}
