package gitstate

import (
	"crypto/rand"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// fullDiskWorld is a world whose folder lies on a tmpfs of size bytes, and
// whose copy (elsewhere) holds a commit with an incompressible file of big
// bytes: its object cannot fit in the folder.
func fullDiskWorld(t *testing.T, size string, big int) (*world, *Effects) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("the full-disk test mounts a tmpfs and needs root")
		}
		t.Skip("needs root to mount a tmpfs")
	}
	needGit(t)
	mnt := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", mnt).Run() })
	folder := filepath.Join(mnt, "folder")
	if err := os.Mkdir(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, folder, "init", "-q", "-b", "main")
	write(t, filepath.Join(folder, "a.txt"), "one\n")
	run(t, folder, "add", ".")
	run(t, folder, "commit", "-q", "-m", "first")
	w := &world{t: t, folder: folder, copy: filepath.Join(t.TempDir(), "copy")}
	w.recopy()
	b := make([]byte, big)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(w.copy, "big.bin"), string(b))
	run(t, w.copy, "add", "big.bin")
	run(t, w.copy, "commit", "-q", "-m", "big")
	eff := w.compare()
	if len(eff.Objects.Loose) != 3 {
		t.Fatalf("effects objects = %v, want blob, tree and commit", eff.Objects.Loose)
	}
	return w, eff
}

// leftovers lists temp files git or Kule would leave in objects/.
func leftovers(t *testing.T, gitDir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(filepath.Join(gitDir, "objects"), func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), "tmp_") {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// On a full disk the object copy fails part-way: the commit must fail, the
// folder's repository must stay whole (git fsck) and no temp file remains.
// With the write errors dropped (as once), the truncated object is renamed
// into the folder's .git and git fsck finds it corrupt.
func TestFullDiskObjectCopyFailsCleanly(t *testing.T) {
	w, eff := fullDiskWorld(t, "1m", 3<<20)
	before, err := Take(w.folderGit())
	if err != nil {
		t.Fatal(err)
	}
	_, err = Apply(w.base, w.folderGit(), w.copyGit(), eff, ApplyOptions{})
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Apply onto a full disk = %v, want ENOSPC", err)
	}
	assertSameMeaning(t, before, w.folderGit())
	w.fsck()
	if l := leftovers(t, w.folderGit()); len(l) > 0 {
		t.Fatalf("a failed object copy left %v", l)
	}
	for _, id := range eff.Objects.Loose {
		if p := loosePath(filepath.Join(w.folderGit(), "objects"), id); fileExists(p) {
			if b, _ := os.ReadFile(p); VerifyLoose(b, id) != nil {
				t.Fatalf("a corrupt object %s reached the folder", id)
			}
		}
	}
}

func TestFullDiskObjectCopyWithoutTheCheckCorrupts(t *testing.T) {
	w, eff := fullDiskWorld(t, "1m", 3<<20)
	dropWriteErrors = true
	t.Cleanup(func() { dropWriteErrors = false })
	_, _ = Apply(w.base, w.folderGit(), w.copyGit(), eff, ApplyOptions{})
	corrupt := 0
	for _, id := range eff.Objects.Loose {
		p := loosePath(filepath.Join(w.folderGit(), "objects"), id)
		if b, err := os.ReadFile(p); err == nil && VerifyLoose(b, id) != nil {
			corrupt++
		}
	}
	if corrupt == 0 {
		t.Fatal("with write errors dropped no corrupt object reached the folder: the test does not show the attack")
	}
	if _, err := tryRun(w.folder, "fsck", "--strict", "--no-progress"); err == nil {
		t.Fatal("git fsck passed on a folder holding a truncated object")
	}
}

func fileExists(p string) bool { _, err := os.Lstat(p); return err == nil }
