// Package scan finds a task's effects: it walks the copy, compares every entry
// with the base's manifest and names what changed. Files whose metadata
// matches the stat cache are not read; content is compared only where the
// metadata moved. Deleted content that reappears elsewhere is a move, and a
// directory added, deleted or moved whole is one effect.
package scan

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/kulehq/kule/kernel/internal/clone"
	"github.com/kulehq/kule/kernel/internal/effects"
	"github.com/kulehq/kule/kernel/internal/ignore"
	"github.com/kulehq/kule/kernel/internal/manifest"
	"github.com/kulehq/kule/kernel/internal/relpath"
	"github.com/kulehq/kule/kernel/internal/walk"
)

// Result is what a scan found.
type Result struct {
	Effects  []effects.Effect
	Problems []walk.Problem
	// GitDirs are the directories (slash paths, "." for the root) that hold
	// a `.git` entry, which the walk left out: where kernel/internal/gitstate looks
	// for repositories, so it need not walk the tree again.
	GitDirs []string
}

// IsGitPath reports whether rel lies in a repository's git directory (or is
// a worktree's .git file). Those are judged by meaning (kernel/internal/gitstate),
// never file by file.
func IsGitPath(rel string) bool {
	return rel == ".git" || strings.HasPrefix(rel, ".git/") || strings.HasSuffix(rel, "/.git") || strings.Contains(rel, "/.git/")
}

// Options tune a scan.
type Options struct {
	Ignore *ignore.Matcher // marks effects the folder's .gitignore excludes
}

// Scan compares copyDir with the manifest m of its base. ctx ends it early;
// the error is then ctx's.
func Scan(ctx context.Context, copyDir string, m *manifest.Manifest, base clone.Base, opt Options) (*Result, error) {
	return Start(ctx, copyDir).Compare(m, base, opt)
}

// Walking is a walk of a copy under way, compared with the base's manifest
// a directory at a time as the walk lists it: the walk (system calls) and
// the manifest's decoding overlap, and the tree's entries are never all held
// at once — only the few that changed outlive their directory's listing.
type Walking struct {
	ctx     context.Context
	copyDir string
	done    chan struct{}
	err     error

	// ready is closed once cmp is set (Compare): until then each listing
	// is kept in stash, to be compared once the walk is over.
	ready chan struct{}
	cmp   *comparer

	mu      sync.Mutex // guards what follows while the walk runs
	gitDirs []string
	stash   []listing
	found   found
	probs   []walk.Problem
}

// listing is one directory's entries, kept until the manifest is at hand.
type listing struct {
	dir   string
	items []walk.Item
}

// found is what the comparison of listings leaves for Compare: the entries
// whose metadata moved or that the base lacks, with their manifest index
// (-1 for an added entry).
type found struct {
	items []walk.Item
	at    []int32
}

// Start begins walking copyDir in the background. Once ctx is done the
// walk passes over everything left, and Compare returns ctx's error.
func Start(ctx context.Context, copyDir string) *Walking {
	wk := &Walking{ctx: ctx, copyDir: copyDir, done: make(chan struct{}), ready: make(chan struct{})}
	stop := ctx.Done() // nil for a context that never ends
	go func() {
		defer close(wk.done)
		var res *walk.Result
		res, wk.err = walk.Walk(copyDir, walk.Options{Skip: func(rel string, _ effects.EntryType) bool {
			select {
			case <-stop:
				return true // ended: descend no further
			default:
			}
			if relpath.Base(rel) != ".git" {
				return false
			}
			dir := relpath.Dir(rel)
			if dir == "" {
				dir = "."
			}
			wk.mu.Lock()
			wk.gitDirs = append(wk.gitDirs, strings.Clone(dir)) // rel is the walk's own
			wk.mu.Unlock()
			return true
		}, Visit: wk.visit})
		if res != nil {
			wk.probs = res.Problems
		}
	}()
	return wk
}

