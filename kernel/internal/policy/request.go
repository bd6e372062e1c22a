package policy

import (
	"strings"

	"github.com/kulehq/kule/kernel/internal/effects"
)

// Facts is what FromEffects needs to know beyond the effects themselves;
// GatherFacts finds it.
type Facts struct {
	// NestedRepos are directories (relative to the folder) known to hold a
	// repository of their own, found by looking at the copy: a directory
	// added whole is one effect, and its .git inside it has no name to read.
	NestedRepos []string
	// Below holds, for a directory added, moved or deleted whole (one
	// effect), the paths below it, relative to the folder: a new .github
	// directory is one effect, and its workflows are judged by their names.
	Below map[string][]string
}

// FromEffects maps effects to requests, one per effect, in order:
// add→file.create, modify→file.modify, delete→file.delete, move→file.move,
// mode→file.mode, link (and a type change to a link)→file.link, any other
// type change→file.modify. A whole directory deleted counts the files below
// it (Request.Count), so mass-delete rules see them; moves are never
// deletions.
func FromEffects(es []effects.Effect, facts Facts) []Request {
	out := make([]Request, 0, len(es))
	for i, e := range es {
		r := Request{Path: e.Path, Effect: i, Count: 1}
		if e.Dir {
			r.Count = max(e.Files, 1)
		}
		switch e.Kind {
		case effects.Add:
			r.Action = FileCreate
		case effects.Modify:
			r.Action = FileModify
		case effects.Delete:
			r.Action = FileDelete
		case effects.Move:
			r.Action = FileMove
			r.From = e.From
		case effects.Mode:
			r.Action = FileMode
		case effects.Link:
			r.Action = FileLink
		case effects.Type:
			r.Action = FileModify
		default:
			// A kind this package does not know is judged as the
			// strictest file change there is: a link.
			r.Action = FileLink
		}
		if e.Kind != effects.Delete && e.NewType == effects.TypeLink {
			r.Action, r.Link = FileLink, true
		}
		if e.Kind == effects.Link {
			r.Link = true
		}
		if e.Dir {
			for _, p := range facts.Below[e.Path] {
				r.inner |= classifyPath(p).tags
			}
			if e.Kind == effects.Move {
				for _, p := range facts.Below[e.From] {
					r.inner |= classifyPath(p).tags
				}
			}
		}
		r.NestedRepo = inAny(e.Path, e.Dir, facts.NestedRepos) || (e.Kind == effects.Move && inAny(e.From, e.Dir, facts.NestedRepos))
		out = append(out, r)
	}
	return out
}

// inAny reports whether p is one of dirs or below one of them, or, for a
// whole directory, holds one of them.
func inAny(p string, whole bool, dirs []string) bool {
	p = cleanPath(p)
	for _, d := range dirs {
		d = cleanPath(d)
		if d == "" {
			continue
		}
		if p == d || strings.HasPrefix(p, d+"/") || (whole && strings.HasPrefix(d, p+"/")) {
			return true
		}
	}
	return false
}

// deletions counts the files the requests delete or truncate: moves are
// not deletions, nor are the file changes a ref's commits bring (the file
// effects count those files).
func deletions(reqs []Request) int {
	n := 0
	for _, r := range reqs {
		if r.GitChange != "" {
			continue
		}
		if r.Action == FileDelete || r.Action == FileModify && r.Truncates {
			n += max(r.Count, 1)
		}
	}
	return n
}

// Truncation says whether a file that held oldSize bytes and now holds
// newSize was truncated: it holds less than a tenth of what it held (empty
// included).
func Truncation(oldSize, newSize int64) bool {
	return oldSize > 0 && newSize*10 < oldSize
}

func quote(s string) string { return effects.Quote(s) }
