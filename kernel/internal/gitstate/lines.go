package gitstate

import (
	"fmt"
	"strings"

	"github.com/kulehq/kule/kernel/internal/effects"
)

// Lines renders the effects as `kule status` prints them under the file
// changes, one fact a line:
//
//	git: 6 new object files
//	git: main 8b5ec1d → ad08c52 · fast-forward · 1 commit
//	git: config changed: core.fsmonitor = "…" (it can make the next git command run code)
//
// InfoLines are the lines that are never judged (objects, repositories
// added or removed); RefLine, IndexLine, HookLine and ConfigLine the lines
// of what a policy judges, each of which a caller may follow with its
// verdict.
func (e *Effects) Lines() []string {
	out := e.InfoLines()
	for _, r := range e.Refs {
		out = append(out, e.RefLine(r))
	}
	if l := e.IndexLine(); l != "" {
		out = append(out, l)
	}
	if l := e.StagedLine(); l != "" {
		out = append(out, l)
	}
	for _, c := range e.Config {
		out = append(out, e.ConfigLine(c))
	}
	for _, c := range e.Hooks {
		out = append(out, e.HookLine(c))
	}
	return out
}

func (e *Effects) prefix() string {
	if e.Repo != "" && e.Repo != "." {
		return fmt.Sprintf("git (%s): ", effects.Quote(e.Repo))
	}
	return "git: "
}

// InfoLines are the lines about the repository as a whole and its objects.
func (e *Effects) InfoLines() []string {
	p := e.prefix()
	var out []string
	add := func(format string, a ...any) { out = append(out, p+fmt.Sprintf(format, a...)) }
	if e.Nested {
		add("nested repository")
	}
	if e.Gone {
		add("repository removed from the copy (not applied: remove it in the folder yourself)")
	}
	if e.Outside && len(e.Untrusted) == 0 {
		add(".git now names a git directory outside the folder (not judged, not applied)")
	}
	for _, f := range e.Untrusted {
		add("%s — refused: this repository's git changes are not applied (its files are); remove that from the copy or roll back", f)
	}
	if e.Made {
		add("new repository (Kule never carries a .git into the folder: a commit that takes its files is refused; remove its .git in the copy to commit them as plain files, or clone it from the copy)")
	}
	if n := len(e.Objects.Loose); n > 0 {
		add("%d new object %s", n, plural(n, "file", "files"))
	}
	if n := len(e.Objects.Packs); n > 0 {
		add("%d new %s", n, plural(n, "pack", "packs"))
	}
	return out
}

// RefLine is the line of one ref change.
func (e *Effects) RefLine(r RefChange) string {
	name := shortRef(r.Name)
	var s string
	switch r.Kind {
	case RefFastForward:
		s = fmt.Sprintf("%s %s → %s · fast-forward · %d %s", name, short(r.Old), short(r.New), r.Commits, plural(r.Commits, "commit", "commits"))
	case RefRewrite:
		s = fmt.Sprintf("%s %s → %s · history rewrite (not a fast-forward)", name, short(r.Old), short(r.New))
	case RefNew:
		s = fmt.Sprintf("%s %s at %s", refKind(r.Name, "new"), name, short(r.New))
	case RefDeleted:
		s = fmt.Sprintf("%s deleted (was %s)", name, short(r.Old))
	case RefSymbolic:
		s = fmt.Sprintf("%s %s → %s", name, short(r.Old), short(r.New))
		if r.Name == "HEAD" && !strings.HasPrefix(r.New, symPrefix) {
			s += " (detached)"
		}
	default:
		s = fmt.Sprintf("%s %s → %s", name, short(r.Old), short(r.New))
	}
	return e.prefix() + s
}

// IndexLine is the line of the index changes; "" for none.
func (e *Effects) IndexLine() string {
	if len(e.Index) == 0 {
		return ""
	}
	var a, m, d int
	for _, c := range e.Index {
		switch c.Kind {
		case "add":
			a++
		case "modify":
			m++
		case "delete":
			d++
		}
	}
	return e.prefix() + fmt.Sprintf("index +%d ~%d -%d (%s)", a, m, d, listPaths(indexPaths(e.Index), 3))
}

// StagedLine is the line of staged content that differs from its file; ""
// for none.
func (e *Effects) StagedLine() string {
	if len(e.StagedDiffers) == 0 {
		return ""
	}
	return e.prefix() + fmt.Sprintf("staged content differs from the file (the next git commit would record it): %s", listPaths(e.StagedDiffers, 5))
}

// ConfigLine is the line of one config file's change, with its keys.
func (e *Effects) ConfigLine(c FileChange) string { return e.prefix() + configLine(c) }

// HookLine is the line of one hook's change.
func (e *Effects) HookLine(c FileChange) string {
	return e.prefix() + fmt.Sprintf("hook %s %s (it runs on the next matching git command)", effects.Quote(c.Name), verb(c.Kind))
}

func verb(kind string) string {
	switch kind {
	case "add":
		return "added"
	case "delete":
		return "removed"
	}
	return "changed"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// short shows an id as 7 hex digits and a symbolic value by its target.
func short(v string) string {
	if t, ok := strings.CutPrefix(v, symPrefix); ok {
		return shortRef(t)
	}
	if len(v) > 7 {
		return v[:7]
	}
	if v == "" {
		return "(none)"
	}
	return v
}

func shortRef(name string) string {
	for _, p := range []string{"refs/heads/", "refs/tags/", "refs/remotes/"} {
		if s, ok := strings.CutPrefix(name, p); ok {
			if p == "refs/tags/" {
				return "tag " + s
			}
			return s
		}
	}
	return name
}

func refKind(name, adj string) string {
	switch {
	case strings.HasPrefix(name, "refs/heads/"):
		return adj + " branch"
	case strings.HasPrefix(name, "refs/tags/"):
		return adj
	}
	return adj + " ref"
}

func indexPaths(cs []IndexChange) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.Path)
	}
	return out
}

func listPaths(ps []string, max int) string {
	q := make([]string, 0, max)
	for i, p := range ps {
		if i == max {
			return strings.Join(q, ", ") + fmt.Sprintf(" and %d more", len(ps)-max)
		}
		q = append(q, effects.Quote(p))
	}
	return strings.Join(q, ", ")
}