// visit compares one directory's listing, or keeps a copy of it while the
// manifest is not loaded yet.
func (wk *Walking) visit(dir string, items []walk.Item) {
	select {
	case <-wk.ready:
		var f found
		wk.cmp.dir(dir, items, &f)
		if len(f.at) > 0 {
			wk.mu.Lock()
			wk.found.items = append(wk.found.items, f.items...)
			wk.found.at = append(wk.found.at, f.at...)
			wk.mu.Unlock()
		}
	default:
		l := listing{dir: strings.Clone(dir), items: slices.Clone(items)}
		for k := range l.items {
			l.items[k].Path = strings.Clone(l.items[k].Path)
		}
		wk.mu.Lock()
		wk.stash = append(wk.stash, l)
		wk.mu.Unlock()
	}
}

// Wait waits for the walk to end, for a caller that will not Compare.
func (wk *Walking) Wait() { <-wk.done }

// Compare compares the walk with the manifest m of the copy's base, as the
// walk goes on, and waits for it to end.
func (wk *Walking) Compare(m *manifest.Manifest, base clone.Base, opt Options) (*Result, error) {
	c := newComparer(m)
	wk.cmp = c
	close(wk.ready) // listings from here on are compared as they come
	<-wk.done
	if wk.err != nil {
		return nil, wk.err
	}
	if err := wk.ctx.Err(); err != nil {
		return nil, err // the walk passed over what was left: not a true list
	}
	for _, l := range wk.stash {
		c.dir(l.dir, l.items, &wk.found)
	}
	wk.stash = nil
	gitDirs := wk.gitDirs
	slices.Sort(gitDirs)
	s := &scanner{copyDir: wk.copyDir, base: base, res: &Result{Problems: wk.probs, GitDirs: gitDirs}}
	// What was found, in path order, and the base's entries no listing
	// held: the same calls, in the same order, as a merge of the whole
	// walk with the whole manifest, less the entries nothing happened to.
	f := &wk.found
	order := make([]int32, len(f.at))
	for k := range order {
		order[k] = int32(k)
	}
	slices.SortFunc(order, func(a, b int32) int { return strings.Compare(f.items[a].Path, f.items[b].Path) })
	old := m.Entries
	i, j := 0, 0
	for n := 0; ; n++ {
		for i < len(old) && (c.matched[i] || IsGitPath(old[i].Path)) {
			i++ // seen in the copy, or judged by meaning, never file by file
		}
		if i == len(old) && j == len(order) {
			break
		}
		if n%1024 == 0 && wk.ctx.Err() != nil {
			return nil, wk.ctx.Err() // content is read below: stop between files
		}
		if j == len(order) || (i < len(old) && old[i].Path < f.items[order[j]].Path) {
			s.deleted(&old[i])
			i++
			continue
		}
		it, at := f.items[order[j]], f.at[order[j]]
		if at < 0 {
			s.added(it)
		} else {
			s.both(&old[at], it)
		}
		j++
	}
	s.finish(opt)
	return s.res, nil
}

// finish pairs moves, collapses whole directories, marks what the folder's
// .gitignore excludes and puts the effects in order.
func (s *scanner) finish(opt Options) {
	s.findMoves()
	s.collapse()
	if opt.Ignore != nil {
		for k := range s.res.Effects {
			e := &s.res.Effects[k]
			e.Ignored = opt.Ignore.Ignored(e.Path, e.NewType == effects.TypeDir || e.OldType == effects.TypeDir) &&
				(e.From == "" || opt.Ignore.Ignored(e.From, e.Dir))
		}
	}
	effects.Sort(s.res.Effects)
}

// comparer finds each directory's entries in the manifest: the manifest is
// in order of whole paths, where a directory's entries lie among its
// subdirectories' ("a/b", "a/b-c", "a/b/x", "a/c"), so each entry links to
// the next one of its own directory.
type comparer struct {
	entries []manifest.Entry
	first   map[string]int32 // a directory's first entry
	next    []int32          // the next entry in the same directory, or -1
	matched []bool           // the copy still has the entry; each set by one listing only
}

