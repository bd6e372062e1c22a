package kernel

import (
	"errors"
	"fmt"
	"strings"

	"github.com/kulehq/kule/kernel/internal/effects"
	"github.com/kulehq/kule/kernel/internal/relpath"
	"github.com/kulehq/kule/kernel/internal/task"
)

// ErrNewRepository: a commit would bring in the files of a repository the
// task made, which Kule never does (see refuseNewRepos).
var ErrNewRepository = errors.New("a new repository is not carried into the folder")

// refuseNew, cleared only by a test, lets the files of a new repository
// through without its .git, as Kule once did.
var refuseNew = true

// refuseNewRepos refuses a commit that chose files of a repository the
// task made (a directory with a `.git` the base does not know). Kule never
// writes a `.git` into the folder as files: its config and hooks would run
// code on the person's next git command, outside the sandbox, and nothing
// of it was judged. Taking the files alone would lose the repository's
// history without a word, so the commit is refused whole, naming what to
// do; the files stay in the copy.
func refuseNewRepos(t *task.Task, st *Status, chosen []effects.Effect) error {
	if !refuseNew {
		return nil
	}
	var made []string
	for _, g := range st.Git {
		if g.Made && g.Repo != "." {
			made = append(made, g.Repo)
		}
	}
	if len(made) == 0 {
		return nil
	}
	var hit []string
	for _, repo := range made {
		for _, e := range chosen {
			if e.Path == repo || relpath.Under(e.Path, repo) {
				hit = append(hit, repo)
				break
			}
		}
	}
	if len(hit) == 0 {
		return nil
	}
	q := make([]string, len(hit))
	for i, h := range hit {
		q[i] = effects.Quote(h)
	}
	return fmt.Errorf("commit: %w: %s holds a .git the task made; nothing was applied, its files and its .git stay in the copy. "+
		"To take the files without their history, remove that .git in the copy (kule exec %s -- rm -rf %s/.git) and commit again; "+
		"to take the repository with its history, look at it in the copy, then clone it: git clone %s/%s",
		ErrNewRepository, strings.Join(q, ", "), t.ID, hit[0], t.Paths.Copy, hit[0])
}

// gitRefused lists, as a person reads them, the repositories whose `.git`
// points elsewhere (or cannot be read): a commit applies none of their git
// changes (their files commit as usual).
func gitRefused(st *Status) []string {
	var out []string
	for _, g := range st.Git {
		if len(g.Untrusted) > 0 {
			out = append(out, g.Lines()...)
		}
	}
	return out
}
