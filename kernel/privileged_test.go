package kernel_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/kulehq/kule/kernel"
)

// needRoot skips a test that needs root (mounts, another uid) — but never on
// CI, which runs as root: there a missing privilege is a failure.
func needRoot(t *testing.T, tools ...string) {
	t.Helper()
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root")
	}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) == 0 {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("this test needs %s, and CI must provide it", strings.Join(missing, ", "))
	}
	t.Skipf("needs %s (CI runs it as root)", strings.Join(missing, ", "))
}

func mountFS(t *testing.T, dir string, args ...string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", append(args, dir)...).CombinedOutput(); err != nil {
		t.Fatalf("mount %v: %v\n%s", args, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
}

func freeBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * st.Bsize
}

// On XFS the copy and the base are reflink clones: making a task of 64 MiB
// of photos takes next to no space, and commit and undo work the same.
func TestReflinkCopyTakesNoExtraSpaceOnXFS(t *testing.T) {
	needRoot(t, "mkfs.xfs", "mount")
	dir := t.TempDir()
	img := filepath.Join(dir, "xfs.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 512<<20); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mkfs.xfs", "-q", "-m", "reflink=1", img).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.xfs: %v\n%s", err, out)
	}
	mnt := filepath.Join(dir, "mnt")
	mountFS(t, mnt, "-o", "loop", img)
	folder := filepath.Join(mnt, "photos")
	photos := map[string]string{}
	for i := range 16 {
		photos[filepath.Join("2026", string(rune('a'+i))+".raw")] = string(bytes.Repeat([]byte{byte(i)}, 4<<20))
	}
	write(t, folder, photos)
	unix.Sync()
	k, err := kernel.New(kernel.Config{Home: filepath.Join(mnt, "home")})
	if err != nil {
		t.Fatal(err)
	}
	if name, why := k.BackendFor(folder); name != "reflink" {
		t.Fatalf("BackendFor on XFS with reflink=1 = %s (%s), want reflink", name, why)
	}
	free := freeBytes(t, mnt)
	rep, err := k.NewTask(context.Background(), folder)
	if err != nil {
		t.Fatal(err)
	}
	unix.Sync()
	used := free - freeBytes(t, mnt)
	if rep.Task.Backend != "reflink" {
		t.Fatalf("backend = %s on XFS with reflink=1, want reflink", rep.Task.Backend)
	}
	if used > 8<<20 { // the folder holds 64 MiB; two full copies would take 128 MiB
		t.Fatalf("making the task took %d MiB; reflink clones should take almost none", used>>20)
	}
	f := &fixture{t: t, k: k, folder: folder}
	before := tree(t, folder)
	st := f.sh(rep.Task, "echo edited > 2026/a.raw && mv 2026 archive")
	if len(st.Effects) == 0 {
		t.Fatal("no effects on the reflink backend")
	}
	if _, err := k.Commit(context.Background(), rep.Task, kernel.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Undo(context.Background(), rep.Task); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(before, tree(t, folder)); d != "" {
		t.Fatalf("undo on XFS did not restore the folder:\n%s", d)
	}
}

// A disk that fills up while a commit stages its files: the commit rolls
// back, the folder is as it was, and nothing is left behind.
func TestRealDiskFullDuringCommit(t *testing.T) {
	needRoot(t, "mount")
	dir := t.TempDir()
	mnt := filepath.Join(dir, "small")
	mountFS(t, mnt, "-t", "tmpfs", "-o", "size=4m", "tmpfs")
	folder := filepath.Join(mnt, "folder")
	write(t, folder, map[string]string{"a.txt": "a", "keep/b.txt": "b"})
	k, err := kernel.New(kernel.Config{Home: filepath.Join(dir, "home")})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, k: k, folder: folder}
	tk := f.newTask()
	f.sh(tk, "echo changed > a.txt && head -c 6000000 /dev/urandom > big.bin")
	before := tree(t, folder)
	_, err = k.Commit(context.Background(), tk, kernel.CommitOptions{})
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "nothing in the folder changed") {
		t.Fatalf("commit onto a full disk = %v, want ENOSPC and nothing changed", err)
	}
	if d := cmp.Diff(before, tree(t, folder)); d != "" {
		t.Fatalf("a commit that ran out of space changed the folder:\n%s", d)
	}
	// Make room by dropping the big file from the copy: the rest commits.
	f.sh(tk, "rm big.bin")
	if _, err := k.Commit(context.Background(), tk, kernel.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(folder, "a.txt")); string(b) != "changed\n" {
		t.Fatalf("a.txt = %q after the second commit", b)
	}
}

// As a person who cannot read some of their own files: the walk lists them
// and goes on; it does not fail.
func TestUnreadableEntriesAreListedNotFatal(t *testing.T) {
	needRoot(t)
	// Not t.TempDir(): its parent is private to root, and the unprivileged
	// user must reach this one.
	dir, err := os.MkdirTemp("", "kule-unreadable-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
			if err == nil && info.IsDir() {
				_ = os.Chmod(p, 0o755)
			}
			return nil
		})
		os.RemoveAll(dir)
	})
	must(t, os.Chmod(dir, 0o755))
	folder := filepath.Join(dir, "folder")
	write(t, folder, map[string]string{"ok.txt": "fine", "secret/inner.txt": "x", "locked.txt": "y"})
	must(t, os.Chmod(filepath.Join(folder, "secret"), 0o000))
	must(t, os.Chmod(filepath.Join(folder, "locked.txt"), 0o000))
	home := filepath.Join(dir, "home")
	must(t, os.MkdirAll(home, 0o700))
	must(t, filepath.Walk(dir, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, 65534, 65534) }))
	cmd := exec.Command(kuleBinary(t), "new", folder)
	cmd.Env = append(os.Environ(), "KULE_HOME="+home, "HOME="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kule new as an unprivileged user failed: %v\n%s", err, out)
	}
	for _, want := range []string{"secret: unreadable", "locked.txt: unreadable", "passed over 2 entries"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// kuleBinary builds cmd/kule once per test binary.
func kuleBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "kule-bin-")
		if err != nil {
			binErr = err
			return
		}
		must(t, os.Chmod(dir, 0o755))
		binPath = filepath.Join(dir, "kule")
		// kule-plugins beside it serves the built-in plugins, as make install puts them.
		for _, b := range []struct{ out, pkg string }{{binPath, "github.com/kulehq/kule/cmd/kule"}, {filepath.Join(dir, "kule-plugins"), "github.com/kulehq/kule/cmd/kule-plugins"}} {
			if out, err := exec.Command("go", "build", "-o", b.out, b.pkg).CombinedOutput(); err != nil {
				binErr = errors.New(string(out))
				return
			}
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}