func newComparer(m *manifest.Manifest) *comparer {
	c := &comparer{entries: m.Entries, first: map[string]int32{}, next: make([]int32, len(m.Entries)), matched: make([]bool, len(m.Entries))}
	// The directories whose entries are under way, outermost first: a
	// directory's entries all share its prefix, so once a path leaves
	// that prefix none of them comes again.
	type open struct {
		dir  string
		last int32
	}
	stack := []open{{dir: "", last: -1}}
	for i := range c.entries {
		p := c.entries[i].Path
		for len(stack) > 1 && !below(p, stack[len(stack)-1].dir) {
			stack = stack[:len(stack)-1]
		}
		parent := relpath.Dir(p)
		if stack[len(stack)-1].dir != parent {
			stack = append(stack, open{dir: parent, last: -1})
		}
		top := &stack[len(stack)-1]
		if top.last < 0 {
			c.first[parent] = int32(i)
		} else {
			c.next[top.last] = int32(i)
		}
		c.next[i] = -1
		top.last = int32(i)
	}
	return c
}

// below reports whether p lies below dir ("" is the root).
func below(p, dir string) bool {
	return len(p) > len(dir) && p[len(dir)] == '/' && p[:len(dir)] == dir
}

// dir merges one directory's listing (sorted by name) with the manifest's
// entries of that directory, marks the entries the copy still has, and adds
// to f the listed entries the base lacks or whose metadata moved. It runs on
// the walk's workers, several at once, each on a directory of its own.
func (c *comparer) dir(dir string, items []walk.Item, f *found) {
	i := int32(-1)
	if k, ok := c.first[dir]; ok {
		i = k
	}
	for j := 0; i >= 0 || j < len(items); {
		if i >= 0 {
			if p := c.entries[i].Path; strings.HasSuffix(p, ".git") && IsGitPath(p) {
				i = c.next[i] // judged by meaning, never file by file
				continue
			}
		}
		switch {
		case j == len(items) || (i >= 0 && c.entries[i].Path < items[j].Path):
			i = c.next[i] // gone from the copy: deleted
		case i < 0 || items[j].Path < c.entries[i].Path:
			f.keep(items[j], -1)
			j++
		default:
			c.matched[i] = true
			if o, it := &c.entries[i], &items[j]; !settled(o, it) {
				f.keep(*it, i)
			}
			i = c.next[i]
			j++
		}
	}
}

func (f *found) keep(it walk.Item, at int32) {
	it.Path = strings.Clone(it.Path) // the walk reuses it
	f.items = append(f.items, it)
	f.at = append(f.at, at)
}

// settled reports, from metadata alone, that both would find nothing to
// say about the entry: the stat cache holds, or a directory kept its mode.
func settled(o *manifest.Entry, it *walk.Item) bool {
	return o.Type == it.Type && (unchanged(o, *it) || (it.Type == effects.TypeDir && o.Mode == it.Mode))
}

type scanner struct {
	copyDir string
	base    clone.Base
	res     *Result
	dels    []*manifest.Entry // deleted files, candidates for moves
	adds    []walk.Item       // added files, candidates for moves
}

func (s *scanner) emit(e effects.Effect) { s.res.Effects = append(s.res.Effects, e) }

func (s *scanner) deleted(o *manifest.Entry) {
	s.emit(effects.Effect{Kind: effects.Delete, Path: o.Path, OldType: o.Type, OldMode: o.FileMode(), Size: o.Size})
	if o.Type == effects.TypeFile {
		s.dels = append(s.dels, o)
	}
}

func (s *scanner) added(it walk.Item) {
	e := effects.Effect{Kind: effects.Add, Path: it.Path, NewType: it.Type, NewMode: it.FileMode(), Size: it.Size}
	if it.Type == effects.TypeLink {
		e.Kind = effects.Link
		e.Target, _ = os.Readlink(filepath.Join(s.copyDir, it.Path))
	}
	s.emit(e)
	if it.Type == effects.TypeFile {
		s.adds = append(s.adds, it)
	}
}

