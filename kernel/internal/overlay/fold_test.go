package overlay

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/kulehq/kule/kernel/internal/beneath"
)

// tree lists every entry below root as path → what it is: a file's
// content, a link's target, a directory's mode.
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case st.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "-> " + target
		case st.IsDir():
			out[rel] = "dir " + st.Mode().Perm().String()
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = st.Mode().Perm().String() + " " + string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var foldLower = map[string]string{
	"a.txt": "a\n", "keep/k.txt": "k\n", "gone/g.txt": "g\n", "gone/deep/d.txt": "d\n",
	"again/old.txt": "o\n", "src/main.go": "package main\n", "docs/readme.md": "r\n",
	"moved/m.txt": "m\n", "type/f": "f\n", "mode.sh": "echo\n",
}

var foldScript = []string{
	"rm a.txt", "rm -r gone", "rm -r again", "mkdir again", "echo n > again/new.txt",
	"echo more >> src/main.go", "echo x > docs/extra.md", "ln -s keep/k.txt link",
	"mv moved renamed", "rm -r type", "echo now-a-file > type", "chmod 755 mode.sh",
	"mkdir -p new/deeper", "echo y > new/deeper/y.txt", "ln keep/k.txt hard.txt",
}

// A real overlay's upper layer folded into its lower layer leaves the lower
// layer holding exactly what the same commands leave in a plain copy:
// deletions, replaced and renamed directories, a directory that became a
// file, modes, links and new trees; the upper layer is empty afterwards.
func TestFoldMatchesTheSameCommandsOnACopy(t *testing.T) {
	needUnshare(t)
	dir := t.TempDir()
	lower, upper, plain := filepath.Join(dir, "lower"), filepath.Join(dir, "upper"), filepath.Join(dir, "plain")
	write(t, lower, foldLower)
	write(t, plain, foldLower)
	if err := os.Mkdir(upper, 0o755); err != nil {
		t.Fatal(err)
	}
	script := strings.Join(foldScript, " && ")
	inOverlay(t, lower, upper, script)
	cmd := exec.Command("sh", "-euc", script)
	cmd.Dir = plain
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("on the plain copy: %v\n%s", err, out)
	}
	done, err := Fold(upper, lower)
	if err != nil {
		t.Fatal(err)
	}
	if len(done) == 0 {
		t.Fatal("Fold folded nothing")
	}
	if diff := cmp.Diff(tree(t, plain), tree(t, lower)); diff != "" {
		t.Fatalf("the folded lower layer differs from the plain copy (-plain +folded):\n%s", diff)
	}
	if left := tree(t, upper); len(left) != 0 {
		t.Fatalf("the upper layer still holds %v", left)
	}
	var a, b unix.Stat_t
	if unix.Lstat(filepath.Join(lower, "keep/k.txt"), &a) != nil || unix.Lstat(filepath.Join(lower, "hard.txt"), &b) != nil || a.Ino != b.Ino {
		t.Fatal("a hard link made in the overlay is two files after the fold")
	}
	// Nothing of overlay's own marks reaches the copy.
	_ = filepath.WalkDir(lower, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink != 0 {
			return err
		}
		for _, name := range []string{"opaque", "origin", "impure", "whiteout"} {
			if _, ok, err := xattr(p, name); err != nil || ok {
				t.Errorf("%s keeps overlay.%s (%v)", p, name, err)
			}
		}
		return nil
	})
}

// A fold stopped half-way and run again ends as one run whole: in
// particular a replaced directory whose lower side was emptied and
// partly refilled is merged into, not emptied again.
func TestFoldResumes(t *testing.T) {
	needUnshare(t)
	dir := t.TempDir()
	lower, upper := filepath.Join(dir, "lower"), filepath.Join(dir, "upper")
	write(t, lower, map[string]string{"d/old.txt": "o\n", "z.txt": "z\n"})
	if err := os.Mkdir(upper, 0o755); err != nil {
		t.Fatal(err)
	}
	inOverlay(t, lower, upper, "rm -r d && mkdir d && echo 1 > d/a.txt && echo 2 > d/b.txt && rm z.txt")
	// The first fold is cut off after d/a.txt: made unreadable, d/b.txt stops it.
	up, err := beneath.Open(upper)
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	lo, err := beneath.Open(lower)
	if err != nil {
		t.Fatal(err)
	}
	defer lo.Close()
	f := &folder{up: up, lo: lo}
	stop := errors.New("cut off")
	cut := &cutFolder{folder: f, after: "d/a.txt", err: stop}
	if err := cut.run(); !errors.Is(err, stop) {
		t.Fatalf("the cut fold returned %v", err)
	}
	if _, err := Fold(upper, lower); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"d": "dir -rwxr-xr-x", "d/a.txt": "-rw-r--r-- 1\n", "d/b.txt": "-rw-r--r-- 2\n"}
	if diff := cmp.Diff(want, tree(t, lower)); diff != "" {
		t.Fatalf("after a resumed fold (-want +got):\n%s", diff)
	}
}

