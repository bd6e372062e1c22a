package scan

import (
	"context"
	"slices"
	"strings"

	"github.com/kulehq/kule/kernel/internal/clone"
	"github.com/kulehq/kule/kernel/internal/effects"
	"github.com/kulehq/kule/kernel/internal/manifest"
	"github.com/kulehq/kule/kernel/internal/relpath"
	"github.com/kulehq/kule/kernel/internal/walk"
)

// Dirty is a path of the copy that may differ from the base. Deep: so may
// anything below it (a directory deleted, or replaced by another).
type Dirty struct {
	Path string
	Deep bool
}

// Lookup is the part of a manifest that Paths reads (manifest.Indexed).
type Lookup interface {
	Get(path string) (*manifest.Entry, bool, error)
	Below(dir string) ([]manifest.Entry, error)
}

// Paths compares root with the base at the dirty paths only, for a caller
// that knows every path that can differ (the overlay backend's record of
// what its folds moved): it stats as many entries as there are paths,
// and reads of the manifest only the entries at them, where Scan stats the
// whole tree and decodes the whole manifest. It finds what Scan would find
// there — moves among them, directories added or deleted whole — and
// returns, beside the result, the part of the manifest it read, which
// holds every entry an effect names.
//
// A path becomes deep where a directory appears or goes: a directory new
// in the copy is walked, and the base's entries below one that is gone are
// read. A path below something that is no longer a directory (a file, or a
// link, which is never followed) counts as gone.
func Paths(ctx context.Context, root string, look Lookup, base clone.Base, dirty []Dirty, opt Options) (*Result, *manifest.Manifest, error) {
	ds := slices.Clone(dirty)
	slices.SortFunc(ds, func(a, b Dirty) int { return strings.Compare(a.Path, b.Path) })
	deep := map[string]bool{}
	covered := func(p string) bool {
		for d := relpath.Dir(p); d != ""; d = relpath.Dir(d) {
			if deep[d] {
				return true
			}
		}
		return false
	}
	res := &Result{}
	gitDirs := map[string]bool{}
	var items []walk.Item
	part := &manifest.Manifest{}
	dirOK := map[string]bool{}
	for k, d := range ds {
		if k > 0 && ds[k-1].Path == d.Path && !d.Deep {
			continue
		}
		if k%256 == 0 && ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		p := d.Path
		if p == "" || covered(p) {
			continue
		}
		if IsGitPath(p) {
			gitDirs[gitDirOf(p)] = true
			continue
		}
		it, err := lstatDirty(root, p, dirOK)
		if err != nil {
			res.Problems = append(res.Problems, walk.Problem{Path: p, Kind: walk.Unreadable, Err: err})
			continue
		}
		o, had, err := look.Get(p)
		if err != nil {
			return nil, nil, err
		}
		isDir := it.Type == effects.TypeDir
		wasDir := had && o.Type == effects.TypeDir
		if had {
			part.Entries = append(part.Entries, *o)
		}
		if it.Type != effects.TypeNone {
			items = append(items, it)
		}
		if !d.Deep && isDir == wasDir {
			continue
		}
		deep[p] = true
		if wasDir {
			below, err := look.Below(p)
			if err != nil {
				return nil, nil, err
			}
			part.Entries = append(part.Entries, below...)
		}
		if isDir {
			w, err := walk.WalkBeneath(root, p, walk.Options{Skip: func(rel string, _ effects.EntryType) bool {
				if relpath.Base(rel) == ".git" {
					if d := relpath.Dir(rel); d != "" {
						gitDirs[p+"/"+d] = true
					} else {
						gitDirs[p] = true
					}
					return true
				}
				return false
			}, Workers: 1})
			if err != nil {
				res.Problems = append(res.Problems, walk.Problem{Path: p, Kind: walk.Unreadable, Err: err})
				continue
			}
			for _, sub := range w.Items {
				sub.Path = p + "/" + sub.Path
				items = append(items, sub)
			}
			for _, pr := range w.Problems {
				if pr.Path != "" {
					pr.Path = p + "/" + pr.Path
				} else {
					pr.Path = p
				}
				res.Problems = append(res.Problems, pr)
			}
		}
	}
	part.Sort()
	part.Entries = slices.CompactFunc(part.Entries, func(a, b manifest.Entry) bool { return a.Path == b.Path })
	slices.SortFunc(items, func(a, b walk.Item) int { return strings.Compare(a.Path, b.Path) })
	items = slices.CompactFunc(items, func(a, b walk.Item) bool { return a.Path == b.Path })
	for d := range gitDirs {
		res.GitDirs = append(res.GitDirs, d)
	}
	slices.Sort(res.GitDirs)

	s := &scanner{copyDir: root, base: base, res: res}
	old := part.Entries
	i, j := 0, 0
	for i < len(old) || j < len(items) {
		if i < len(old) && IsGitPath(old[i].Path) {
			i++
			continue
		}
		switch {
		case j == len(items) || (i < len(old) && old[i].Path < items[j].Path):
			s.deleted(&old[i])
			i++
		case i == len(old) || items[j].Path < old[i].Path:
			s.added(items[j])
			j++
		default:
			s.both(&old[i], items[j])
			i++
			j++
		}
	}
	s.finish(opt)
	return s.res, part, nil
}

// lstatDirty stats a dirty path; only a test takes the guard away (a plain
// lstat of the joined path, which follows a link on the way), to show the
// attack it stops.
var lstatDirty = lstatBeneath

// gitDirOf is the directory holding the .git that rel lies in ("." for the
// root), as Result.GitDirs names it.
func gitDirOf(rel string) string {
	if rel == ".git" || strings.HasPrefix(rel, ".git/") {
		return "."
	}
	i := strings.Index(rel, "/.git/")
	if j := len(rel) - len("/.git"); strings.HasSuffix(rel, "/.git") && (i < 0 || j < i) {
		i = j
	}
	return rel[:i]
}
