package gitstate

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
)

// A task writes its copy's `.git` as it likes, and Kule reads that `.git`
// outside the sandbox. A `.git` can name other places: a linked worktree's
// commondir, objects/info/alternates, a `.git` file's gitdir, the gitdir
// files under worktrees/, config include sections, symbolic links. Followed,
// any of them lets a task make Kule read another repository as its own
// (import a sibling's objects and branches into the folder, write an undo's
// refs into the sibling) or carry config in from elsewhere. So every
// repository of the copy is checked before it is read:
//
//   - Probe (no base needed): no component of the git directory's path and
//     none of the entries Kule reads in it is a symbolic link; a `.git`
//     directory has no commondir (git writes one only in a linked
//     worktree's git directory); a linked git directory's commondir stays
//     inside the folder; a `.git` file parses. A repository that fails is
//     Outside and carries its findings in Untrusted.
//   - Base.CompareRepos (with the base): objects/info/alternates,
//     objects/info/http-alternates, worktrees/*/gitdir and config include
//     sections the base did not hold as they are now. The base is taken
//     before the task runs, so a person's own set-up is never a finding.
//
// A repository with a finding is reported by name, never judged, never
// applied, and never written by an undo; its files are committed as usual.

// trustPointers, cleared only by a test, turns the checks off to show the
// attacks they stop.
var trustPointers = true

// gitDirEntries are the entries of a git directory Kule reads (or that
// name where its parts are); none may be a symbolic link.
var gitDirEntries = []string{
	"HEAD", "index", "commondir", "config", "config.worktree", "packed-refs",
	"refs", "objects", "objects/info", "objects/pack", "objects/info/alternates",
	"objects/info/http-alternates", "hooks", "info", "shallow", "worktrees",
}

// probeFindings returns what of r's git directory (inside root) points
// elsewhere, reading it beneath root without following links.
func probeFindings(root string, r *Repo) []string {
	if !trustPointers {
		return nil
	}
	rel, err := filepath.Rel(root, r.GitDir)
	if err != nil || !filepath.IsLocal(rel) {
		return nil // outside the folder: Probe already says so
	}
	rt, err := os.OpenRoot(root)
	if err != nil {
		return []string{fmt.Sprintf("%s cannot be opened: %v", filepath.ToSlash(rel), err)}
	}
	defer rt.Close()
	var out []string
	out = append(out, linkFindings(rt, rel)...)
	if len(out) > 0 {
		return out
	}
	b, err := readBeneath(rt, filepath.Join(rel, "commondir"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		out = append(out, fmt.Sprintf("%s/commondir cannot be read: %v", filepath.ToSlash(rel), err))
	case !r.Linked:
		out = append(out, fmt.Sprintf("%s/commondir names %q: a repository's own .git never names another (git writes commondir only in a linked worktree's git directory)",
			filepath.ToSlash(rel), truncate(strings.TrimSpace(string(b)), 80)))
	default:
		c := strings.TrimRight(string(b), "\r\n")
		if !filepath.IsAbs(c) {
			c = filepath.Join(r.GitDir, c)
		}
		crel, err := filepath.Rel(root, filepath.Clean(c))
		if c == "" || err != nil || !filepath.IsLocal(crel) {
			out = append(out, fmt.Sprintf("%s/commondir names %q, outside the folder", filepath.ToSlash(rel), truncate(strings.TrimSpace(string(b)), 80)))
		} else {
			out = append(out, linkFindings(rt, crel)...)
		}
	}
	return out
}

// linkFindings names the symbolic links among the components of rel (a git
// directory inside rt) and among the entries Kule reads in it.
func linkFindings(rt *os.Root, rel string) []string {
	var out []string
	parts := strings.Split(filepath.ToSlash(rel), "/")
	for i := range parts {
		p := filepath.Join(parts[:i+1]...)
		if st, err := rt.Lstat(p); err == nil && st.Mode()&fs.ModeSymlink != 0 {
			return append(out, fmt.Sprintf("%s is a symbolic link%s", filepath.ToSlash(p), linkTarget(rt, p)))
		}
	}
	for _, e := range gitDirEntries {
		p := filepath.Join(rel, e)
		if st, err := rt.Lstat(p); err == nil && st.Mode()&fs.ModeSymlink != 0 {
			out = append(out, fmt.Sprintf("%s is a symbolic link%s", filepath.ToSlash(p), linkTarget(rt, p)))
		}
	}
	if len(out) > 0 {
		return out
	}
	// Below refs/ and in objects/ and objects/pack: a linked ref directory
	// or object directory would let the task's git see refs and objects
	// Kule does not copy (a branch in the folder then names an object the
	// folder lacks).
	for _, d := range []string{"objects", filepath.Join("objects", "pack")} {
		p := filepath.Join(rel, d)
		f, err := rt.Open(p)
		if err != nil {
			continue
		}
		ents, _ := f.ReadDir(-1)
		f.Close()
		for _, e := range ents {
			if e.Type()&fs.ModeSymlink != 0 {
				q := filepath.Join(p, e.Name())
				out = append(out, fmt.Sprintf("%s is a symbolic link%s", filepath.ToSlash(q), linkTarget(rt, q)))
			}
		}
	}
	_ = fs.WalkDir(rt.FS(), filepath.ToSlash(filepath.Join(rel, "refs")), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type()&fs.ModeSymlink != 0 {
			out = append(out, fmt.Sprintf("%s is a symbolic link%s", p, linkTarget(rt, filepath.FromSlash(p))))
		}
		return nil
	})
	return out
}

