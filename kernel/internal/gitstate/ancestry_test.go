package gitstate

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/utils/merkletrie"
	"github.com/google/go-cmp/cmp"
)

// goGitBrings is what brings answered when it ran go-git's object package:
// the reference its own tree nodes are held to.
func goGitBrings(t *testing.T, a *ancestry, oldHex, newHex string) []PathChange {
	t.Helper()
	tree := func(hex string) *object.Tree {
		h := plumbing.NewHash(hex)
		for {
			obj, err := a.st.EncodedObject(plumbing.AnyObject, h)
			if err != nil {
				t.Fatal(err)
			}
			switch obj.Type() {
			case plumbing.CommitObject:
				c, err := object.DecodeCommit(a.st, obj)
				if err != nil {
					t.Fatal(err)
				}
				tr, err := c.Tree()
				if err != nil {
					t.Fatal(err)
				}
				return tr
			case plumbing.TagObject:
				tg, err := object.DecodeTag(a.st, obj)
				if err != nil {
					t.Fatal(err)
				}
				h = tg.Target
			default:
				return nil
			}
		}
	}
	newT := tree(newHex)
	if newT == nil {
		return nil
	}
	var oldT *object.Tree
	if oldHex != "" {
		oldT = tree(oldHex)
	}
	changes, err := object.DiffTree(oldT, newT)
	if err != nil {
		t.Fatal(err)
	}
	out := []PathChange{}
	for _, c := range changes {
		act, err := c.Action()
		if err != nil {
			t.Fatal(err)
		}
		pc := PathChange{Path: c.To.Name, Kind: "modify"}
		switch act {
		case merkletrie.Insert:
			pc.Kind = "add"
		case merkletrie.Delete:
			pc.Path, pc.Kind = c.From.Name, "delete"
		}
		out = append(out, pc)
	}
	slices.SortFunc(out, func(x, y PathChange) int { return strings.Compare(x.Path, y.Path) })
	return out
}

// gitBrings is `git diff-tree -r` between two commits, as PathChanges.
func gitBrings(t *testing.T, dir, from, to string) []PathChange {
	t.Helper()
	args := []string{"diff-tree", "-r", "--no-renames", "--name-status", "-z"}
	if from == "" {
		args = append(args, "--root", to)
	} else {
		args = append(args, from, to)
	}
	fields := strings.Split(strings.TrimRight(run(t, dir, args...), "\x00"), "\x00")
	if from == "" {
		fields = fields[1:] // the commit id --root prints first
	}
	out := []PathChange{}
	for i := 0; i+1 < len(fields); i += 2 {
		kind := map[string]string{"A": "add", "D": "delete", "M": "modify", "T": "modify"}[fields[i]]
		out = append(out, PathChange{Path: fields[i+1], Kind: kind})
	}
	slices.SortFunc(out, func(x, y PathChange) int { return strings.Compare(x.Path, y.Path) })
	return out
}

