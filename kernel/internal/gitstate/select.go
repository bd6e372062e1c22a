package gitstate

import (
	"maps"
	"slices"
	"strings"
)

// Selection names the parts of one repository's effects that a commit
// applies: the refs by name, the index (whole: its entries go in together,
// or none), the hooks and config files by name. New objects go in with any
// of them: objects are only ever added.
type Selection struct {
	Refs   []string `json:"refs,omitempty"`
	Index  bool     `json:"index,omitempty"`
	Hooks  []string `json:"hooks,omitempty"`
	Config []string `json:"config,omitempty"`
}

// Empty tells whether the selection applies nothing.
func (s Selection) Empty() bool {
	return len(s.Refs) == 0 && !s.Index && len(s.Hooks) == 0 && len(s.Config) == 0
}

// Only is a copy of e with only what s selects (and, with anything
// selected, the new objects); nil when s selects nothing e holds.
func (e *Effects) Only(s Selection) *Effects {
	out := &Effects{Repo: e.Repo, Nested: e.Nested, Gone: e.Gone, Made: e.Made, Outside: e.Outside}
	for _, r := range e.Refs {
		if slices.Contains(s.Refs, r.Name) {
			out.Refs = append(out.Refs, r)
		}
	}
	if s.Index {
		out.Index, out.StagedDiffers = e.Index, e.StagedDiffers
	}
	for _, c := range e.Hooks {
		if slices.Contains(s.Hooks, c.Name) {
			out.Hooks = append(out.Hooks, c)
		}
	}
	for _, c := range e.Config {
		if slices.Contains(s.Config, c.Name) {
			out.Config = append(out.Config, c)
		}
	}
	if len(out.Refs) == 0 && len(out.Index) == 0 && len(out.Hooks) == 0 && len(out.Config) == 0 {
		return nil
	}
	out.Objects = e.Objects
	return out
}

// AfterSelected is the base to keep once a commit applied, per repository
// path, what sel selects: the copy's objects where anything was applied (a
// commit adds every new object with it), and of refs,
// index, hooks and config only what was selected; everything else keeps
// its old value, so it stays pending and listed, never vanishes
// unapplied. Repositories the old base did not hold are left out (a new
// repository is never applied), and those the copy lost keep their old
// snapshot.
func (b *Base) AfterSelected(copyRoot string, sel map[string]Selection) (*Base, error) {
	now, err := TakeBase(copyRoot)
	if err != nil {
		return nil, err
	}
	out := &Base{}
	for _, old := range b.Repos {
		var cur *Snapshot
		for _, r := range now.Repos {
			if r.Path == old.Path {
				cur = r.Snapshot
			}
		}
		if cur == nil {
			out.Repos = append(out.Repos, old)
			continue
		}
		s := sel[old.Path]
		o := old.Snapshot
		ns := *o
		if !s.Empty() {
			// Everything new went in with what was applied; otherwise
			// nothing did, and the objects stay new for the next commit.
			ns.Objects = cur.Objects
		}
		ns.Refs = pick(o.Refs, cur.Refs, s.Refs)
		if s.Index {
			ns.Index, ns.IndexSum, ns.IndexStat, ns.lazy = cur.Index, cur.IndexSum, cur.IndexStat, cur.lazy
		}
		ns.Hooks = pick(o.Hooks, cur.Hooks, s.Hooks)
		ns.Config = pick(o.Config, cur.Config, s.Config)
		out.Repos = append(out.Repos, BaseRepo{Path: old.Path, Nested: old.Nested, Snapshot: &ns})
	}
	return out, nil
}

// pick is old with the named keys taken from cur (removed where cur has
// none).
func pick(old, cur map[string]string, names []string) map[string]string {
	out := maps.Clone(old)
	if out == nil {
		out = map[string]string{}
	}
	for _, n := range names {
		if v, ok := cur[n]; ok {
			out[n] = v
		} else {
			delete(out, n)
		}
	}
	return out
}

// Selection is, by repository, what the set's undo takes back: the refs,
// the index, the hooks and config files it restores.
func (set *UndoSet) Selection() map[string]Selection {
	out := map[string]Selection{}
	for _, ru := range set.Repos {
		if ru.Undo == nil {
			continue
		}
		s := out[ru.Path]
		for _, r := range ru.Undo.Refs {
			s.Refs = append(s.Refs, r.Name)
		}
		s.Index = s.Index || ru.Undo.Index != nil
		for _, f := range ru.Undo.Files {
			if h, ok := strings.CutPrefix(f.Name, "hooks/"); ok {
				s.Hooks = append(s.Hooks, h)
			} else {
				s.Config = append(s.Config, f.Name)
			}
		}
		out[ru.Path] = s
	}
	return out
}
