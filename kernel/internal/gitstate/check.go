package gitstate

import (
	"fmt"
	"slices"
)

// Check tells whether the folder's repository still agrees with base where
// the task's effects touch it. A ref the task moved must still hold its base
// value in the folder (or already the task's value); an index path the task
// changed must still hold its base entries (or the task's); a config or hook
// file the task changed must be unchanged. Anything else the person did —
// commits on other branches, `git gc`, `git pack-refs`, `git status`,
// switching branches and back — is no conflict. The error is a
// *ConflictError naming each clash.
func Check(base *Snapshot, folderGitDir string, eff *Effects) error {
	l, err := openLayout(folderGitDir)
	if err != nil {
		return err
	}
	refs, err := readRefs(l)
	if err != nil {
		return err
	}
	idx, err := readIndexFile(l.index())
	if err != nil {
		return err
	}
	hooks, err := hashHooks(l)
	if err != nil {
		return err
	}
	config, err := hashConfig(l)
	if err != nil {
		return err
	}
	var items []string
	items = append(items, refConflicts(refs, eff)...)
	items = append(items, headConflict(base, refs, eff)...)
	plan, err := planIndex(base, entriesOf(idx), eff)
	if err != nil {
		return err
	}
	items = append(items, plan.conflicts...)
	items = append(items, fileConflicts("config", config, eff.Config)...)
	items = append(items, fileConflicts("hook", hooks, eff.Hooks)...)
	if len(items) > 0 {
		return &ConflictError{Op: "check", Items: items}
	}
	return nil
}

func refConflicts(folder map[string]string, eff *Effects) []string {
	var out []string
	for _, r := range eff.Refs {
		cur := folder[r.Name]
		if cur == r.Old || cur == r.New {
			continue
		}
		name := shortRef(r.Name)
		switch {
		case r.Old == "":
			out = append(out, fmt.Sprintf("%s: the folder made it at %s meanwhile (the task made it at %s)", name, short(cur), short(r.New)))
		case cur == "":
			out = append(out, fmt.Sprintf("%s: the folder deleted it meanwhile (it was %s; the task moved it to %s)", name, short(r.Old), short(r.New)))
		default:
			out = append(out, fmt.Sprintf("%s: the folder moved it %s → %s meanwhile (a person's commit?); the task moved it to %s", name, short(r.Old), short(cur), short(r.New)))
		}
	}
	return out
}

// headConflict: index changes were made against the branch HEAD named in
// base; if the folder now stands on another branch (and did not come back),
// applying them would stage the task's files on the wrong branch.
func headConflict(base *Snapshot, folder map[string]string, eff *Effects) []string {
	if len(eff.Index) == 0 {
		return nil
	}
	want := base.Refs["HEAD"]
	for _, r := range eff.Refs {
		if r.Name == "HEAD" {
			if folder["HEAD"] == r.New {
				return nil
			}
		}
	}
	if cur := folder["HEAD"]; cur != want {
		return []string{fmt.Sprintf("HEAD: the folder switched %s → %s meanwhile; the task's staged changes were made on %s", short(want), short(cur), short(want))}
	}
	return nil
}

func fileConflicts(what string, folder map[string]string, changes []FileChange) []string {
	var out []string
	for _, c := range changes {
		cur := folder[c.Name]
		if cur == c.Old || cur == c.New {
			continue
		}
		if what == "config" {
			out = append(out, fmt.Sprintf("%s: changed in the folder meanwhile", c.Name))
		} else {
			out = append(out, fmt.Sprintf("hook %s: changed in the folder meanwhile", c.Name))
		}
	}
	return out
}

// indexPlan is how the task's index changes land on the folder's index: for
// each path the task touched, the folder's entries before and the entries
// to write.
type indexPlan struct {
	paths     []string
	before    map[string][]indexEntry // folder's entries now
	after     map[string][]indexEntry // entries the task wants
	conflicts []string
}

// planIndex merges by path: a path the task changed takes the task's
// entries if the folder still holds base's entries there (or the task's
// already); a path the person staged meanwhile that the task did not touch
// keeps the person's entries.
func planIndex(base *Snapshot, folder []indexEntry, eff *Effects) (*indexPlan, error) {
	p := &indexPlan{before: map[string][]indexEntry{}, after: map[string][]indexEntry{}}
	touched := map[string][]IndexChange{}
	for _, c := range eff.Index {
		touched[c.Path] = append(touched[c.Path], c)
	}
	if len(touched) == 0 {
		return p, nil
	}
	baseIndex, err := base.index()
	if err != nil {
		return nil, err
	}
	baseAt := map[string][]indexEntry{}
	for _, e := range baseIndex {
		if _, ok := touched[e.Path]; ok {
			baseAt[e.Path] = append(baseAt[e.Path], e)
		}
	}
	for _, e := range folder {
		if _, ok := touched[e.Path]; ok {
			p.before[e.Path] = append(p.before[e.Path], e)
		}
	}
	// The task's entries: base's, with the task's changes by stage.
	for path, changes := range touched {
		byStage := map[uint8]indexEntry{}
		for _, e := range baseAt[path] {
			byStage[e.Stage] = e
		}
		for _, c := range changes {
			ne, err := c.newEntry()
			if err != nil {
				return nil, err
			}
			if ne == nil {
				delete(byStage, uint8(c.Stage))
			} else {
				byStage[ne.Stage] = *ne
			}
		}
		var want []indexEntry
		for _, e := range byStage {
			want = append(want, e)
		}
		slices.SortFunc(want, cmpEntry)
		p.after[path] = want
		p.paths = append(p.paths, path)
		if cur := p.before[path]; !sameEntries(cur, baseAt[path]) && !sameEntries(cur, want) {
			p.conflicts = append(p.conflicts, fmt.Sprintf("index %s: staged in the folder meanwhile", path))
		}
	}
	slices.Sort(p.paths)
	return p, nil
}