// cutFolder folds as Fold does and stops with err once after is folded.
type cutFolder struct {
	*folder
	after string
	err   error
}

func (c *cutFolder) run() error {
	foldHook = func(rel string) error {
		if rel == c.after {
			return c.err
		}
		return nil
	}
	defer func() { foldHook = nil }()
	return c.dir("")
}

// A link planted in the copy where the upper layer holds a directory
// (the copy changed under a fold) is replaced, never followed: the fold
// writes nothing outside the copy. With the guard off (links followed),
// the same fold writes the command's file into the victim directory.
func TestFoldNeverFollowsALinkInTheCopy(t *testing.T) {
	for _, guard := range []bool{true, false} {
		name := map[bool]string{true: "guarded", false: "guard off: the attack works"}[guard]
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			lower, upper, victim := filepath.Join(dir, "lower"), filepath.Join(dir, "upper"), filepath.Join(dir, "victim")
			for _, d := range []string{lower, upper, victim, filepath.Join(upper, "d")} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			write(t, upper, map[string]string{"d/e/evil.txt": "evil\n"})
			if err := os.Mkdir(filepath.Join(lower, "d"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(victim, filepath.Join(lower, "d", "e")); err != nil {
				t.Fatal(err)
			}
			if !guard {
				beneath.FollowLinksForTest(t)
				foldTypeGuard = false
				t.Cleanup(func() { foldTypeGuard = true })
			}
			_, err := Fold(upper, lower)
			_, statErr := os.Lstat(filepath.Join(victim, "evil.txt"))
			if guard {
				if err != nil {
					t.Fatalf("fold: %v", err)
				}
				if statErr == nil {
					t.Fatal("the fold wrote through a link into the victim directory")
				}
				if got := tree(t, lower)["d/e/evil.txt"]; got != "-rw-r--r-- evil\n" {
					t.Fatalf("the copy holds %q at d/e/evil.txt", got)
				}
				return
			}
			if statErr != nil {
				t.Fatalf("with the guard off the attack should reach the victim (fold: %v)", err)
			}
		})
	}
}

// A directory the command left unreadable, and a mode given to the copy's
// root, fold as they were: the fold opens what it must and the copy ends
// with the command's modes.
func TestFoldKeepsModes(t *testing.T) {
	needUnshare(t)
	dir := t.TempDir()
	lower, upper := filepath.Join(dir, "lower"), filepath.Join(dir, "upper")
	write(t, lower, map[string]string{"a.txt": "a\n"})
	if err := os.Mkdir(upper, 0o755); err != nil {
		t.Fatal(err)
	}
	inOverlay(t, lower, upper, "mkdir -p locked/in && echo s > locked/in/s.txt && chmod 500 locked/in && chmod 0 locked && chmod 750 .")
	if _, err := Fold(upper, lower); err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]os.FileMode{"": 0o750, "locked": 0, "locked/in": 0o500} {
		st, err := os.Lstat(filepath.Join(lower, rel))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != want {
			t.Errorf("%q has mode %v after the fold, want %v", rel, st.Mode().Perm(), want)
		}
	}
	os.Chmod(filepath.Join(lower, "locked"), 0o700)
	os.Chmod(filepath.Join(lower, "locked", "in"), 0o700)
	if b, err := os.ReadFile(filepath.Join(lower, "locked", "in", "s.txt")); err != nil || string(b) != "s\n" {
		t.Fatalf("locked/in/s.txt after the fold: %q, %v", b, err)
	}
}