func TestBringsAgainstGitAndGoGit(t *testing.T) {
	t.Parallel()
	needGit(t)
	dir := filepath.Join(t.TempDir(), "repo")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, dir, "init", "-q", "-b", "main")
	write(t, filepath.Join(dir, "dir/a.txt"), "a\n")
	write(t, filepath.Join(dir, "dir/sub/b.txt"), "b\n")
	write(t, filepath.Join(dir, "dir/sub/deep/c.txt"), "c\n")
	write(t, filepath.Join(dir, "run.sh"), "echo\n")
	write(t, filepath.Join(dir, "z.txt"), "z\n")
	run(t, dir, "add", ".")
	run(t, dir, "commit", "-q", "-m", "one")
	one := run(t, dir, "rev-parse", "HEAD")
	write(t, filepath.Join(dir, "dir/sub/b.txt"), "b2\n")
	if err := os.Remove(filepath.Join(dir, "dir/a.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "z.txt")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "z.txt/inside"), "now a directory\n")
	write(t, filepath.Join(dir, "top.txt"), "t\n")
	run(t, dir, "add", "-A")
	run(t, dir, "commit", "-q", "-m", "two")
	two := run(t, dir, "rev-parse", "HEAD")
	run(t, dir, "tag", "-a", "rel", "-m", "release", two)
	run(t, dir, "tag", "-a", "relrel", "-m", "tag of a tag", "rel")
	run(t, dir, "tag", "-a", "ontree", "-m", "a tree", one+"^{tree}")

	l, err := openLayout(filepath.Join(dir, ".git"))
	if err != nil {
		t.Fatal(err)
	}
	a := newAncestry(l)
	for name, tc := range map[string]struct{ from, to, gitTo string }{
		"commit to commit":       {one, two, two},
		"from nothing":           {"", one, one},
		"backwards":              {two, one, one},
		"an annotated tag":       {one, run(t, dir, "rev-parse", "rel"), two},
		"a tag of a tag":         {one, run(t, dir, "rev-parse", "relrel"), two},
		"a tag of a tree":        {one, run(t, dir, "rev-parse", "ontree"), ""},
		"a commit onto itself":   {two, two, two},
		"the old side is a tag":  {run(t, dir, "rev-parse", "rel"), one, one},
		"the new side is a tree": {one, run(t, dir, "rev-parse", one+"^{tree}"), ""},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := a.brings(tc.from, tc.to)
			if err != nil {
				t.Fatalf("brings: %v", err)
			}
			if got == nil {
				got = []PathChange{}
			}
			if gg := goGitBrings(t, a, tc.from, tc.to); gg != nil || tc.gitTo == "" {
				if gg == nil {
					gg = []PathChange{}
				}
				if diff := cmp.Diff(gg, got); diff != "" {
					t.Errorf("brings against go-git's object diff (-go-git +brings):\n%s", diff)
				}
			}
			if tc.gitTo == "" {
				if len(got) != 0 {
					t.Errorf("a ref at a tree brings %v, want nothing a checkout shows", got)
				}
				return
			}
			from := tc.from
			if from != "" {
				from = run(t, dir, "rev-parse", from+"^{commit}")
			}
			if diff := cmp.Diff(gitBrings(t, dir, from, tc.gitTo), got); diff != "" {
				t.Errorf("brings against git diff-tree (-git +brings):\n%s", diff)
			}
		})
	}

	// A subtree gone from the object store: brings answers as go-git did
	// (the tree's list ends before it), and never fails or panics.
	sub := run(t, dir, "rev-parse", two+":dir/sub")
	if err := os.Remove(filepath.Join(dir, ".git/objects", sub[:2], sub[2:])); err != nil {
		t.Fatal(err)
	}
	b := newAncestry(l)
	got, err := b.brings(one, two)
	if err != nil {
		t.Fatalf("brings with a subtree missing: %v", err)
	}
	if diff := cmp.Diff(goGitBrings(t, b, one, two), got); diff != "" {
		t.Errorf("brings with a subtree missing, against go-git (-go-git +brings):\n%s", diff)
	}
}

func TestFastForwardAgainstGit(t *testing.T) {
	t.Parallel()
	needGit(t)
	dir := filepath.Join(t.TempDir(), "repo")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, dir, "init", "-q", "-b", "main")
	commit := func(file string) string {
		write(t, filepath.Join(dir, file), file+"\n")
		run(t, dir, "add", file)
		run(t, dir, "commit", "-q", "-m", file)
		return run(t, dir, "rev-parse", "HEAD")
	}
	root := commit("a")
	run(t, dir, "checkout", "-q", "-b", "side")
	commit("s1")
	side := commit("s2")
	run(t, dir, "checkout", "-q", "main")
	mainTip := commit("m1")
	run(t, dir, "merge", "-q", "--no-edit", "side")
	merge := run(t, dir, "rev-parse", "HEAD")
	tree := run(t, dir, "rev-parse", "HEAD^{tree}")

	l, err := openLayout(filepath.Join(dir, ".git"))
	if err != nil {
		t.Fatal(err)
	}
	a := newAncestry(l)
	for name, tc := range map[string]struct {
		old, new string
		ff       bool
	}{
		"root to merge":      {root, merge, true},
		"side to merge":      {side, merge, true},
		"main to merge":      {mainTip, merge, true},
		"merge back to root": {merge, root, false},
		"side to main":       {side, mainTip, false},
		"onto itself":        {merge, merge, true},
		"new is a tree":      {root, tree, false},
		"old is missing":     {idA, merge, false},
		"new is missing":     {root, idA, false},
	} {
		t.Run(name, func(t *testing.T) {
			ff, n, err := a.fastForward(tc.old, tc.new)
			if err != nil {
				t.Fatalf("fastForward: %v", err)
			}
			if ff != tc.ff {
				t.Fatalf("fastForward = %v, want %v", ff, tc.ff)
			}
			if !ff {
				return
			}
			if want := run(t, dir, "rev-list", "--count", tc.old+".."+tc.new); want != fmt.Sprint(n) {
				t.Errorf("fastForward counts %d commits, git rev-list --count says %s", n, want)
			}
		})
	}
}
