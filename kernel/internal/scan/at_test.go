package scan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kulehq/kule/kernel/internal/ignore"
	"github.com/kulehq/kule/kernel/internal/walk"
)

// of is the path rel inside the real folder.
func (f *fixture) of(rel string) string { return filepath.Join(f.folder, rel) }

func (f *fixture) at(t *testing.T, opt Options, paths ...string) *Result {
	t.Helper()
	res, err := At(f.folder, f.m, f.base, paths, opt)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// At answers, for the paths asked about only, whether the person changed
// them in the real folder since the sync.
func TestAtSeesWhatThePersonChangedByHand(t *testing.T) {
	t.Parallel()
	f := newFixture(t, tree{"a.txt": "a", "b.txt": "b", "same.txt": "s", "run.sh": "#!/bin/sh\n", "l": "-> x", "other.txt": "o"})
	must(t, os.WriteFile(f.of("a.txt"), []byte("edited by hand"), 0o644))
	must(t, os.Remove(f.of("b.txt")))
	must(t, os.WriteFile(f.of("new.txt"), []byte("n"), 0o644))
	must(t, os.Chmod(f.of("run.sh"), 0o755))
	must(t, os.Remove(f.of("l")))
	must(t, os.Symlink("y", f.of("l")))
	must(t, os.WriteFile(f.of("same.txt"), []byte("s"), 0o644)) // touched, not changed
	must(t, os.WriteFile(f.of("other.txt"), []byte("not asked about"), 0o644))
	res := f.at(t, Options{}, "run.sh", "a.txt", "b.txt", "new.txt", "same.txt", "l", "never.txt", "a.txt", "", ".git/config")
	want := []string{"~ a.txt", "- b.txt", "~ l → y (link)", "+ new.txt", "~ run.sh (mode 0644 → 0755)"}
	if d := cmp.Diff(want, lines(res)); d != "" {
		t.Errorf("effects (-want +got):\n%s", d)
	}
	if len(res.Problems) != 0 {
		t.Errorf("problems: %v", res.Problems)
	}
}

// At never follows a link on the way to a path: a path below what is now a
// link, or a file, counts as gone, even where the link leads to a copy of it.
func TestAtFollowsNoLinkOnTheWay(t *testing.T) {
	t.Parallel()
	f := newFixture(t, tree{"d/e.txt": "e", "sub/c.txt": "c", "keep/k.txt": "k"})
	elsewhere := t.TempDir()
	build(t, elsewhere, tree{"e.txt": "e"})
	must(t, os.RemoveAll(f.of("d")))
	must(t, os.Symlink(elsewhere, f.of("d")))
	must(t, os.RemoveAll(f.of("sub")))
	must(t, os.WriteFile(f.of("sub"), []byte("a file now"), 0o644))
	res := f.at(t, Options{}, "d/e.txt", "sub/c.txt", "keep/k.txt", "d/new.txt")
	if d := cmp.Diff([]string{"- d/e.txt", "- sub/c.txt"}, lines(res)); d != "" {
		t.Errorf("effects (-want +got):\n%s", d)
	}
}

// A path that cannot be looked at is a problem that names it; the other
// paths are still answered.
func TestAtSaysWhatItCannotLookAt(t *testing.T) {
	t.Parallel()
	f := newFixture(t, tree{"a.txt": "a"})
	must(t, os.Remove(f.of("a.txt")))
	long := strings.Repeat("n", 300)
	res := f.at(t, Options{}, long+"/x", long, "a.txt")
	if d := cmp.Diff([]string{"- a.txt"}, lines(res)); d != "" {
		t.Errorf("effects (-want +got):\n%s", d)
	}
	if len(res.Problems) != 2 {
		t.Fatalf("problems: %+v, want the two long paths", res.Problems)
	}
	for _, p := range res.Problems {
		if !strings.HasPrefix(p.Path, long) || p.Kind != walk.Unreadable || p.Err == nil {
			t.Errorf("problem %+v", p)
		}
	}
}

func TestAtMarksIgnoredPaths(t *testing.T) {
	t.Parallel()
	f := newFixture(t, tree{".gitignore": "*.log\n", "a.log": "a", "a.txt": "a"})
	must(t, os.WriteFile(f.of("a.log"), []byte("more"), 0o644))
	must(t, os.WriteFile(f.of("a.txt"), []byte("more"), 0o644))
	res := f.at(t, Options{Ignore: ignore.Load(f.folder, []string{".gitignore"})}, "a.log", "a.txt")
	if d := cmp.Diff([]string{"~ a.log (ignored)", "~ a.txt"}, lines(res)); d != "" {
		t.Errorf("effects (-want +got):\n%s", d)
	}
}
