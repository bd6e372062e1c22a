package beneath

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// tree makes root/{a/b/,file} and victim/{v/,secret}, with root/link -> victim
// and root/a/up -> ../.. planted as a task would.
func tree(t *testing.T) (root, victim string) {
	t.Helper()
	d := t.TempDir()
	root, victim = filepath.Join(d, "root"), filepath.Join(d, "victim")
	for _, p := range []string{filepath.Join(root, "a", "b"), filepath.Join(victim, "v")} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{filepath.Join(root, "file"), filepath.Join(victim, "secret"), filepath.Join(victim, "v", "x")} {
		if err := os.WriteFile(p, []byte("keep"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(victim, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../..", filepath.Join(root, "a", "up")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("b", filepath.Join(root, "a", "inside")); err != nil {
		t.Fatal(err)
	}
	return root, victim
}

// ops is every writing call of a Root, each aimed through a link.
var ops = map[string]func(r *Root, via string) error{
	"write": func(r *Root, via string) error { return r.WriteFile(via+"/secret", []byte("pwned"), 0o644) },
	"create": func(r *Root, via string) error {
		f, err := r.OpenFile(via+"/new", os.O_WRONLY|os.O_CREATE, 0o644)
		closeIf(f)
		return err
	},
	"remove":    func(r *Root, via string) error { return r.Remove(via + "/secret") },
	"removeAll": func(r *Root, via string) error { return r.RemoveAll(via + "/v") },
	"mkdir":     func(r *Root, via string) error { return r.Mkdir(via+"/new", 0o755) },
	"mkdirAll":  func(r *Root, via string) error { return r.MkdirAll(via+"/new/deep", 0o755) },
	"symlink":   func(r *Root, via string) error { return r.Symlink("/etc/passwd", via+"/new") },
	"rename":    func(r *Root, via string) error { return r.Rename(via+"/secret", "file2") },
	"chmod":     func(r *Root, via string) error { return r.Chmod(via+"/secret", 0o777) },
	"utimes":    func(r *Root, via string) error { return r.Utimes(via+"/secret", unix.Timespec{}, unix.Timespec{}) },
	"readdir":   func(r *Root, via string) error { _, err := r.ReadDir(via); return err },
	"read":      func(r *Root, via string) error { _, err := r.ReadFile(via + "/secret"); return err },
}

func closeIf(f *os.File) {
	if f != nil {
		f.Close()
	}
}

// victimIntact reports what changed in the victim, if anything.
func victimIntact(t *testing.T, victim string) string {
	t.Helper()
	var got []string
	_ = filepath.Walk(victim, func(p string, info os.FileInfo, err error) error {
		if err == nil {
			rel, _ := filepath.Rel(victim, p)
			got = append(got, rel+":"+info.Mode().String())
		}
		return nil
	})
	want := "." + ":drwxr-xr-x secret:-rw-r--r-- v:drwxr-xr-x v/x:-rw-r--r--"
	if strings.Join(got, " ") != want {
		return strings.Join(got, " ")
	}
	if b, _ := os.ReadFile(filepath.Join(victim, "secret")); string(b) != "keep" {
		return "secret holds " + string(b)
	}
	return ""
}

func TestEveryCallRefusesALinkOnTheWay(t *testing.T) {
	for _, fallback := range []bool{false, true} {
		name := "openat2"
		if fallback {
			name = "per-element"
		}
		t.Run(name, func(t *testing.T) {
			noOpenat2.Store(fallback)
			defer noOpenat2.Store(false)
			for op, do := range ops {
				for _, via := range []string{"link", "a/up/victim", "a/inside/../../link"} {
					root, victim := tree(t)
					r, err := Open(root)
					if err != nil {
						t.Fatal(err)
					}
					err = do(r, via)
					r.Close()
					if !errors.Is(err, ErrLink) && !(via == "a/inside/../../link" && errors.Is(err, errNotBeneath)) {
						t.Errorf("%s through %s: got %v, want ErrLink", op, via, err)
					}
					var le *LinkError
					if errors.Is(err, ErrLink) && (!errors.As(err, &le) || le.Root != root) {
						t.Errorf("%s through %s: %v does not name the root", op, via, err)
					}
					if d := victimIntact(t, victim); d != "" {
						t.Errorf("%s through %s reached the victim: %s", op, via, d)
					}
				}
			}
		})
	}
}

// TestWithTheGuardOffTheAttackLands shows the test above can fail: following
// links, the same calls reach the victim.
func TestWithTheGuardOffTheAttackLands(t *testing.T) {
	FollowLinksForTest(t)
	for _, op := range []string{"write", "remove", "removeAll", "mkdir", "symlink", "chmod"} {
		root, victim := tree(t)
		r, err := Open(root)
		if err != nil {
			t.Fatal(err)
		}
		err = ops[op](r, "link")
		r.Close()
		if err != nil {
			t.Errorf("%s with links followed: %v", op, err)
		}
		if victimIntact(t, victim) == "" {
			t.Errorf("%s with links followed left the victim untouched: the guard test proves nothing", op)
		}
	}
}

func TestCallsWorkBeneathTheRoot(t *testing.T) {
	root, _ := tree(t)
	r, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(r.MkdirAll("x/y/z", 0o755))
	must(r.WriteFile("x/y/z/f", []byte("one"), 0o640))
	must(r.WriteFile("x/y/z/f", []byte("two"), 0o600))
	b, err := r.ReadFile("x/y/z/f")
	must(err)
	if string(b) != "two" {
		t.Fatalf("read %q", b)
	}
	st, err := r.Lstat("x/y/z/f")
	must(err)
	if st.Mode&0o777 != 0o600 {
		t.Fatalf("mode %o", st.Mode&0o777)
	}
	names, err := r.ReadDir("x/y/z")
	must(err)
	if len(names) != 1 || names[0] != "f" {
		t.Fatalf("the directory holds %v; a temporary file was left", names)
	}
	must(r.Symlink("../elsewhere", "x/l"))
	if tg, err := r.Readlink("x/l"); err != nil || tg != "../elsewhere" {
		t.Fatalf("readlink %q %v", tg, err)
	}
	must(r.Rename("x/y/z/f", "x/g"))
	must(r.Chmod("x/g", 0o644))
	must(r.Remove("x/l"))
	// A link at the end is removed itself, never what it points to.
	must(r.RemoveAll("link"))
	if _, err := os.Lstat(filepath.Join(root, "link")); !os.IsNotExist(err) {
		t.Fatalf("the link is still there: %v", err)
	}
	must(r.RemoveAll("x"))
	must(r.RemoveAll("missing/deeper"))
	if _, err := os.Stat(filepath.Join(root, "x")); !os.IsNotExist(err) {
		t.Fatalf("x survived RemoveAll: %v", err)
	}
	if err := r.WriteFile("a/inside", []byte("x"), 0o644); err != nil {
		t.Fatalf("replacing a link at the end: %v", err)
	}
	if st, err := os.Lstat(filepath.Join(root, "a", "inside")); err != nil || !st.Mode().IsRegular() {
		t.Fatalf("the link was written through, not replaced: %v", err)
	}
}

func TestARootThatIsALinkIsRefused(t *testing.T) {
	root, _ := tree(t)
	l := filepath.Join(t.TempDir(), "l")
	if err := os.Symlink(root, l); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(l); !errors.Is(err, ErrLink) {
		t.Fatalf("Open(link) = %v, want ErrLink", err)
	}
}

// FuzzOpenDir: whatever path is asked for, nothing outside the root opens.
func FuzzOpenDir(f *testing.F) {
	for _, s := range []string{"a", "a/b", "link", "a/up", "a/up/victim", "../victim", "/etc", "a/../link", "a/inside", "./a//b/", "a/b/../../.."} {
		f.Add(s)
	}
	d := f.TempDir()
	root, victim := filepath.Join(d, "root"), filepath.Join(d, "victim")
	if err := os.MkdirAll(filepath.Join(root, "a", "b"), 0o755); err != nil {
		f.Fatal(err)
	}
	if err := os.MkdirAll(victim, 0o755); err != nil {
		f.Fatal(err)
	}
	_ = os.Symlink(victim, filepath.Join(root, "link"))
	_ = os.Symlink("../..", filepath.Join(root, "a", "up"))
	_ = os.Symlink("b", filepath.Join(root, "a", "inside"))
	var rootSt unix.Stat_t
	if err := unix.Stat(root, &rootSt); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, rel string) {
		r, err := Open(root)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		fd, err := r.OpenDir(rel)
		if err != nil {
			return
		}
		defer unix.Close(fd)
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			t.Fatal(err)
		}
		// Every directory beneath root is root, a or a/b.
		ok := false
		for _, p := range []string{root, filepath.Join(root, "a"), filepath.Join(root, "a", "b")} {
			var want unix.Stat_t
			if unix.Stat(p, &want) == nil && want.Ino == st.Ino && want.Dev == st.Dev {
				ok = true
			}
		}
		if !ok {
			t.Fatalf("OpenDir(%q) opened a directory outside the root", rel)
		}
	})
}
