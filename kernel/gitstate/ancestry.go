package gitstate

import (
	"container/heap"
	"errors"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/go-git/go-billy/v5/osfs"
)

// maxWalk bounds an ancestry walk; a walk that reaches it reports the
// change as a history rewrite (the careful answer) with no count.
const maxWalk = 200000

type ancestry struct {
	st *filesystem.Storage
}

func newAncestry(l layout) *ancestry {
	return &ancestry{st: filesystem.NewStorage(osfs.New(l.CommonDir), cache.NewObjectLRUDefault())}
}

const (
	fromNew = 1
	fromOld = 2
)

type walkItem struct {
	c *object.Commit
}

type walkQueue []walkItem

func (q walkQueue) Len() int { return len(q) }
func (q walkQueue) Less(i, j int) bool {
	return q[i].c.Committer.When.After(q[j].c.Committer.When)
}
func (q walkQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *walkQueue) Push(x any)   { *q = append(*q, x.(walkItem)) }
func (q *walkQueue) Pop() any {
	old := *q
	it := old[len(old)-1]
	*q = old[:len(old)-1]
	return it
}

// fastForward tells whether old is an ancestor of new and, if so, how many
// commits new has that old has not (git rev-list --count old..new). It
// paints both sides down the history in commit-time order, as git's
// merge-base walk does. A non-commit on either side is not a fast-forward.
func (a *ancestry) fastForward(oldHex, newHex string) (bool, int, error) {
	oldH, newH := plumbing.NewHash(oldHex), plumbing.NewHash(newHex)
	newC, err := object.GetCommit(a.st, newH)
	if err != nil {
		if errors.Is(err, plumbing.ErrObjectNotFound) || errors.Is(err, plumbing.ErrInvalidType) {
			return false, 0, nil
		}
		return false, 0, err
	}
	oldC, err := object.GetCommit(a.st, oldH)
	if err != nil {
		// The old commit is gone (or was never a commit): it cannot be an
		// ancestor of new.
		if errors.Is(err, plumbing.ErrObjectNotFound) || errors.Is(err, plumbing.ErrInvalidType) {
			return false, 0, nil
		}
		return false, 0, err
	}
	flags := map[plumbing.Hash]int{newH: fromNew}
	flags[oldH] |= fromOld
	q := &walkQueue{{newC}}
	if oldH != newH {
		heap.Push(q, walkItem{oldC})
	}
	onlyOld := func() bool {
		for _, it := range *q {
			if flags[it.c.Hash]&fromOld == 0 {
				return false
			}
		}
		return true
	}
	steps := 0
	for q.Len() > 0 && !onlyOld() {
		if steps++; steps > maxWalk {
			return false, 0, nil
		}
		it := heap.Pop(q).(walkItem)
		f := flags[it.c.Hash]
		for _, ph := range it.c.ParentHashes {
			pf := flags[ph]
			nf := pf | f
			if nf == pf {
				continue
			}
			flags[ph] = nf
			pc, err := object.GetCommit(a.st, ph)
			if err != nil {
				if errors.Is(err, plumbing.ErrObjectNotFound) {
					continue // a shallow clone's boundary
				}
				return false, 0, err
			}
			heap.Push(q, walkItem{pc})
		}
	}
	if flags[oldH]&fromNew == 0 {
		return false, 0, nil
	}
	n := 0
	for _, f := range flags {
		if f == fromNew {
			n++
		}
	}
	return true, n, nil
}
