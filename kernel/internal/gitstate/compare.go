package gitstate

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Ref change kinds.
const (
	RefFastForward = "fast-forward"
	RefNew         = "new"
	RefDeleted     = "deleted"
	RefRewrite     = "rewrite"  // not a fast-forward: the policy makes it wait
	RefSymbolic    = "symbolic" // HEAD (or another symbolic ref) points elsewhere
)

// RefChange is one ref the task moved, by value.
type RefChange struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"`
	Old     string `json:"old,omitempty"` // id or "ref: <target>"; empty for a new ref
	New     string `json:"new,omitempty"` // empty for a deleted ref
	Commits int    `json:"commits,omitempty"`
	// Brings lists the paths whose content differs between the tree the
	// ref named before (for a new ref: the commit HEAD named) and the tree
	// it names now: what the ref's new commits would put in a checkout.
	// A policy judges each like the file change it stands for.
	Brings []PathChange `json:"brings,omitempty"`
	// BringsErr says why Brings could not be read (a missing or damaged
	// object); such a move is judged as an unreadable change inside .git.
	BringsErr string `json:"brings_error,omitempty"`
}

// PathChange is one path a ref's new commits change.
type PathChange struct {
	Path string `json:"path"`
	Kind string `json:"kind"` // "add", "modify", "delete"
}

// FileChange is a hook or config file the task added, changed or removed.
type FileChange struct {
	Name string `json:"name"`
	Kind string `json:"kind"` // "add", "modify", "delete"
	Old  string `json:"old,omitempty"`
	New  string `json:"new,omitempty"` // sha256 of the new content (see Snapshot.Hooks)
	// Keys, for a config file, lists what the change adds, changes or
	// removes ("core.fsmonitor = …"; DescribeConfig fills it in).
	Keys []string `json:"keys,omitempty"`
}

// Objects are the object files the copy has that the base had not.
type Objects struct {
	Loose []string `json:"loose,omitempty"` // hex ids
	Packs []string `json:"packs,omitempty"` // "pack-<hex>"
}

// Effects is what a task did to one repository, by meaning. It is the `git`
// object of `kule status --json`.
type Effects struct {
	Repo    string        `json:"repo"` // "." or the nested repository's path
	Nested  bool          `json:"nested,omitempty"`
	Objects Objects       `json:"objects"`
	Refs    []RefChange   `json:"refs,omitempty"`
	Index   []IndexChange `json:"index,omitempty"`
	// StagedDiffers lists paths whose staged entry holds other content than
	// the file in the copy (or that left the index while the file stays):
	// the next `git commit` would record what nobody reviewed, so they wait.
	StagedDiffers []string     `json:"staged_differs,omitempty"`
	Hooks         []FileChange `json:"hooks,omitempty"`
	Config        []FileChange `json:"config,omitempty"`
	// Gone: the task removed the repository from its copy. Made: the task
	// made a repository the base did not have. Neither is applied.
	Gone bool `json:"gone,omitempty"`
	Made bool `json:"made,omitempty"`
	// Outside: the copy's .git now names a git directory outside the
	// folder. Not judged, not applied.
	Outside bool `json:"outside,omitempty"`
	// Untrusted names, for an Outside repository, what of its `.git`
	// points elsewhere (see trust.go).
	Untrusted []string `json:"untrusted,omitempty"`
}

// Empty tells whether the task changed nothing in the repository.
func (e *Effects) Empty() bool {
	return !e.Gone && !e.Made && !e.Outside && len(e.Objects.Loose) == 0 && len(e.Objects.Packs) == 0 && len(e.Refs) == 0 &&
		len(e.Index) == 0 && len(e.StagedDiffers) == 0 && len(e.Hooks) == 0 && len(e.Config) == 0
}

// Rewrites lists the refs whose change is not a fast-forward.
func (e *Effects) Rewrites() []string {
	var out []string
	for _, r := range e.Refs {
		if r.Kind == RefRewrite {
			out = append(out, r.Name)
		}
	}
	return out
}

// Compare reads the copy's repository (its git directory and its worktree)
// against base and returns what the task did.
func Compare(base *Snapshot, copyGitDir, copyWorktree string) (*Effects, error) {
	l, err := openLayout(copyGitDir)
	if err != nil {
		return nil, err
	}
	now, err := readNow(l, base)
	if err != nil {
		return nil, err
	}
	eff := &Effects{Repo: "."}
	// Objects: only additions count; objects that left the copy (a gc
	// there) are never removed from the folder.
	for _, id := range now.objects.Loose {
		if !base.Objects.Loose.has(id) {
			eff.Objects.Loose = append(eff.Objects.Loose, hex.EncodeToString(id[:]))
		}
	}
	for _, p := range now.objects.Packs {
		if !slices.Contains(base.Objects.Packs, p) {
			eff.Objects.Packs = append(eff.Objects.Packs, p)
		}
	}
	if eff.Refs, err = compareRefs(l, base.Refs, now.refs); err != nil {
		return nil, err
	}
	var removed []string
	if base.IndexSum == "" || now.indexSum != base.IndexSum { // else the same bytes: no change
		baseIndex, err := base.index()
		if err != nil {
			return nil, err
		}
		diffEntries(baseIndex, now.index, func(o, n *indexEntry) {
			eff.Index = append(eff.Index, changeOf(o, n))
			if n == nil {
				removed = append(removed, o.Path)
			}
		})
	}
	eff.StagedDiffers, err = stagedDiffers(eff.Index, removed, now.index, copyWorktree)
	if err != nil {
		return nil, err
	}
	eff.Hooks = compareFiles(base.Hooks, now.hooks)
	eff.Config = compareFiles(base.Config, now.config)
	return eff, nil
}

