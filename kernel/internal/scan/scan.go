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

// Walking is a walk of a copy under way, to be compared with the base's
// manifest once that is loaded: the walk (system calls) and the manifest's
// decoding (memory) then overlap instead of following each other.
type Walking struct {
	ctx     context.Context
	copyDir string
	done    chan struct{}
	w       *walk.Result
	gitDirs []string
	err     error
}

// Start begins walking copyDir in the background. Once ctx is done the
// walk passes over everything left, and Compare returns ctx's error.
func Start(ctx context.Context, copyDir string) *Walking {
	wk := &Walking{ctx: ctx, copyDir: copyDir, done: make(chan struct{})}
	stop := ctx.Done() // nil for a context that never ends
	go func() {
		defer close(wk.done)
		var mu sync.Mutex
		wk.w, wk.err = walk.Walk(copyDir, walk.Options{Skip: func(rel string, _ effects.EntryType) bool {
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
			mu.Lock()
			wk.gitDirs = append(wk.gitDirs, dir)
			mu.Unlock()
			return true
		}})
	}()
	return wk
}

// Wait waits for the walk to end, for a caller that will not Compare.
func (wk *Walking) Wait() { <-wk.done }

// Compare waits for the walk and compares it with the manifest m of the
// copy's base.
func (wk *Walking) Compare(m *manifest.Manifest, base clone.Base, opt Options) (*Result, error) {
	<-wk.done
	if wk.err != nil {
		return nil, wk.err
	}
	if err := wk.ctx.Err(); err != nil {
		return nil, err // the walk passed over what was left: not a true list
	}
	w, copyDir, gitDirs := wk.w, wk.copyDir, wk.gitDirs
	slices.Sort(gitDirs)
	s := &scanner{copyDir: copyDir, base: base, res: &Result{Problems: w.Problems, GitDirs: gitDirs}}
	old := m.Entries
	i, j := 0, 0
	for n := 0; i < len(old) || j < len(w.Items); n++ {
		if i < len(old) && IsGitPath(old[i].Path) {
			i++ // judged by meaning, never file by file
			continue
		}
		if n%1024 == 0 && wk.ctx.Err() != nil {
			return nil, wk.ctx.Err() // content is read below: stop between files
		}
		switch {
		case j == len(w.Items) || (i < len(old) && old[i].Path < w.Items[j].Path):
			s.deleted(&old[i])
			i++
		case i == len(old) || w.Items[j].Path < old[i].Path:
			s.added(w.Items[j])
			j++
		default:
			s.both(&old[i], w.Items[j])
			i++
			j++
		}
	}
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
	return s.res, nil
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
