package scan

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kulehq/kule/kernel/internal/effects"
	"github.com/kulehq/kule/kernel/internal/manifest"
	"github.com/kulehq/kule/kernel/internal/relpath"
	"github.com/kulehq/kule/kernel/internal/walk"
)

// memLookup reads a manifest held whole, as manifest.Indexed reads a saved one.
type memLookup struct{ m *manifest.Manifest }

func (l memLookup) Get(p string) (*manifest.Entry, bool, error) {
	e, ok := l.m.Get(p)
	return e, ok, nil
}

func (l memLookup) Below(d string) ([]manifest.Entry, error) { return l.m.Below(d), nil }

// touched is what an overlay's upper layer would list after the change:
// every path that is new, gone or whose metadata moved, less what lies
// below a directory that is gone or new (a whiteout, or a directory made
// in the upper layer, stands for all of it).
func touched(t *testing.T, f *fixture) []Dirty {
	t.Helper()
	w, err := walk.Walk(f.copy, walk.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := map[string]walk.Item{}
	for _, it := range w.Items {
		now[it.Path] = it
	}
	var out []Dirty
	whole := map[string]bool{}
	consider := func(p string) {
		for d := relpath.Dir(p); d != ""; d = relpath.Dir(d) {
			if whole[d] {
				return
			}
		}
		it, inCopy := now[p]
		o, inBase := f.m.Get(p)
		switch {
		case inCopy && inBase && o.Type == it.Type && unchanged(o, it):
			return
		case inCopy != inBase || o.Type != it.Type:
			if (inBase && o.Type == effects.TypeDir) || (inCopy && it.Type == effects.TypeDir) {
				whole[p] = true
			}
		}
		out = append(out, Dirty{Path: p})
	}
	all := map[string]bool{}
	for p := range now {
		all[p] = true
	}
	for _, e := range f.m.Entries {
		all[e.Path] = true
	}
	var paths []string
	for p := range all {
		paths = append(paths, p)
	}
	// Shorter first, so that a directory is decided before what is below it.
	for n := 1; len(paths) > 0; n++ {
		rest := paths[:0]
		for _, p := range paths {
			if depth(p) == n {
				consider(p)
			} else {
				rest = append(rest, p)
			}
		}
		paths = rest
	}
	return out
}

func depth(p string) int {
	n := 1
	for _, c := range p {
		if c == '/' {
			n++
		}
	}
	return n
}

// Given the paths an overlay's upper layer would name, Paths finds what a
// walk of the whole copy finds — each kind of change a person makes.
func TestPathsFindWhatTheWalkFinds(t *testing.T) {
	t.Parallel()
	start := tree{
		"a.txt": "alpha\n", "same-size.txt": "12345\n", "run.sh": "#!/bin/sh\n",
		"old.txt": "to be deleted\n", "moveme.txt": "I move\n", "docs/one.md": "one\n",
		"docs/two.md": "two\n", "gone/x": "x\n", "gone/y/z": "z\n", "latest": "-> v1",
		"file-to-dir": "f\n", "dir-to-file/in": "in\n", "file-to-link": "fl\n",
		"touched.txt": "touched\n", "private/": "", "deep/a/b/c/file": "c\n", "deep/a/other": "o\n",
	}
	for name, change := range map[string]func(t *testing.T, f *fixture){
		"nothing":             func(*testing.T, *fixture) {},
		"unchanged content":   func(t *testing.T, f *fixture) { must(t, os.WriteFile(f.in("touched.txt"), []byte("touched\n"), 0o644)) },
		"modified":            func(t *testing.T, f *fixture) { must(t, os.WriteFile(f.in("a.txt"), []byte("alpha, more\n"), 0o644)) },
		"a mode":              func(t *testing.T, f *fixture) { must(t, os.Chmod(f.in("run.sh"), 0o755)) },
		"a directory's mode":  func(t *testing.T, f *fixture) { must(t, os.Chmod(f.in("private"), 0o700)) },
		"deleted":             func(t *testing.T, f *fixture) { must(t, os.Remove(f.in("old.txt"))) },
		"a directory deleted": func(t *testing.T, f *fixture) { must(t, os.RemoveAll(f.in("gone"))) },
		"a deep file changed": func(t *testing.T, f *fixture) {
			must(t, os.WriteFile(f.in("deep/a/b/c/file"), []byte("changed\n"), 0o644))
		},
		"a directory added whole": func(t *testing.T, f *fixture) {
			build(t, f.copy, tree{"fresh/a": "a", "fresh/b/c": "c", "fresh/b/l": "-> ../a", "fresh/e/": ""})
		},
		"a moved file":           func(t *testing.T, f *fixture) { must(t, os.Rename(f.in("moveme.txt"), f.in("moved.txt"))) },
		"a moved directory":      func(t *testing.T, f *fixture) { must(t, os.Rename(f.in("docs"), f.in("manual"))) },
		"a moved deep directory": func(t *testing.T, f *fixture) { must(t, os.Rename(f.in("deep/a/b"), f.in("b"))) },
		"a new link":             func(t *testing.T, f *fixture) { must(t, os.Symlink("/etc/passwd", f.in("pw"))) },
		"a directory became file": func(t *testing.T, f *fixture) {
			must(t, os.RemoveAll(f.in("dir-to-file")))
			must(t, os.WriteFile(f.in("dir-to-file"), []byte("now a file"), 0o644))
		},
		"a file became a directory": func(t *testing.T, f *fixture) {
			must(t, os.Remove(f.in("file-to-dir")))
			build(t, f.copy, tree{"file-to-dir/a": "a", "file-to-dir/b": "b"})
		},
		"a file became a link": func(t *testing.T, f *fixture) {
			must(t, os.Remove(f.in("file-to-link")))
			must(t, os.Symlink("../../outside", f.in("file-to-link")))
		},
		"a new repository": func(t *testing.T, f *fixture) {
			build(t, f.copy, tree{"proj/.git/HEAD": "ref: refs/heads/main\n", "proj/main.go": "package main\n"})
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, start)
			change(t, f)
			want := f.scan(t, Options{})
			dirty := touched(t, f)
			got, part, err := Paths(context.Background(), f.copy, memLookup{f.m}, f.base, dirty, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(lines(want), lines(got)); d != "" {
				t.Errorf("Paths(%v) (-walk +paths):\n%s", dirty, d)
			}
			if d := cmp.Diff(want.GitDirs, got.GitDirs); d != "" && len(want.GitDirs)+len(got.GitDirs) > 0 {
				t.Errorf("git directories (-walk +paths):\n%s", d)
			}
			for _, e := range got.Effects {
				for _, p := range []string{e.Path, e.From} {
					if _, inBase := f.m.Get(p); p != "" && inBase {
						if _, ok := part.Get(p); !ok {
							t.Errorf("the manifest part lacks %s, which an effect names", p)
						}
					}
				}
			}
		})
	}
}

