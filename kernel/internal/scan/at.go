package scan

import (
	"slices"
	"strings"

	"github.com/kulehq/kule/kernel/internal/clone"
	"github.com/kulehq/kule/kernel/internal/effects"
	"github.com/kulehq/kule/kernel/internal/manifest"
	"github.com/kulehq/kule/kernel/internal/walk"
)

// At compares root with the manifest m at the given paths only, against the
// real folder's stat data the base recorded at the sync (Entry.Folder): the
// files nobody touched there are not read. It answers "did the person change
// these paths by hand?" for as many stats as there are paths, where Scan
// would stat the whole folder. Moves are not looked for and directories are
// not collapsed: each path is its own effect. A path below something that is
// no longer a directory (a file, or a link that is never followed) counts as
// gone.
func At(root string, m *manifest.Manifest, base clone.Base, paths []string, opt Options) (*Result, error) {
	ps := slices.Clone(paths)
	slices.Sort(ps)
	ps = slices.Compact(ps)
	s := &scanner{copyDir: root, base: base, res: &Result{}}
	dirOK := map[string]bool{} // parent directory → it is a real directory below root
	for _, p := range ps {
		if p == "" || IsGitPath(p) {
			continue
		}
		it, err := lstatBeneath(root, p, dirOK)
		if err != nil {
			s.res.Problems = append(s.res.Problems, walk.Problem{Path: p, Kind: walk.Unreadable, Err: err})
			continue
		}
		o, had := m.Get(p)
		var fe manifest.Entry
		if had {
			fe = *o
			fe.Size, fe.MTime, fe.CTime, fe.Ino, fe.Mode = o.Folder.Size, o.Folder.MTime, o.Folder.CTime, o.Folder.Ino, o.Folder.Mode
		}
		switch {
		case !had && it.Type == effects.TypeNone:
		case !had:
			s.added(it)
		case it.Type == effects.TypeNone:
			s.deleted(&fe)
		default:
			s.both(&fe, it)
		}
	}
	if opt.Ignore != nil {
		for k := range s.res.Effects {
			e := &s.res.Effects[k]
			e.Ignored = opt.Ignore.Ignored(e.Path, e.NewType == effects.TypeDir || e.OldType == effects.TypeDir)
		}
	}
	effects.Sort(s.res.Effects)
	return s.res, nil
}

// lstatBeneath is walk.Lstat for rel below root that follows no link on the
// way: when a parent is a link or a file, rel is absent (TypeNone).
func lstatBeneath(root, rel string, dirOK map[string]bool) (walk.Item, error) {
	for i := strings.IndexByte(rel, '/'); i >= 0; i = next(rel, i) {
		parent := rel[:i]
		ok, seen := dirOK[parent]
		if !seen {
			it, err := walk.Lstat(root, parent)
			if err != nil {
				return walk.Item{}, err
			}
			ok = it.Type == effects.TypeDir
			dirOK[parent] = ok
		}
		if !ok {
			return walk.Item{Path: rel}, nil
		}
	}
	return walk.Lstat(root, rel)
}

func next(s string, i int) int {
	j := strings.IndexByte(s[i+1:], '/')
	if j < 0 {
		return -1
	}
	return i + 1 + j
}