// unchanged is the stat cache: the copy's entry still has the metadata it had
// right after the last sync, so its content was not touched.
func unchanged(o *manifest.Entry, it walk.Item) bool {
	return o.Size == it.Size && o.MTime == it.MTime && o.CTime == it.CTime && o.Ino == it.Ino && o.Mode == it.Mode
}

func (s *scanner) both(o *manifest.Entry, it walk.Item) {
	if o.Type != it.Type {
		e := effects.Effect{Kind: effects.Type, Path: it.Path, OldType: o.Type, NewType: it.Type, OldMode: o.FileMode(), NewMode: it.FileMode(), Size: it.Size}
		if it.Type == effects.TypeLink {
			e.Target, _ = os.Readlink(filepath.Join(s.copyDir, it.Path))
		}
		s.emit(e)
		return
	}
	if unchanged(o, it) {
		return
	}
	base := effects.Effect{Path: it.Path, OldType: o.Type, NewType: it.Type, OldMode: o.FileMode(), NewMode: it.FileMode(), Size: it.Size}
	switch it.Type {
	case effects.TypeFile:
		same := false
		if o.Size == it.Size {
			var err error
			same, err = s.base.Same(o, filepath.Join(s.copyDir, it.Path))
			if err != nil {
				s.res.Problems = append(s.res.Problems, walk.Problem{Path: it.Path, Kind: walk.Unreadable, Err: err})
				return
			}
		}
		switch {
		case !same:
			base.Kind = effects.Modify
		case o.Mode != it.Mode:
			base.Kind = effects.Mode
		default:
			return // touched, not changed
		}
	case effects.TypeLink:
		target, err := os.Readlink(filepath.Join(s.copyDir, it.Path))
		if err != nil {
			s.res.Problems = append(s.res.Problems, walk.Problem{Path: it.Path, Kind: walk.Vanished, Err: err})
			return
		}
		if target == o.Target {
			return
		}
		base.Kind, base.Target = effects.Link, target
	case effects.TypeDir:
		if o.Mode == it.Mode {
			return // a directory's own times change with its entries
		}
		base.Kind = effects.Mode
	}
	s.emit(base)
}

// findMoves pairs deleted files with added files of the same content.
func (s *scanner) findMoves() {
	if len(s.dels) == 0 || len(s.adds) == 0 {
		return
	}
	bySize := map[int64][]*manifest.Entry{}
	for _, d := range s.dels {
		bySize[d.Size] = append(bySize[d.Size], d)
	}
	oldHash := func(d *manifest.Entry) ([32]byte, bool) {
		if d.HasHash() {
			return d.Hash, true
		}
		r, err := s.base.Open(d)
		if err != nil {
			return [32]byte{}, false
		}
		defer r.Close()
		h, err := clone.HashReader(r)
		return h, err == nil
	}
	moved := map[string]string{} // added path → deleted path
	taken := map[string]bool{}
	for _, a := range s.adds {
		cands := bySize[a.Size]
		if len(cands) == 0 {
			continue
		}
		h, err := clone.HashFile(filepath.Join(s.copyDir, a.Path))
		if err != nil {
			continue
		}
		// Prefer a deleted file with the same name (a file moved to another folder).
		sort.SliceStable(cands, func(i, j int) bool {
			return filepath.Base(cands[i].Path) == filepath.Base(a.Path) && filepath.Base(cands[j].Path) != filepath.Base(a.Path)
		})
		for _, d := range cands {
			if taken[d.Path] {
				continue
			}
			if oh, ok := oldHash(d); ok && oh == h && d.Mode == a.Mode {
				moved[a.Path] = d.Path
				taken[d.Path] = true
				break
			}
		}
	}
	if len(moved) == 0 {
		return
	}
	out := s.res.Effects[:0]
	for _, e := range s.res.Effects {
		if e.Kind == effects.Delete && taken[e.Path] {
			continue
		}
		if from, ok := moved[e.Path]; ok && e.Kind == effects.Add {
			e.Kind, e.From, e.OldType, e.OldMode = effects.Move, from, effects.TypeFile, e.NewMode
		}
		out = append(out, e)
	}
	s.res.Effects = out
}

