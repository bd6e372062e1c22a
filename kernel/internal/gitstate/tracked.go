package gitstate

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// Tracked lists the paths that the repository in gitDir (a `.git`
// directory) holds in its index or in the tree of HEAD and for which match
// is true, sorted and each once. A repository with no commit yet has only
// its index. It reads the repository's files and never runs git.
//
// A repository that has no HEAD, a config that does not parse, or an
// extension it cannot read is an error. An index it cannot read leaves
// HEAD's tree to answer, and a tree below HEAD that cannot be read ends the
// walk: what was found before either stands.
func Tracked(gitDir string, match func(name string) bool) ([]string, error) {
	st, err := openStorage(gitDir)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	found := map[string]bool{}
	if idx, err := st.Index(); err == nil { // else HEAD's tree answers alone
		for _, e := range idx.Entries {
			if match(e.Name) {
				found[e.Name] = true
			}
		}
	}
	head, err := storer.ResolveReference(st, plumbing.HEAD)
	switch {
	case errors.Is(err, plumbing.ErrReferenceNotFound):
		// no commit yet: the index is all there is
	case err != nil:
		return nil, err
	default:
		c, err := readCommit(st, head.Hash())
		if err != nil {
			return nil, err
		}
		ents, err := readTree(st, c.Tree)
		if err != nil {
			return nil, err
		}
		// A tree it cannot read ends the walk: what it found stands.
		walkTree(st, "", ents, 0, func(name string, e treeEntry) {
			if e.Mode.IsFile() && match(name) {
				found[name] = true
			}
		})
	}
	out := make([]string, 0, len(found))
	for n := range found {
		out = append(out, n)
	}
	slices.Sort(out)
	return out, nil
}

// maxTreeDepth bounds how deep walkTree goes: a deeper tree is a loop or
// an attack, not a checkout.
const maxTreeDepth = 1024

// walkTree calls fn for every entry below a tree, each directory before
// what it holds, with its path from the top. It stops at the first
// subtree it cannot read or below maxTreeDepth, and reports whether it
// walked everything.
func walkTree(st *filesystem.Storage, base string, ents []treeEntry, depth int, fn func(name string, e treeEntry)) bool {
	if depth > maxTreeDepth {
		return false
	}
	for _, e := range ents {
		var sub []treeEntry
		if e.Mode == filemode.Dir {
			var err error
			if sub, err = readTree(st, e.Hash); err != nil {
				return false
			}
		}
		name := e.Name
		if base != "" {
			name = base + "/" + e.Name
		}
		fn(name, e)
		if e.Mode == filemode.Dir && !walkTree(st, name, sub, depth+1, fn) {
			return false
		}
	}
	return true
}

// errNoRepository: a directory holds no HEAD.
var errNoRepository = errors.New("repository does not exist")

// openStorage opens the repository in gitDir with go-git's storage, making
// the checks go-git's PlainOpen makes: a HEAD, a config that parses, and
// no extension beyond noop (and noop-v1 in format version 1).
func openStorage(gitDir string) (*filesystem.Storage, error) {
	st := filesystem.NewStorage(osfs.New(gitDir), cache.NewObjectLRUDefault())
	if err := checkStorage(st); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

func checkStorage(st *filesystem.Storage) error {
	if _, err := st.Reference(plumbing.HEAD); errors.Is(err, plumbing.ErrReferenceNotFound) {
		return errNoRepository
	} else if err != nil {
		return err
	}
	cfg, err := st.Config()
	if err != nil {
		return err
	}
	// go-git reads core.repositoryformatversion as "1" or not set.
	v := cfg.Core.RepositoryFormatVersion
	if cfg.Raw == nil || !cfg.Raw.HasSection("extensions") {
		return nil
	}
	for _, o := range cfg.Raw.Section("extensions").Options {
		if k := strings.ToLower(o.Key); k != "noop" && (k != "noop-v1" || v != "1") {
			return fmt.Errorf("unknown extension: %s", k)
		}
	}
	return nil
}
