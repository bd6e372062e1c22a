package gitstate

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// Tracked lists the paths that the repository in gitDir (a `.git`
// directory) holds in its index or in the tree of HEAD and for which match
// is true, sorted and each once. A repository with no commit yet has only
// its index. It reads the repository's files and never runs git.
//
// A repository that has no HEAD, a config that does not parse, or a format
// version or extension it cannot read is an error. A tree below HEAD that
// cannot be read ends the walk: what was found before it stands.
func Tracked(gitDir string, match func(name string) bool) ([]string, error) {
	st, err := openStorage(gitDir)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	found := map[string]bool{}
	if idx, err := st.Index(); err == nil {
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
		c, err := object.GetCommit(st, head.Hash())
		if err != nil {
			return nil, err
		}
		tree, err := c.Tree()
		if err != nil {
			return nil, err
		}
		w := object.NewTreeWalker(tree, true, nil)
		defer w.Close()
		for {
			name, e, err := w.Next()
			if err != nil {
				break // io.EOF, or a tree it cannot read: what it found stands
			}
			if e.Mode.IsFile() && match(name) {
				found[name] = true
			}
		}
	}
	out := make([]string, 0, len(found))
	for n := range found {
		out = append(out, n)
	}
	slices.Sort(out)
	return out, nil
}

// errNoRepository: a directory holds no HEAD.
var errNoRepository = errors.New("repository does not exist")

// openStorage opens the repository in gitDir with go-git's storage, making
// the checks go-git's PlainOpen makes: a HEAD, a config that parses, a
// format version of 0 or 1, and no extension beyond noop.
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
	v := cfg.Core.RepositoryFormatVersion
	switch v {
	case "", "0", "1":
	default:
		return fmt.Errorf("core.repositoryformatversion not supported: %q", v)
	}
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