// Paths reads no more than it is given: a change it was not told of is
// not seen (what makes it O(changes), and why the record that feeds it
// must hold every path that can differ).
func TestPathsReadOnlyTheDirtyPaths(t *testing.T) {
	t.Parallel()
	f := newFixture(t, tree{"a.txt": "a\n", "b.txt": "b\n"})
	must(t, os.WriteFile(f.in("a.txt"), []byte("a, changed\n"), 0o644))
	must(t, os.WriteFile(f.in("b.txt"), []byte("b, changed\n"), 0o644))
	got, _, err := Paths(context.Background(), f.copy, memLookup{f.m}, f.base, []Dirty{{Path: "a.txt"}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"~ a.txt"}, lines(got)); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
}

// The attack: a command replaces d/ by a link to a directory outside the
// copy, and a record names d/secret.txt. A dirty path below a link is
// gone, never read through the link; without the guard the status stats
// and reads the file outside (its content is compared with the base's,
// and shown as the task's change).
func TestPathsNeverFollowALink(t *testing.T) {
	attack := func(t *testing.T) []string {
		f := newFixture(t, tree{"d/secret.txt": "s\n"})
		outside := t.TempDir()
		must(t, os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("the person's own\n"), 0o644))
		must(t, os.RemoveAll(f.in("d")))
		must(t, os.Symlink(outside, f.in("d")))
		got, _, err := Paths(context.Background(), f.copy, memLookup{f.m}, f.base, []Dirty{{Path: "d/secret.txt"}}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return lines(got)
	}
	if d := cmp.Diff([]string{"- d/secret.txt"}, attack(t)); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
	t.Run("without the guard", func(t *testing.T) {
		lstatDirty = func(root, rel string, _ map[string]bool) (walk.Item, error) { return walk.Lstat(root, rel) }
		defer func() { lstatDirty = lstatBeneath }()
		got := attack(t)
		if !slices.Contains(got, "~ d/secret.txt") {
			t.Fatalf("the guard taken away, the file outside was not read: %v", got)
		}
	})
}
