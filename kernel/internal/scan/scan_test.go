package scan

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kulehq/kule/kernel/internal/clone"
	"github.com/kulehq/kule/kernel/internal/effects"
	"github.com/kulehq/kule/kernel/internal/ignore"
	"github.com/kulehq/kule/kernel/internal/manifest"
)

// fixture is a folder cloned into a task's copy and base, as kule new
// leaves them.
type fixture struct {
	folder, copy string
	m            *manifest.Manifest
	base         clone.Base
}

// tree is a folder's content: a path ending in "/" is a directory, a value
// starting with "-> " a link to the rest, anything else a file's content.
type tree map[string]string

func build(t *testing.T, root string, tr tree) {
	t.Helper()
	for rel, v := range tr {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		switch {
		case strings.HasSuffix(rel, "/"):
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		case strings.HasPrefix(v, "-> "):
			if err := os.Symlink(strings.TrimPrefix(v, "-> "), p); err != nil {
				t.Fatal(err)
			}
		default:
			if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func newFixture(t *testing.T, tr tree) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{folder: filepath.Join(dir, "folder"), copy: filepath.Join(dir, "copy")}
	baseDir := filepath.Join(dir, "base")
	for _, d := range []string{f.folder, baseDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	build(t, f.folder, tr)
	res, err := clone.Tree(f.folder, f.copy, baseDir, clone.Options{Backend: clone.Copy})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) != 0 {
		t.Fatalf("clone: %v", res.Problems)
	}
	f.m = res.Manifest
	f.base = clone.Base{Dir: baseDir, Backend: clone.Copy, Folder: f.folder}
	return f
}

// in is the path rel inside the copy.
func (f *fixture) in(rel string) string { return filepath.Join(f.copy, rel) }

func (f *fixture) scan(t *testing.T, opt Options) *Result {
	t.Helper()
	res, err := Scan(context.Background(), f.copy, f.m, f.base, opt)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// lines is what a person reads of each effect, with the files a whole
// directory stands for.
func lines(res *Result) []string {
	out := []string{}
	for _, e := range res.Effects {
		s := e.String()
		if e.Dir {
			s += " [" + strconv.Itoa(e.Files) + " files]"
		}
		if e.Ignored {
			s += " (ignored)"
		}
		out = append(out, s)
	}
	return out
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// The changes a person makes by hand, each named as kule status names it.
func TestScanNamesEachChange(t *testing.T) {
	t.Parallel()
	start := tree{
		"a.txt":          "alpha\n",
		"same-size.txt":  "12345\n",
		"run.sh":         "#!/bin/sh\n",
		"old.txt":        "to be deleted\n",
		"moveme.txt":     "I move\n",
		"docs/one.md":    "one\n",
		"docs/two.md":    "two\n",
		"gone/x":         "x\n",
		"gone/y/z":       "z\n",
		"latest":         "-> v1",
		"file-to-dir":    "f\n",
		"dir-to-file/in": "in\n",
		"file-to-link":   "fl\n",
		"touched.txt":    "touched\n",
		"private/":       "",
	}
	for name, tc := range map[string]struct {
		change func(t *testing.T, f *fixture)
		want   []string
	}{
		"nothing": {func(*testing.T, *fixture) {}, []string{}},
		"content written again unchanged": {func(t *testing.T, f *fixture) {
			must(t, os.WriteFile(f.in("touched.txt"), []byte("touched\n"), 0o644))
		}, []string{}},
		"modified": {func(t *testing.T, f *fixture) {
			must(t, os.WriteFile(f.in("a.txt"), []byte("alpha, then more\n"), 0o644))
		}, []string{"~ a.txt"}},
		"modified, same size": {func(t *testing.T, f *fixture) {
			must(t, os.WriteFile(f.in("same-size.txt"), []byte("54321\n"), 0o644))
		}, []string{"~ same-size.txt"}},
		"a changed mode": {func(t *testing.T, f *fixture) {
			must(t, os.Chmod(f.in("run.sh"), 0o755))
		}, []string{"~ run.sh (mode 0644 → 0755)"}},
		"a directory's changed mode": {func(t *testing.T, f *fixture) {
			must(t, os.Chmod(f.in("private"), 0o700))
		}, []string{"~ private (mode 0755 → 0700)"}},
		"deleted": {func(t *testing.T, f *fixture) {
			must(t, os.Remove(f.in("old.txt")))
		}, []string{"- old.txt"}},
		"a directory deleted whole": {func(t *testing.T, f *fixture) {
			must(t, os.RemoveAll(f.in("gone")))
		}, []string{"- gone/ [2 files]"}},
		"added": {func(t *testing.T, f *fixture) {
			must(t, os.WriteFile(f.in("new.txt"), []byte("new\n"), 0o644))
		}, []string{"+ new.txt"}},
		"a directory added whole": {func(t *testing.T, f *fixture) {
			build(t, f.copy, tree{"fresh/a": "a", "fresh/b/c": "c", "fresh/b/l": "-> ../a", "fresh/e/": ""})
		}, []string{"+ fresh/ [3 files]"}},
		"a non-UTF-8 name": {func(t *testing.T, f *fixture) {
			must(t, os.WriteFile(f.in("caf\xe9.txt"), []byte("x"), 0o644))
		}, []string{`+ "caf\xe9.txt"`}},
		"a moved file": {func(t *testing.T, f *fixture) {
			must(t, os.Rename(f.in("moveme.txt"), f.in("moved.txt")))
		}, []string{"» moveme.txt → moved.txt"}},
		"a file moved to a non-UTF-8 name": {func(t *testing.T, f *fixture) {
			must(t, os.Rename(f.in("moveme.txt"), f.in("mov\xffed.txt")))
		}, []string{`» moveme.txt → "mov\xffed.txt"`}},
		"a file moved into a new directory": {func(t *testing.T, f *fixture) {
			must(t, os.Mkdir(f.in("archive"), 0o755))
			must(t, os.Rename(f.in("old.txt"), f.in("archive/old.txt")))
		}, []string{"+ archive/ [0 files]", "» old.txt → archive/old.txt"}},
		"a moved file with a changed mode is a delete and an add": {func(t *testing.T, f *fixture) {
			must(t, os.Rename(f.in("moveme.txt"), f.in("moved.txt")))
			must(t, os.Chmod(f.in("moved.txt"), 0o600))
		}, []string{"+ moved.txt", "- moveme.txt"}},
		"a moved directory": {func(t *testing.T, f *fixture) {
			must(t, os.Rename(f.in("docs"), f.in("manual")))
		}, []string{"» docs/ → manual/ [2 files]"}},
		"a moved directory with one file changed": {func(t *testing.T, f *fixture) {
			must(t, os.Rename(f.in("docs"), f.in("manual")))
			must(t, os.WriteFile(f.in("manual/two.md"), []byte("two, changed\n"), 0o644))
		}, []string{"- docs/ [1 files]", "+ manual/ [1 files]", "» docs/one.md → manual/one.md"}},
		"a moved directory with one file deleted": {func(t *testing.T, f *fixture) {
			must(t, os.Rename(f.in("docs"), f.in("manual")))
			must(t, os.Remove(f.in("manual/two.md")))
		}, []string{"- docs/ [1 files]", "+ manual/ [0 files]", "» docs/one.md → manual/one.md"}},
		"a new link": {func(t *testing.T, f *fixture) {
			must(t, os.Symlink("/etc/passwd", f.in("pw")))
		}, []string{"+ pw → /etc/passwd (link)"}},
		"a link pointed elsewhere": {func(t *testing.T, f *fixture) {
			must(t, os.Remove(f.in("latest")))
			must(t, os.Symlink("v2", f.in("latest")))
		}, []string{"~ latest → v2 (link)"}},
		"a link made again with the same target": {func(t *testing.T, f *fixture) {
			must(t, os.Remove(f.in("latest")))
			must(t, os.Symlink("v1", f.in("latest")))
		}, []string{}},
		"a file became a directory": {func(t *testing.T, f *fixture) {
			must(t, os.Remove(f.in("file-to-dir")))
			build(t, f.copy, tree{"file-to-dir/a": "a", "file-to-dir/b": "b"})
		}, []string{"~ file-to-dir/ (file → dir) [2 files]"}},
		"a directory became a file": {func(t *testing.T, f *fixture) {
			must(t, os.RemoveAll(f.in("dir-to-file")))
			must(t, os.WriteFile(f.in("dir-to-file"), []byte("now a file"), 0o644))
		}, []string{"~ dir-to-file/ (dir → file) [1 files]"}},
		"a file became a link": {func(t *testing.T, f *fixture) {
			must(t, os.Remove(f.in("file-to-link")))
			must(t, os.Symlink("../../outside", f.in("file-to-link")))
		}, []string{"~ file-to-link (file → link)"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, start)
			tc.change(t, f)
			res := f.scan(t, Options{})
			if d := cmp.Diff(tc.want, lines(res)); d != "" {
				t.Errorf("effects (-want +got):\n%s", d)
			}
			if len(res.Problems) != 0 {
				t.Errorf("problems: %v", res.Problems)
			}
		})
	}
}

// The effects carry what commit needs beyond the line a person reads.
func TestScanEffectsCarryTypesModesAndTargets(t *testing.T) {
	t.Parallel()
	f := newFixture(t, tree{"run.sh": "#!/bin/sh\n", "f": "f", "m.txt": "move me"})
	must(t, os.Chmod(f.in("run.sh"), 0o755))
	must(t, os.Remove(f.in("f")))
	must(t, os.Symlink("target", f.in("f")))
	must(t, os.Rename(f.in("m.txt"), f.in("n.txt")))
	got := f.scan(t, Options{}).Effects
	want := []effects.Effect{
		{Kind: effects.Type, Path: "f", OldType: effects.TypeFile, NewType: effects.TypeLink, OldMode: 0o644, NewMode: 0o777 | os.ModeSymlink, Size: int64(len("target")), Target: "target"},
		{Kind: effects.Move, Path: "n.txt", From: "m.txt", OldType: effects.TypeFile, NewType: effects.TypeFile, OldMode: 0o644, NewMode: 0o644, Size: 7},
		{Kind: effects.Mode, Path: "run.sh", OldType: effects.TypeFile, NewType: effects.TypeFile, OldMode: 0o644, NewMode: 0o755, Size: 10},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("effects (-want +got):\n%s", d)
	}
}

// Of two deleted files with the content of an added one, the one with the
// same name is where it came from.
func TestScanMovePrefersTheSameName(t *testing.T) {
	t.Parallel()
	f := newFixture(t, tree{"a/notes.md": "same", "b/other.md": "same"})
	must(t, os.Remove(f.in("b/other.md")))
	must(t, os.Mkdir(f.in("c"), 0o755))
	must(t, os.Rename(f.in("a/notes.md"), f.in("c/notes.md")))
	want := []string{"- b/other.md", "+ c/ [0 files]", "» a/notes.md → c/notes.md"}
	if d := cmp.Diff(want, lines(f.scan(t, Options{}))); d != "" {
		t.Errorf("effects (-want +got):\n%s", d)
	}
}

// Without a hash in the manifest, a move is still found by the content the
// base keeps, or failing that by the folder's own file while it is as the
// manifest recorded it.
func TestScanMoveReadsTheBaseWithoutAHash(t *testing.T) {
	t.Parallel()
	f := newFixture(t, tree{"a.txt": "content"})
	e, ok := f.m.Get("a.txt")
	if !ok || e.Len < 0 {
		t.Fatalf("the base does not keep a.txt: %+v", e)
	}
	e.Hash = [32]byte{}
	must(t, os.Rename(f.in("a.txt"), f.in("b.txt")))
	if d := cmp.Diff([]string{"» a.txt → b.txt"}, lines(f.scan(t, Options{}))); d != "" {
		t.Errorf("effects (-want +got):\n%s", d)
	}
	e.Len = -1 // as for a file the base does not keep: read in the folder
	if d := cmp.Diff([]string{"» a.txt → b.txt"}, lines(f.scan(t, Options{}))); d != "" {
		t.Errorf("read in the folder (-want +got):\n%s", d)
	}
	// And content neither the base nor the folder holds any more is no move.
	must(t, os.WriteFile(filepath.Join(f.folder, "a.txt"), []byte("content"), 0o644))
	if d := cmp.Diff([]string{"- a.txt", "+ b.txt"}, lines(f.scan(t, Options{}))); d != "" {
		t.Errorf("without base content (-want +got):\n%s", d)
	}
}

// A file whose base content can no longer be told (not kept, not hashed,
// and the folder's file changed since) shows as changed, never passes as
// unchanged: a commit of it then finds the folder changed and asks.
func TestScanCallsAnUnknownBaseChanged(t *testing.T) {
	t.Parallel()
	f := newFixture(t, tree{"big.bin": "0123456789"})
	e, _ := f.m.Get("big.bin")
	e.Hash, e.Len = [32]byte{}, -1 // as for a large file, not hashed
	must(t, os.WriteFile(filepath.Join(f.folder, "big.bin"), []byte("0123456789"), 0o644))
	must(t, os.WriteFile(f.in("big.bin"), []byte("0123456789"), 0o644))
	res := f.scan(t, Options{})
	if d := cmp.Diff([]string{"~ big.bin"}, lines(res)); d != "" || len(res.Problems) != 0 {
		t.Errorf("effects (-want +got):\n%s\nproblems: %v", d, res.Problems)
	}
}

// Large files are not hashed when the task is made (clone.Tree, with the
// clock on so that they are not racily clean): a status still tells a
// touched file from a changed one, and finds a move, by reading the
// folder's own file, only where the copy's metadata moved.
func TestScanComparesUnhashedLargeFilesWithTheFolder(t *testing.T) {
	clone.NowForTest(t, time.Hour)                   // not parallel: see NowForTest
	big := strings.Repeat("0123456789abcdef", 1<<17) // 2 MiB
	f := newFixture(t, tree{"v/big.bin": big, "v/other.bin": big[1:] + "x"})
	if e, _ := f.m.Get("v/big.bin"); e.HasHash() || e.Len >= 0 {
		t.Fatalf("v/big.bin was hashed or kept: %+v", e)
	}
	old := time.Now().Add(-time.Minute)
	must(t, os.Chtimes(f.in("v/big.bin"), old, old))
	if got := lines(f.scan(t, Options{})); len(got) != 0 {
		t.Errorf("a touched file with the folder's bytes: %v", got)
	}
	changed := []byte(big)
	changed[5] = 'X'
	must(t, os.WriteFile(f.in("v/big.bin"), changed, 0o644))
	if d := cmp.Diff([]string{"~ v/big.bin"}, lines(f.scan(t, Options{}))); d != "" {
		t.Errorf("changed (-want +got):\n%s", d)
	}
	must(t, os.WriteFile(f.in("v/big.bin"), []byte(big), 0o644))
	must(t, os.Rename(f.in("v/big.bin"), f.in("v/moved.bin")))
	if d := cmp.Diff([]string{"» v/big.bin → v/moved.bin"}, lines(f.scan(t, Options{}))); d != "" {
		t.Errorf("moved (-want +got):\n%s", d)
	}
}

// .git entries are judged by meaning elsewhere: the scan lists where they
// are and names none of their files.
func TestScanLeavesGitToGitstate(t *testing.T) {
	t.Parallel()
	f := newFixture(t, tree{".git/HEAD": "ref: refs/heads/main\n", ".git/config": "", "src/a.go": "package a\n"})
	build(t, f.copy, tree{".git/refs/heads/main": "0000\n", "vendor/lib/.git": "gitdir: ../x\n", "vendor/lib/x.go": "package x\n", "sub/.git/HEAD": "x"})
	must(t, os.Remove(f.in(".git/config")))
	res := f.scan(t, Options{})
	if d := cmp.Diff([]string{"+ sub/ [0 files]", "+ vendor/ [1 files]"}, lines(res)); d != "" {
		t.Errorf("effects (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{".", "sub", "vendor/lib"}, res.GitDirs); d != "" {
		t.Errorf("GitDirs (-want +got):\n%s", d)
	}
}

func TestIsGitPath(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]bool{
		".git": true, ".git/HEAD": true, "sub/.git": true, "sub/.git/config": true,
		".gitignore": false, "a.git": false, "x/.github/ci.yml": false, "git/.gitkeep": false, "": false,
	} {
		if got := IsGitPath(p); got != want {
			t.Errorf("IsGitPath(%q) = %v, want %v", p, got, want)
		}
	}
}

// The folder's .gitignore marks effects; a move counts as ignored only when
// both its ends are.
func TestScanMarksIgnoredPaths(t *testing.T) {
	t.Parallel()
	f := newFixture(t, tree{".gitignore": "*.log\nbuild/\n", "a.log": "log line\n", "b.log": "other log\n", "src/x.go": "x"})
	build(t, f.copy, tree{"new.log": "n", "build/out/bin": "b", "keep.txt": "k"})
	must(t, os.Rename(f.in("a.log"), f.in("a.txt")))
	must(t, os.Rename(f.in("b.log"), f.in("c.log")))
	res := f.scan(t, Options{Ignore: ignore.Load(f.folder, []string{".gitignore"})})
	want := []string{"» a.log → a.txt", "+ build/ [1 files] (ignored)", "» b.log → c.log (ignored)", "+ keep.txt", "+ new.log (ignored)"}
	if d := cmp.Diff(want, lines(res)); d != "" {
		t.Errorf("effects (-want +got):\n%s", d)
	}
}

func TestScanFailsWithoutTheCopy(t *testing.T) {
	t.Parallel()
	f := newFixture(t, tree{"a": "a"})
	must(t, os.RemoveAll(f.copy))
	if _, err := Scan(context.Background(), f.copy, f.m, f.base, Options{}); err == nil {
		t.Fatal("Scan of a missing copy succeeded")
	}
}

// Start walks while the manifest loads; Wait lets a caller that will not
// compare wait for the walk all the same.
func TestStartThenWait(t *testing.T) {
	t.Parallel()
	f := newFixture(t, tree{"a": "a"})
	wk := Start(context.Background(), f.copy)
	wk.Wait()
	res, err := wk.Compare(f.m, f.base, Options{})
	if err != nil || len(res.Effects) != 0 {
		t.Fatalf("Compare after Wait: %v, %v", lines(res), err)
	}
}
