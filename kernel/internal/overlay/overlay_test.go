package overlay

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kulehq/kule/kernel/internal/effects"
)

// needUnshare skips where unshare or unprivileged overlayfs is missing —
// never on CI, where each is a failure.
func needUnshare(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("unshare"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("this test needs unshare (util-linux), and CI must provide it")
		}
		t.Skip("needs unshare (util-linux)")
	}
}

// inOverlay mounts lower and upper as an unprivileged overlayfs (a new user
// and mount namespace, the userxattr option, as a sandbox would) and runs
// script in the merged directory.
func inOverlay(t *testing.T, lower, upper, script string) {
	t.Helper()
	dir := t.TempDir()
	work, merged := filepath.Join(dir, "work"), filepath.Join(dir, "merged")
	for _, d := range []string{work, merged} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mount := "mount -t overlay overlay -o lowerdir=" + lower + ",upperdir=" + upper + ",workdir=" + work + ",userxattr " + merged
	cmd := exec.Command("unshare", "--user", "--map-root-user", "--mount", "sh", "-euc", mount+" && cd "+merged+" && "+script)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("in the overlay: %v\n%s", err, out)
	}
}

func write(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// What commands do in a real overlay shows in its upper layer: a deleted
// file and a deleted directory are whiteouts, a directory removed and made
// again is replaced (opaque), a changed file and a new one are written with
// the directories on their way, a renamed lower directory (no redirect_dir
// unprivileged: mv copies and deletes) is a whiteout and a written tree, and
// nothing the commands did not touch appears at all.
func TestChangesOfARealOverlay(t *testing.T) {
	needUnshare(t)
	dir := t.TempDir()
	lower, upper := filepath.Join(dir, "lower"), filepath.Join(dir, "upper")
	write(t, lower, map[string]string{
		"a.txt": "a\n", "keep/k.txt": "k\n", "gone/g.txt": "g\n", "again/old.txt": "o\n",
		"src/main.go": "package main\n", "docs/readme.md": "r\n", "moved/m.txt": "m\n",
	})
	if err := os.Mkdir(upper, 0o755); err != nil {
		t.Fatal(err)
	}
	inOverlay(t, lower, upper, strings.Join([]string{
		"rm a.txt", "rm -r gone", "rm -r again", "mkdir again", "echo n > again/new.txt",
		"echo more >> src/main.go", "echo x > docs/extra.md", "ln -s keep/k.txt link",
		"mv moved renamed",
	}, " && "))
	got, err := Changes(upper)
	if err != nil {
		t.Fatal(err)
	}
	want := []Change{
		{Path: "a.txt", Kind: Deleted},
		{Path: "again", Kind: Replaced, Type: effects.TypeDir},
		{Path: "again/new.txt", Kind: Written, Type: effects.TypeFile},
		{Path: "docs", Kind: Written, Type: effects.TypeDir},
		{Path: "docs/extra.md", Kind: Written, Type: effects.TypeFile},
		{Path: "gone", Kind: Deleted},
		{Path: "link", Kind: Written, Type: effects.TypeLink},
		{Path: "moved", Kind: Deleted},
		{Path: "renamed", Kind: Written, Type: effects.TypeDir},
		{Path: "renamed/m.txt", Kind: Written, Type: effects.TypeFile},
		{Path: "src", Kind: Written, Type: effects.TypeDir},
		{Path: "src/main.go", Kind: Written, Type: effects.TypeFile},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("changes of the upper layer (-want +got):\n%s", d)
	}
	// The lower layer is the snapshot: nothing the commands did reached it.
	if b, err := os.ReadFile(filepath.Join(lower, "src/main.go")); err != nil || string(b) != "package main\n" {
		t.Fatalf("the lower layer changed: %q, %v", b, err)
	}
}

// The markers a privileged mount or a newer kernel writes, made by hand in
// an upper layer: a redirect names where a directory came from, a metacopy
// file changed only its metadata, an xattr whiteout deletes. A redirect
// that would leave the layer is refused, not followed.
func TestChangesReadsRedirectsMetacopyAndXattrWhiteouts(t *testing.T) {
	upper := t.TempDir()
	write(t, upper, map[string]string{"new/f.txt": "f", "meta.bin": "", "wh.txt": ""})
	// user.overlay.* as an unprivileged mount writes them; where the file
	// system has no user xattrs (tmpfs before Linux 6.6), trusted.overlay.*
	// as the host's root would, which root may set on tmpfs too.
	set := func(p, name, v string) {
		t.Helper()
		err := setxattr(filepath.Join(upper, p), "user.overlay."+name, v)
		if errors.Is(err, errNoUserXattr) {
			err = setxattr(filepath.Join(upper, p), "trusted.overlay."+name, v)
		}
		if err != nil {
			if os.Getenv("CI") == "" {
				t.Skipf("cannot set overlay xattrs here: %v", err)
			}
			t.Fatal(err)
		}
	}
	set("new", "redirect", "/old/place")
	set("meta.bin", "metacopy", "")
	set("wh.txt", "whiteout", "")
	got, err := Changes(upper)
	if err != nil {
		t.Fatal(err)
	}
	want := []Change{
		{Path: "meta.bin", Kind: MetaOnly, Type: effects.TypeFile},
		{Path: "new", Kind: Written, Type: effects.TypeDir, From: "old/place"},
		{Path: "new/f.txt", Kind: Written, Type: effects.TypeFile},
		{Path: "wh.txt", Kind: Deleted},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("changes (-want +got):\n%s", d)
	}
	set("new", "redirect", "/../../etc")
	if _, err := Changes(upper); !errors.Is(err, ErrBadRedirect) {
		t.Fatalf("a redirect out of the layer: %v, want ErrBadRedirect", err)
	}
}

func TestParseRedirect(t *testing.T) {
	for _, c := range []struct{ dir, value, want string }{
		{"a/b", "/x/y", "x/y"},
		{"a/b", "c", "a/c"},
		{"b", "c", "c"},
	} {
		if got, err := ParseRedirect(c.dir, c.value); err != nil || got != c.want {
			t.Errorf("ParseRedirect(%q, %q) = %q, %v; want %q", c.dir, c.value, got, err, c.want)
		}
	}
	// The check taken away: the value joined as a path leaves the layer.
	if raw := filepath.Join("/layer", "/../../etc"); strings.HasPrefix(raw, "/layer/") {
		t.Fatalf("joined unchecked, %q stays inside; the attack below would not show anything", raw)
	}
	for _, bad := range []string{"", "/", "..", "/a/../b", "a/b", "//a", "/a/", ".", "a\x00"} {
		if got, err := ParseRedirect("d/e", bad); !errors.Is(err, ErrBadRedirect) {
			t.Errorf("ParseRedirect(%q) = %q, %v; want ErrBadRedirect", bad, got, err)
		}
	}
}

func TestKernelVersion(t *testing.T) {
	for rel, want := range map[string][2]int{"6.18.44-fc-v1098": {6, 18}, "5.10.0-28-amd64": {5, 10}, "6.8": {6, 8}, "junk": {0, 0}, "6.1rc2": {6, 1}} {
		if a, b := kernelVersion(rel); a != want[0] || b != want[1] {
			t.Errorf("kernelVersion(%q) = %d.%d, want %d.%d", rel, a, b, want[0], want[1])
		}
	}
}
