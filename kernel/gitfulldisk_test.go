package kernel_test

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kulehq/kule/kernel"
)

// A disk that fills up while a commit copies the task's git objects: the
// commit fails, the folder's repository passes git fsck and holds no temp
// file, and once there is room the commit goes through.
func TestRealDiskFullDuringGitObjectCopy(t *testing.T) {
	needRoot(t, "mount")
	dir := t.TempDir()
	mnt := filepath.Join(dir, "small")
	mountFS(t, mnt, "-t", "tmpfs", "-o", "size=2m", "tmpfs")
	folder := filepath.Join(mnt, "folder")
	write(t, folder, map[string]string{"a.txt": "one\n"})
	gitIn(t, folder, "init", "-q", "-b", "main")
	gitIn(t, folder, "add", ".")
	gitIn(t, folder, "commit", "-q", "-m", "first")
	k, err := kernel.New(kernel.Config{Home: filepath.Join(dir, "home")})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, k: k, folder: folder}
	tk := f.newTask()
	// The big blob lives only in the task's objects: the worktree drops it
	// again, so only the git objects need room in the folder.
	f.sh(tk, "head -c 3000000 /dev/urandom > big.bin && git add big.bin && "+gitID+"commit -qm big && git rm -q big.bin && "+gitID+"commit -qm 'drop big'")
	before := gitIn(t, folder, "for-each-ref")
	_, err = k.Commit(context.Background(), tk, kernel.CommitOptions{})
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("commit onto a full disk = %v, want ENOSPC", err)
	}
	if got := gitIn(t, folder, "for-each-ref"); got != before {
		t.Errorf("a failed commit moved the folder's refs:\n%s", got)
	}
	gitIn(t, folder, "fsck", "--strict", "--no-progress")
	_ = filepath.WalkDir(filepath.Join(folder, ".git"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && (strings.HasPrefix(d.Name(), "tmp_") || strings.Contains(d.Name(), ".tmp")) {
			t.Errorf("a failed commit left %s", p)
		}
		return nil
	})
}
