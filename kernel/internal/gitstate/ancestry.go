package gitstate

import (
	"bytes"
	"container/heap"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/utils/merkletrie"
	"github.com/go-git/go-git/v5/utils/merkletrie/noder"

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
	c *commit
}

type walkQueue []walkItem

func (q walkQueue) Len() int { return len(q) }
func (q walkQueue) Less(i, j int) bool {
	return q[i].c.When.After(q[j].c.When)
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
	newC, err := readCommit(a.st, newH)
	if err != nil {
		if errors.Is(err, plumbing.ErrObjectNotFound) || errors.Is(err, plumbing.ErrInvalidType) {
			return false, 0, nil
		}
		return false, 0, err
	}
	oldC, err := readCommit(a.st, oldH)
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
		for _, ph := range it.c.Parents {
			pf := flags[ph]
			nf := pf | f
			if nf == pf {
				continue
			}
			flags[ph] = nf
			pc, err := readCommit(a.st, ph)
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

// maxBrings bounds the paths a ref move lists; a move that changes more is
// listed up to here and then as one unreadable change.
const maxBrings = 100000

// errTooMany: a move changes more paths than Brings lists.
var errTooMany = errors.New("more paths change than Kule lists")

// brings lists the paths whose content differs between the tree of oldHex
// (none when "") and the tree of newHex: what moving a ref from one to the
// other changes in a checkout. Annotated tags are peeled to their commit;
// a new value that is not a commit (a tag of a tree or blob) brings nothing
// a checkout shows.
func (a *ancestry) brings(oldHex, newHex string) ([]PathChange, error) {
	newT, err := a.treeOf(newHex)
	if err != nil || newT == nil {
		return nil, err
	}
	oldT := &treeNode{} // no tree: every path of the new one is added
	if oldHex != "" {
		if oldT, err = a.treeOf(oldHex); err != nil {
			return nil, err
		}
		if oldT == nil {
			oldT = &treeNode{}
		}
	}
	changes, err := merkletrie.DiffTree(oldT, newT, sameNode)
	if err != nil {
		return nil, fmt.Errorf("gitstate: compare trees: %w", err)
	}
	if len(changes) > maxBrings {
		return nil, fmt.Errorf("gitstate: %d paths change: %w", len(changes), errTooMany)
	}
	out := make([]PathChange, 0, len(changes))
	for _, c := range changes {
		act, err := c.Action()
		if err != nil {
			return nil, fmt.Errorf("gitstate: compare trees: %w", err)
		}
		pc := PathChange{Path: c.To.String(), Kind: "modify"}
		switch act {
		case merkletrie.Insert:
			pc.Kind = "add"
		case merkletrie.Delete:
			pc.Path, pc.Kind = c.From.String(), "delete"
		}
		out = append(out, pc)
	}
	slices.SortFunc(out, func(x, y PathChange) int { return strings.Compare(x.Path, y.Path) })
	return out, nil
}

// treeOf is the tree of the commit hex names, peeling annotated tags, as
// the root of a merkletrie; nil when it names no commit.
func (a *ancestry) treeOf(hex string) (*treeNode, error) {
	h := plumbing.NewHash(hex)
	for range 10 {
		obj, err := a.st.EncodedObject(plumbing.AnyObject, h)
		if err != nil {
			return nil, fmt.Errorf("gitstate: read %s: %w", hex, err)
		}
		switch obj.Type() {
		case plumbing.CommitObject:
			c, err := decodeCommitObject(obj)
			if err != nil {
				return nil, fmt.Errorf("gitstate: read commit %s: %w", hex, err)
			}
			ents, err := readTree(a.st, c.Tree)
			if err != nil {
				return nil, fmt.Errorf("gitstate: read the tree of %s: %w", hex, err)
			}
			return &treeNode{st: a.st, mode: filemode.Dir, hash: c.Tree, ents: ents}, nil
		case plumbing.TagObject:
			t, err := decodeTagObject(obj)
			if err != nil {
				return nil, fmt.Errorf("gitstate: read tag %s: %w", hex, err)
			}
			h = t
		default:
			return nil, nil
		}
	}
	return nil, fmt.Errorf("gitstate: %s: tags nest too deep", hex)
}

func decodeTagObject(obj plumbing.EncodedObject) (target plumbing.Hash, err error) {
	rc, err := obj.Reader()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	defer closeInto(rc, &err)
	return decodeTagTarget(rc)
}

// sameNode: two tree nodes are the same when their ids and modes are.
func sameNode(a, b noder.Hasher) bool { return bytes.Equal(a.Hash(), b.Hash()) }

// treeNode is one entry of a tree as a merkletrie node, so that
// merkletrie.DiffTree compares two trees: its hash is the entry's id
// followed by its mode, so a change of mode is a change, as in
// `git diff-tree`. Submodules are leaves.
type treeNode struct {
	st       *filesystem.Storage
	name     string // empty for the root
	mode     filemode.FileMode
	hash     plumbing.Hash
	ents     []treeEntry   // a directory's entries, read with its parent
	children []noder.Noder // made once from ents
}

var _ noder.Noder = (*treeNode)(nil)

func (t *treeNode) Hash() []byte   { return append(t.hash[:], t.mode.Bytes()...) }
func (t *treeNode) Name() string   { return t.name }
func (t *treeNode) String() string { return "treeNode <" + t.name + ">" }
func (t *treeNode) IsDir() bool    { return t.mode == filemode.Dir }
func (t *treeNode) Skip() bool     { return false }

// Children are the directory's entries; each subdirectory's own entries
// are read here. The list ends before the first subdirectory that cannot
// be read, as go-git's own tree nodes end it.
func (t *treeNode) Children() ([]noder.Noder, error) {
	if t.mode != filemode.Dir {
		return noder.NoChildren, nil
	}
	if t.children != nil {
		return t.children, nil
	}
	t.children = make([]noder.Noder, 0, len(t.ents))
	for _, e := range t.ents {
		child := &treeNode{st: t.st, name: e.Name, mode: e.Mode, hash: e.Hash}
		if e.Mode == filemode.Dir {
			ents, err := readTree(t.st, e.Hash)
			if err != nil {
				break
			}
			child.ents = ents
		}
		t.children = append(t.children, child)
	}
	return t.children, nil
}

func (t *treeNode) NumChildren() (int, error) {
	c, err := t.Children()
	return len(c), err
}
