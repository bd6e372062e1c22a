package walk

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kulehq/kule/kernel/internal/beneath"
	"github.com/kulehq/kule/kernel/internal/effects"
)

// The parallel walk lists exactly what filepath.WalkDir lists, never going
// through a link, with any number of workers.
func TestWalkMatchesWalkDir(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for i := range 200 {
		p := filepath.Join(root, fmt.Sprintf("d%d/e%d/f%d", i%7, i%3, i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/", filepath.Join(root, "d0", "to-root")); err != nil {
		t.Fatal(err)
	}
	want := walkDirPaths(root)
	for _, workers := range []int{1, 2, 8} {
		r, err := Walk(root, Options{Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range r.Items {
			if it.Path == "d0/to-root" && it.Type != effects.TypeLink {
				t.Errorf("the link was listed as %v", it.Type)
			}
		}
		if d := cmp.Diff(want, pathsOf(r.Items)); d != "" {
			t.Fatalf("workers=%d (-WalkDir +Walk):\n%s", workers, d)
		}
	}
}

func TestWalkRefusesALinkOrAFileAsRoot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := filepath.Join(dir, "file")
	_ = os.WriteFile(f, nil, 0o644)
	l := filepath.Join(dir, "link")
	_ = os.Symlink(dir, l)
	for _, p := range []string{f, l} {
		if _, err := Walk(p, Options{}); err == nil {
			t.Errorf("Walk(%s) accepted a root that is not a directory", p)
		}
	}
}

// Items come in plain byte order of their whole paths, the manifest's
// order, even where a directory's subtree and its siblings interleave
// ("a", "a-b", "a/x", "a0").
func TestWalkSortsByWholePath(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, p := range []string{"a/x", "a/y/z", "a-b/c", "a0", "a.b", "b/a/b", "b/a-b", "b/a0/q", "-", "a/-"} {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := walkDirPaths(root)
	sort.Strings(want)
	for _, workers := range []int{1, 2, 8} {
		r, err := Walk(root, Options{Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, pathsOf(r.Items)); d != "" {
			t.Fatalf("workers=%d (-sorted +Walk):\n%s", workers, d)
		}
	}
}

// walkDirPaths is what filepath.WalkDir lists under root, slash-separated.
func walkDirPaths(root string) []string {
	var out []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if rel, _ := filepath.Rel(root, p); rel != "." {
			out = append(out, filepath.ToSlash(rel))
		}
		return err
	})
	return out
}

func pathsOf(items []Item) []string {
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, it.Path)
	}
	return out
}

// With Visit, each directory's entries come once, sorted by name, while the
// walk is under way; together they are the whole tree, item for item as Walk
// returns it, and the Result holds no items.
func TestVisitGivesEachDirectoryOnce(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for i := range 300 {
		p := filepath.Join(root, fmt.Sprintf("d%d/e%d/f%d", i%7, i%3, i))
		if i%50 == 0 {
			p = filepath.Join(root, fmt.Sprintf("d%d/e%d-x%d", i%7, i%3, i))
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/", filepath.Join(root, "d0", "to-root")); err != nil {
		t.Fatal(err)
	}
	whole, err := Walk(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	skip := func(rel string, _ effects.EntryType) bool { return rel == "d3/e1" }
	var want []Item
	for _, it := range whole.Items {
		if it.Path != "d3/e1" && !strings.HasPrefix(it.Path, "d3/e1/") {
			want = append(want, it)
		}
	}
	for _, workers := range []int{1, 2, 8} {
		var mu sync.Mutex
		seen := map[string]int{}
		var got []Item
		r, err := Walk(root, Options{Workers: workers, Skip: skip, Visit: func(dir string, items []Item) {
			mu.Lock()
			defer mu.Unlock()
			seen[dir]++
			for k, it := range items {
				if k > 0 && items[k-1].Path >= it.Path {
					t.Errorf("dir %q: %q before %q", dir, items[k-1].Path, it.Path)
				}
				if d, _ := path.Split(it.Path); strings.TrimSuffix(d, "/") != dir {
					t.Errorf("dir %q was given %q", dir, it.Path)
				}
				it.Path = strings.Clone(it.Path)
				got = append(got, it)
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Items) != 0 {
			t.Errorf("workers=%d: the result holds %d items beside Visit", workers, len(r.Items))
		}
		for dir, n := range seen {
			if n != 1 {
				t.Errorf("workers=%d: %q visited %d times", workers, dir, n)
			}
		}
		if _, ok := seen["d3/e1"]; ok {
			t.Errorf("workers=%d: a skipped directory was listed", workers)
		}
		sort.Slice(got, func(i, j int) bool { return got[i].Path < got[j].Path })
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("workers=%d (-Walk +Visit):\n%s", workers, d)
		}
	}
}

// The attack: while the walk goes on, a command swaps a/ (listed, its
// subdirectory b not yet) for a link to a directory outside the tree that
// holds b/secret. Every directory is opened beneath the root, so a/b is a
// problem, never listed; with the guard taken away the walk lists the
// secret as the tree's own.
func TestWalkNeverFollowsALinkSwappedInOnTheWay(t *testing.T) {
	attack := func(t *testing.T) []string {
		root, outside := t.TempDir(), t.TempDir()
		for _, d := range []string{filepath.Join(root, "a", "b"), filepath.Join(outside, "b")} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(outside, "b", "secret"), []byte("s"), 0o600); err != nil {
			t.Fatal(err)
		}
		var paths []string
		var mu sync.Mutex
		_, err := Walk(root, Options{Workers: 1, Visit: func(dir string, items []Item) {
			mu.Lock()
			defer mu.Unlock()
			for _, it := range items {
				paths = append(paths, it.Path)
			}
			if dir == "a" {
				if err := os.Rename(filepath.Join(root, "a"), filepath.Join(t.TempDir(), "a")); err != nil {
					t.Error(err)
				}
				if err := os.Symlink(outside, filepath.Join(root, "a")); err != nil {
					t.Error(err)
				}
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		return paths
	}
	if got := attack(t); slices.Contains(got, "a/b/secret") {
		t.Fatalf("the walk listed the file outside the tree: %v", got)
	}
	t.Run("without the guard", func(t *testing.T) {
		beneath.FollowLinksForTest(t)
		if got := attack(t); !slices.Contains(got, "a/b/secret") {
			t.Fatalf("the guard taken away, the file outside was not listed: %v", got)
		}
	})
}

// WalkBeneath refuses a link in any element of the directory it walks,
// where Walk of the joined path would follow it.
func TestWalkBeneathRefusesALinkOnTheWay(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(outside, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "a")); err != nil {
		t.Fatal(err)
	}
	if _, err := WalkBeneath(root, "a/d", Options{}); !errors.Is(err, beneath.ErrLink) {
		t.Fatalf("WalkBeneath through a link: %v, want beneath.ErrLink", err)
	}
	if _, err := Walk(filepath.Join(root, "a/d"), Options{}); err != nil {
		t.Fatalf("Walk of the joined path (what the guard is for): %v", err)
	}
}
