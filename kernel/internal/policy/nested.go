package policy

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kulehq/kule/kernel/internal/effects"
)

// FindNestedRepos looks in root (the task's copy) for repositories inside
// the folder that the effects touch: a directory above a changed path that
// holds a .git, or a .git anywhere below a directory added or moved whole.
// The folder's own .git (at the top) does not count. Its answer goes into
// Facts.NestedRepos, since a repository added as one directory has no name
// that says so.
func FindNestedRepos(root string, es []effects.Effect) []string {
	isRepo := map[string]bool{}
	check := func(dir string) bool {
		if v, ok := isRepo[dir]; ok {
			return v
		}
		_, err := os.Lstat(filepath.Join(root, filepath.FromSlash(dir), ".git"))
		isRepo[dir] = err == nil
		return err == nil
	}
	found := map[string]bool{}
	for _, e := range es {
		p := cleanPath(e.Path)
		if p == "" || p == ".." || strings.HasPrefix(p, "../") {
			continue
		}
		// Directories above the path, below the top.
		for d := p; ; {
			i := strings.LastIndexByte(d, '/')
			if i < 0 {
				break
			}
			d = d[:i]
			if check(d) {
				found[d] = true
			}
		}
		if e.Dir && e.Kind != effects.Delete {
			if check(p) {
				found[p] = true
			}
			top := filepath.Join(root, filepath.FromSlash(p))
			_ = filepath.WalkDir(top, func(path string, d fs.DirEntry, err error) error {
				if err != nil {
					return nil
				}
				if d.Name() == ".git" && path != top {
					if rel, err := filepath.Rel(root, filepath.Dir(path)); err == nil {
						found[filepath.ToSlash(rel)] = true
					}
					return filepath.SkipDir
				}
				return nil
			})
		}
	}
	out := make([]string, 0, len(found))
	for d := range found {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}

// GatherFacts finds what FromEffects needs beyond the effects: the
// repositories inside the folder that they touch (looking at copyDir, the
// task's copy) and the paths below every directory changed whole (below an
// added or moved directory in copyDir, below a deleted one in folder, the
// real folder, which still holds it).
func GatherFacts(copyDir, folder string, es []effects.Effect) Facts {
	f := Facts{NestedRepos: FindNestedRepos(copyDir, es), Below: map[string][]string{}}
	list := func(root, rel string) {
		if _, done := f.Below[rel]; done || rel == "" {
			return
		}
		top := filepath.Join(root, filepath.FromSlash(cleanPath(rel)))
		var below []string
		_ = filepath.WalkDir(top, func(path string, d fs.DirEntry, err error) error {
			if err != nil || path == top {
				return nil
			}
			r, err := filepath.Rel(root, path)
			if err != nil {
				return nil
			}
			below = append(below, filepath.ToSlash(r))
			if d.IsDir() && d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		})
		f.Below[rel] = below
	}
	for _, e := range es {
		if !e.Dir {
			continue
		}
		switch e.Kind {
		case effects.Delete:
			list(folder, e.Path)
		case effects.Move:
			list(copyDir, e.Path)
			list(folder, e.From)
		default:
			list(copyDir, e.Path)
		}
	}
	return f
}