func linkTarget(rt *os.Root, p string) string {
	t, err := rt.Readlink(p)
	if err != nil {
		return ""
	}
	return fmt.Sprintf(" (to %q)", truncate(t, 80))
}

// readBeneath reads a regular file of rt, refusing a symbolic link in any
// component (each was checked by linkFindings; the final one again here).
func readBeneath(rt *os.Root, p string) ([]byte, error) {
	st, err := rt.Lstat(p)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file")
	}
	return rt.ReadFile(p)
}

// pointerNames are the pointers a snapshot records, by the key it keeps
// them under (see readPointers).
const (
	ptrAlternates     = "objects/info/alternates"
	ptrHTTPAlternates = "objects/info/http-alternates"
	ptrWorktreePrefix = "worktrees/"
	ptrIncludeSuffix  = ":include"
)

// readPointers reads the files of l that name other places: the
// alternates files and each worktrees/<name>/gitdir of the common
// directory by content, and for each config file the include sections it
// holds. Symbolic links are never followed (Probe names them).
func readPointers(l layout) map[string]string {
	out := map[string]string{}
	read := func(p string) (string, bool) {
		st, err := os.Lstat(p)
		if err != nil || !st.Mode().IsRegular() {
			return "", false
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return "", false
		}
		return string(b), true
	}
	for _, k := range []string{ptrAlternates, ptrHTTPAlternates} {
		if v, ok := read(filepath.Join(l.CommonDir, filepath.FromSlash(k))); ok {
			out[k] = v
		}
	}
	if ents, err := os.ReadDir(filepath.Join(l.CommonDir, "worktrees")); err == nil {
		for _, d := range ents {
			if !d.IsDir() || !validHookName(d.Name()) {
				continue
			}
			if v, ok := read(filepath.Join(l.CommonDir, "worktrees", d.Name(), "gitdir")); ok {
				out[ptrWorktreePrefix+d.Name()+"/gitdir"] = v
			}
		}
	}
	for name, p := range configFiles(l) {
		if v, ok := read(p); ok {
			if inc := IncludeSections([]byte(v)); len(inc) > 0 {
				out[name+ptrIncludeSuffix] = strings.Join(inc, "\n")
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// validPointerKey tells whether k is a key readPointers makes.
func validPointerKey(k string) bool {
	switch k {
	case ptrAlternates, ptrHTTPAlternates, "config" + ptrIncludeSuffix, "config.worktree" + ptrIncludeSuffix:
		return true
	}
	n, ok := strings.CutPrefix(k, ptrWorktreePrefix)
	if !ok {
		return false
	}
	n, ok = strings.CutSuffix(n, "/gitdir")
	return ok && validHookName(n)
}

// pointerFindings compares the pointers of the copy's repository at l with
// those base recorded; a pointer the task added or changed is a finding
// when it names a place outside the repository's own git directory (for
// alternates), outside the folder root (for a worktree's gitdir), or at
// all (an include section: it pulls config from a file nobody judged).
func pointerFindings(base *Snapshot, root string, l layout, repo string) []string {
	if !trustPointers {
		return nil
	}
	now := readPointers(l)
	where := ".git/"
	if repo != "." && repo != "" {
		where = repo + "/.git/"
	}
	var out []string
	keys := make([]string, 0, len(now))
	for k := range now {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := now[k]
		if base != nil && base.Pointers[k] == v {
			continue
		}
		switch {
		case k == ptrAlternates:
			for _, line := range strings.Split(v, "\n") {
				line = strings.TrimSpace(line)
				if line == "" || line[0] == '#' {
					continue
				}
				p := line
				if !filepath.IsAbs(p) {
					p = filepath.Join(l.objects(), p)
				}
				if rel, err := filepath.Rel(l.CommonDir, filepath.Clean(p)); err != nil || !filepath.IsLocal(rel) {
					out = append(out, fmt.Sprintf("%s%s borrows objects from %q, outside this repository's .git", where, k, truncate(line, 80)))
				}
			}
		case k == ptrHTTPAlternates:
			out = append(out, fmt.Sprintf("%s%s names other places to fetch objects from", where, k))
		case strings.HasPrefix(k, ptrWorktreePrefix):
			p := strings.TrimSpace(v)
			if rel, err := filepath.Rel(root, filepath.Clean(p)); p == "" || !filepath.IsAbs(p) || err != nil || !filepath.IsLocal(rel) {
				out = append(out, fmt.Sprintf("%s%s names %q, outside the folder", where, k, truncate(p, 80)))
			}
		case strings.HasSuffix(k, ptrIncludeSuffix):
			out = append(out, fmt.Sprintf("%s%s includes other config or moves the working tree (%s)", where, strings.TrimSuffix(k, ptrIncludeSuffix), truncate(strings.ReplaceAll(v, "\n", "; "), 120)))
		}
	}
	return out
}

// IncludeSections returns what of a git config file names another place:
// the section headers that include other files ([include], [includeIf
// "…"], in any case, in the old [section.sub] form too), each as written,
// and a core.worktree setting ("core.worktree = …"), which moves the
// repository's working tree elsewhere. A header git would read as an
// include is never missed: any section whose name begins with "include"
// counts.
func IncludeSections(b []byte) []string {
	var out []string
	section := ""
	for _, line := range bytes.Split(b, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if line[0] == '[' {
			end := bytes.IndexByte(line, ']')
			if end < 0 {
				end = len(line)
			}
			name := strings.TrimSpace(string(line[1:end]))
			head, _, _ := strings.Cut(name, " ")
			head, _, _ = strings.Cut(head, ".")
			head, _, _ = strings.Cut(head, "\t")
			head, _, _ = strings.Cut(head, `"`)
			section = strings.ToLower(head)
			if strings.HasPrefix(section, "include") {
				out = append(out, truncate(string(line[:min(end+1, len(line))]), 80))
			}
			if end+1 >= len(line) {
				continue
			}
			line = bytes.TrimSpace(line[end+1:]) // `[core] worktree = x` on one line
		}
		if section != "core" || line[0] == '#' || line[0] == ';' {
			continue
		}
		k, v, _ := strings.Cut(string(line), "=")
		if strings.EqualFold(strings.TrimSpace(k), "worktree") {
			out = append(out, "core.worktree = "+truncate(strings.TrimSpace(v), 80))
		}
	}
	return out
}

// missingTargets names each ref the task moved to an object its own
// repository does not hold (no loose object file, in no pack's index):
// Kule copies only the object files the copy holds, so applying that ref
// would leave the folder's branch naming an object the folder lacks. A
// hand-written ref, or one the task's git resolved through a place Kule
// does not read, does that.
func missingTargets(l layout, eff *Effects) []string {
	if !trustPointers {
		return nil
	}
	var idx []*idxfile.MemoryIndex
	loaded := false
	has := func(id string) bool {
		if st, err := os.Lstat(loosePath(l.objects(), id)); err == nil && st.Mode().IsRegular() {
			return true
		}
		if !loaded {
			loaded = true
			ents, _ := os.ReadDir(filepath.Join(l.objects(), "pack"))
			for _, e := range ents {
				if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".idx") {
					continue
				}
				f, err := os.Open(filepath.Join(l.objects(), "pack", e.Name()))
				if err != nil {
					continue
				}
				mi := idxfile.NewMemoryIndex()
				if idxfile.NewDecoder(f).Decode(mi) == nil {
					idx = append(idx, mi)
				}
				f.Close()
			}
		}
		h := plumbing.NewHash(id)
		for _, mi := range idx {
			if ok, err := mi.Contains(h); err == nil && ok {
				return true
			}
		}
		return false
	}
	var out []string
	for _, r := range eff.Refs {
		id := r.New
		if id == "" || strings.HasPrefix(id, symPrefix) {
			continue
		}
		if b, err := hex.DecodeString(id); err != nil || len(b) != 20 {
			continue // refused by Apply's own checks
		}
		if !has(id) {
			out = append(out, fmt.Sprintf("%s names object %s, which the repository does not hold (a ref written by hand, or an object Kule cannot copy)", r.Name, short(id)))
		}
	}
	return out
}