// collapse folds the entries below a directory that was added, deleted or
// changed type into that directory's effect, and turns a directory whose
// every file moved to the same names under a new directory into one move.
func (s *scanner) collapse() {
	es := s.res.Effects
	effects.Sort(es)
	// Top-most whole-directory effects.
	var tops []int
	for k, e := range es {
		whole := (e.Kind == effects.Add && e.NewType == effects.TypeDir) ||
			(e.Kind == effects.Delete && e.OldType == effects.TypeDir) ||
			(e.Kind == effects.Type && (e.OldType == effects.TypeDir || e.NewType == effects.TypeDir))
		if !whole {
			continue
		}
		if len(tops) > 0 && under(e.Path, es[tops[len(tops)-1]].Path) {
			continue
		}
		tops = append(tops, k)
	}
	if len(tops) == 0 {
		return
	}
	drop := make([]bool, len(es))
	for _, k := range tops {
		top := &es[k]
		top.Dir = top.Kind != effects.Type || top.OldType == effects.TypeDir || top.NewType == effects.TypeDir
		for n := k + 1; n < len(es) && under(es[n].Path, top.Path); n++ {
			if es[n].Kind == effects.Move { // a move out of or into it stays its own effect
				continue
			}
			if es[n].OldType != effects.TypeDir && es[n].NewType != effects.TypeDir {
				top.Files++
			}
			drop[n] = true
		}
	}
	out := es[:0]
	for k, e := range es {
		if !drop[k] {
			out = append(out, e)
		}
	}
	s.res.Effects = s.directoryMoves(out)
}

// directoryMoves turns "delete dir D" + "add dir A" + a move of every file
// D/x → A/x (and nothing else in either) into one move D/ → A/.
func (s *scanner) directoryMoves(es []effects.Effect) []effects.Effect {
	var delDirs, addDirs []int
	for k, e := range es {
		if e.Dir && e.Kind == effects.Delete {
			delDirs = append(delDirs, k)
		}
		if e.Dir && e.Kind == effects.Add {
			addDirs = append(addDirs, k)
		}
	}
	if len(delDirs) == 0 || len(addDirs) == 0 {
		return es
	}
	drop := make([]bool, len(es))
	for _, dk := range delDirs {
		d := es[dk]
		if d.Files != 0 { // files deleted outright: not a pure move
			continue
		}
		for _, ak := range addDirs {
			a := es[ak]
			if drop[ak] || a.Files != 0 {
				continue
			}
			var moves []int
			ok := true
			for k, e := range es {
				if e.Kind != effects.Move {
					continue
				}
				inD, inA := under(e.From, d.Path), under(e.Path, a.Path)
				if inD != inA {
					if inD || inA {
						ok = false
					}
					continue
				}
				if !inD {
					continue
				}
				if strings.TrimPrefix(e.From, d.Path) != strings.TrimPrefix(e.Path, a.Path) {
					ok = false
					break
				}
				moves = append(moves, k)
			}
			if !ok || len(moves) == 0 {
				continue
			}
			es[dk] = effects.Effect{Kind: effects.Move, Path: a.Path, From: d.Path, Dir: true, Files: len(moves),
				OldType: effects.TypeDir, NewType: effects.TypeDir, OldMode: d.OldMode, NewMode: a.NewMode}
			drop[ak] = true
			for _, k := range moves {
				drop[k] = true
			}
			break
		}
	}
	out := es[:0]
	for k, e := range es {
		if !drop[k] {
			out = append(out, e)
		}
	}
	effects.Sort(out)
	return out
}

func under(p, dir string) bool { return strings.HasPrefix(p, dir+"/") }
