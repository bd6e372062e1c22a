package scan

import (
	"context"
	"os"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kulehq/kule/kernel/internal/manifest"
	"github.com/kulehq/kule/kernel/internal/relpath"
	"github.com/kulehq/kule/kernel/internal/walk"
)

// The comparer finds each directory's own entries in the manifest's order
// of whole paths, where they lie among their subdirectories' ("a/b",
// "a/b-c", "a/b/x", "a/c"), including a directory the manifest has no entry
// for.
func TestComparerFindsEachDirectorysEntries(t *testing.T) {
	t.Parallel()
	paths := []string{"-", "a", "a-b", "a-b/c", "a.b", "a/-", "a/b", "a/b-c", "a/b/x", "a/b/y/z", "a/b0", "a/c",
		"a0", "b/a-b", "b/a/b", "b/a0/q", "c/d/e/f", "c/d/g", "z"}
	m := &manifest.Manifest{}
	for _, p := range paths {
		m.Entries = append(m.Entries, manifest.Entry{Item: walk.Item{Path: p}})
	}
	m.Sort()
	c := newComparer(m)
	want := map[string][]string{}
	for _, e := range m.Entries {
		d := relpath.Dir(e.Path)
		want[d] = append(want[d], e.Path)
	}
	got := map[string][]string{}
	for d := range want {
		for i, ok := c.first[d]; ok && i >= 0; i = c.next[i] {
			got[d] = append(got[d], c.entries[i].Path)
		}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("entries by directory (-want +got):\n%s", d)
	}
	if len(c.first) != len(want) {
		t.Errorf("%d directories have a first entry, want %d", len(c.first), len(want))
	}
}

// A comparison that starts once the walk is over (every listing kept until
// the manifest came) finds what one that compares as the walk goes finds.
func TestCompareAfterTheWalkFindsTheSame(t *testing.T) {
	t.Parallel()
	f := newFixture(t, tree{"a.txt": "a\n", "a-b/c": "c\n", "a/x": "x\n", "a/y/z": "z\n", "a0": "0\n", "gone/q": "q\n",
		"keep/1": "1\n", "keep/2": "2\n", "to-dir": "t\n", "moved.txt": "I move\n"})
	must(t, os.WriteFile(f.in("a/x"), []byte("x, longer\n"), 0o644))
	must(t, os.RemoveAll(f.in("gone")))
	must(t, os.Remove(f.in("to-dir")))
	must(t, os.MkdirAll(f.in("to-dir/in"), 0o755))
	must(t, os.Rename(f.in("moved.txt"), f.in("keep/moved.txt")))
	must(t, os.WriteFile(f.in("a-b/new"), []byte("n\n"), 0o644))
	live := f.scan(t, Options{})
	wk := Start(context.Background(), f.copy)
	wk.Wait()
	late, err := wk.Compare(f.m, f.base, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"~ a/x", "+ a-b/new", "- gone/ [1 files]", "» moved.txt → keep/moved.txt", "~ to-dir/ (file → dir) [0 files]"}
	if d := cmp.Diff(want, lines(live)); d != "" {
		t.Errorf("compared as it walked (-want +got):\n%s", d)
	}
	if d := cmp.Diff(lines(live), lines(late)); d != "" {
		t.Errorf("compared after the walk (-as it walked +after):\n%s", d)
	}
	if !slices.Equal(live.GitDirs, late.GitDirs) {
		t.Errorf("git dirs %v, then %v", live.GitDirs, late.GitDirs)
	}
}