type current struct {
	refs     map[string]string
	index    []indexEntry // nil when indexSum is the base's (not decoded)
	indexSum string
	objects  objectSet
	hooks    map[string]string
	config   map[string]string
}

func readNow(l layout, base *Snapshot) (*current, error) {
	s, err := take(l, base)
	if err != nil {
		return nil, err
	}
	return &current{refs: s.Refs, index: s.Index, indexSum: s.IndexSum, objects: s.Objects, hooks: s.Hooks, config: s.Config}, nil
}

func compareRefs(l layout, old, new map[string]string) ([]RefChange, error) {
	var out []RefChange
	var anc *ancestry
	names := make([]string, 0, len(old)+len(new))
	for n := range old {
		names = append(names, n)
	}
	for n := range new {
		if _, ok := old[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	var err error
	for _, n := range names {
		o, n2 := old[n], new[n]
		if o == n2 {
			continue
		}
		c := RefChange{Name: n, Old: o, New: n2}
		switch {
		case o == "":
			c.Kind = RefNew
		case n2 == "":
			c.Kind = RefDeleted
		case strings.HasPrefix(o, symPrefix) || strings.HasPrefix(n2, symPrefix):
			c.Kind = RefSymbolic
		default:
			if anc == nil {
				anc = newAncestry(l)
			}
			ff, count, ferr := anc.fastForward(o, n2)
			err = ferr
			if err != nil {
				return nil, fmt.Errorf("gitstate: compare %s: %w", n, err)
			}
			c.Kind, c.Commits = RefRewrite, 0
			if ff {
				c.Kind, c.Commits = RefFastForward, count
			}
		}
		if n2 != "" && !strings.HasPrefix(n2, symPrefix) && checkedOut(n) {
			if anc == nil {
				anc = newAncestry(l)
			}
			from := o
			if o == "" || strings.HasPrefix(o, symPrefix) {
				from = resolve(old, "HEAD")
			}
			if c.Brings, err = anc.brings(from, n2); err != nil {
				c.Brings, c.BringsErr = nil, err.Error()
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// checkedOut tells whether a ref's commits are what a checkout or a push
// publishes: branches, tags and a detached HEAD (not remote-tracking refs,
// which mirror what others published).
func checkedOut(name string) bool {
	return name == "HEAD" || strings.HasPrefix(name, "refs/heads/") || strings.HasPrefix(name, "refs/tags/")
}

// resolve follows name through symbolic values in refs to an object id;
// "" when it names none.
func resolve(refs map[string]string, name string) string {
	for range 5 {
		v := refs[name]
		t, ok := strings.CutPrefix(v, symPrefix)
		if !ok {
			return v
		}
		name = t
	}
	return ""
}

func compareFiles(old, new map[string]string) []FileChange {
	var out []FileChange
	names := make([]string, 0, len(old)+len(new))
	for n := range old {
		names = append(names, n)
	}
	for n := range new {
		if _, ok := old[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		o, w := old[n], new[n]
		switch {
		case o == w:
		case o == "":
			out = append(out, FileChange{Name: n, Kind: "add", New: w})
		case w == "":
			out = append(out, FileChange{Name: n, Kind: "delete", Old: o})
		default:
			out = append(out, FileChange{Name: n, Kind: "modify", Old: o, New: w})
		}
	}
	return out
}

// stagedDiffers returns the paths whose staged entry (added or changed by
// the task) holds other content or mode than the copy's file, and the paths
// the task took out of the index while their file stays.
func stagedDiffers(changes []IndexChange, removed []string, now []indexEntry, worktree string) ([]string, error) {
	var out []string
	inIndex := map[string]bool{}
	if len(removed) > 0 { // 100,000 paths are not worth a map for nothing
		for _, e := range now {
			inIndex[e.Path] = true
		}
	}
	for _, p := range removed {
		if inIndex[p] {
			continue // still in the index at another stage
		}
		if _, err := os.Lstat(filepath.Join(worktree, filepath.FromSlash(p))); err == nil {
			out = append(out, p)
		}
	}
	for _, c := range changes {
		if c.Kind == "delete" || c.Stage != 0 {
			continue
		}
		e, err := c.newEntry()
		if err != nil {
			return nil, err
		}
		if e.Flags != 0 || e.Mode == 0o160000 {
			continue // intent-to-add and skip-worktree hold no staged content; gitlinks are repositories
		}
		same, err := fileMatches(filepath.Join(worktree, filepath.FromSlash(e.Path)), e)
		if err != nil {
			return nil, err
		}
		if !same {
			out = append(out, e.Path)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// fileMatches tells whether the file at p holds what the entry stages. Git
// filters (clean, eol conversion) are not run — that would run the copy's
// config — so a filtered file counts as differing and waits for a person.
func fileMatches(p string, e *indexEntry) (bool, error) {
	st, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("gitstate: staged %s: %w", p, err)
	}
	switch e.Mode {
	case 0o120000:
		if st.Mode()&fs.ModeSymlink == 0 {
			return false, nil
		}
		t, err := os.Readlink(p)
		if err != nil {
			return false, fmt.Errorf("gitstate: staged %s: %w", p, err)
		}
		id, _ := blobID(strings.NewReader(t), int64(len(t)))
		return id == e.ID, nil
	case 0o100644, 0o100755:
		if !st.Mode().IsRegular() || (st.Mode()&0o100 != 0) != (e.Mode == 0o100755) {
			return false, nil
		}
		f, err := os.Open(p)
		if err != nil {
			return false, fmt.Errorf("gitstate: staged %s: %w", p, err)
		}
		defer f.Close()
		id, err := blobID(f, st.Size())
		if err != nil {
			return false, fmt.Errorf("gitstate: staged %s: %w", p, err)
		}
		return id == e.ID, nil
	}
	return false, nil
}
