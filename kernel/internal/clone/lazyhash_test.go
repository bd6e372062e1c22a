package clone

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kulehq/kule/kernel/internal/manifest"
	"github.com/kulehq/kule/kernel/internal/walk"
)

// bigContent is a large file's bytes (over smallFile, so never read whole).
func bigContent(seed byte) []byte {
	b := make([]byte, smallFile+4096)
	for i := range b {
		b[i] = byte(i*31) ^ seed
	}
	return b
}

// A large file just written is racily clean and hashed as it is copied;
// one that has not changed for a while is moved in the kernel and not
// read at all.
func TestLargeFileHashedOnlyWhenRacilyClean(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "big.src")
	data := bigContent(1)
	writeFile(t, src, data, 0o600)
	r, err := CopyFile(src, filepath.Join(dir, "fresh.dst"), walk.Item{}, false, false)
	if err != nil {
		t.Fatal(err)
	}
	if r.Hash != sha256.Sum256(data) {
		t.Fatal("a file written a moment ago was not hashed: its times cannot vouch for it")
	}
	NowForTest(t, time.Hour)
	r, err = CopyFile(src, filepath.Join(dir, "old.dst"), walk.Item{}, false, false)
	if err != nil {
		t.Fatal(err)
	}
	if r.Hash != ([32]byte{}) {
		t.Fatal("an unchanged large file was hashed on the copy's critical path")
	}
	if got, err := os.ReadFile(filepath.Join(dir, "old.dst")); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the copy holds %d bytes (%v), want the source's %d", len(got), err, len(data))
	}
}

// lazyTree clones a folder holding one large file, with the clock moved
// on so that the file is not hashed, and returns the folder, the copy,
// the base and the file's manifest entry.
func lazyTree(t *testing.T) (folder, copyDir string, base Base, e *manifest.Entry) {
	t.Helper()
	root := t.TempDir()
	folder, copyDir = filepath.Join(root, "folder"), filepath.Join(root, "copy")
	baseDir := filepath.Join(root, "base")
	writeFile(t, filepath.Join(folder, "v/big.bin"), bigContent(2), 0o644)
	if err := os.Mkdir(baseDir, 0o700); err != nil {
		t.Fatal(err)
	}
	NowForTest(t, time.Hour)
	res, err := Tree(folder, copyDir, baseDir, Options{Backend: Copy})
	if err != nil {
		t.Fatal(err)
	}
	e, ok := res.Manifest.Get("v/big.bin")
	if !ok || e.HasHash() || e.Len >= 0 {
		t.Fatalf("v/big.bin should be in the manifest unhashed and not kept: %+v", e)
	}
	return folder, copyDir, Base{Dir: baseDir, Backend: Copy, Folder: folder}, e
}

// A base that keeps no content of a large file reads it from the folder
// while the folder's file is what the manifest recorded, and compares
// the copy with it; once the folder's file changed it can no longer tell,
// and the copy's file is not called the same.
func TestBaseReadsALargeFileFromTheFolderWhileItHolds(t *testing.T) {
	folder, copyDir, base, e := lazyTree(t)
	rc, err := base.Open(e)
	if err != nil {
		t.Fatalf("the folder's unchanged file: %v", err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(got, bigContent(2)) {
		t.Fatalf("the base content read %d bytes (%v), want the folder's", len(got), err)
	}
	cp := filepath.Join(copyDir, "v/big.bin")
	if same, err := base.Same(e, cp); err != nil || !same {
		t.Fatalf("an untouched copy is the base content: same=%v err=%v", same, err)
	}
	changed := bigContent(3)
	if err := os.WriteFile(cp, changed, 0o644); err != nil {
		t.Fatal(err)
	}
	if same, err := base.Same(e, cp); err != nil || same {
		t.Fatalf("a copy with other bytes of the same size: same=%v err=%v", same, err)
	}
	// The person rewrites the folder's file with the same bytes: a new
	// change time, and no hash to tell the content by.
	if err := os.WriteFile(filepath.Join(folder, "v/big.bin"), bigContent(2), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := base.Open(e); !errors.Is(err, ErrNotKept) {
		t.Fatalf("a folder file changed since the sync was taken for the base: %v", err)
	}
	if err := os.WriteFile(cp, bigContent(2), 0o644); err != nil {
		t.Fatal(err)
	}
	if same, err := base.Same(e, cp); err != nil || same {
		t.Fatalf("with the base content unknown, the copy must count as changed: same=%v err=%v", same, err)
	}
	// With a hash, a folder file touched since the sync is still read when
	// its bytes are the base's.
	e.Hash = sha256.Sum256(bigContent(2))
	rc, err = base.Open(e)
	if err != nil {
		t.Fatalf("a touched folder file with the base's hash: %v", err)
	}
	got, _ = io.ReadAll(rc)
	rc.Close()
	if !bytes.Equal(got, bigContent(2)) {
		t.Fatal("read after the hash check did not start at the beginning")
	}
}

// The folder's file is read beneath the folder and never through a link,
// nor from a fifo (which would hang the read), whatever stands at the
// path now.
func TestBaseNeverReadsTheFolderThroughALinkOrFifo(t *testing.T) {
	folder, _, base, e := lazyTree(t)
	p := filepath.Join(folder, "v/big.bin")
	elsewhere := filepath.Join(t.TempDir(), "same.bin")
	if err := os.Rename(p, elsewhere); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, p); err != nil {
		t.Fatal(err)
	}
	if _, err := base.Open(e); !errors.Is(err, ErrNotKept) {
		t.Fatalf("a link at the path: %v", err)
	}
	// A link on the way: the directory itself moved aside and linked.
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	aside := filepath.Join(t.TempDir(), "v")
	if err := os.Rename(filepath.Join(folder, "v"), aside); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(elsewhere, filepath.Join(aside, "big.bin")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(aside, filepath.Join(folder, "v")); err != nil {
		t.Fatal(err)
	}
	if _, err := base.Open(e); !errors.Is(err, ErrNotKept) {
		t.Fatalf("a link on the way to the path: %v", err)
	}
	if err := os.Remove(filepath.Join(folder, "v")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(folder, "v"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := base.Open(e); !errors.Is(err, ErrNotKept) {
		t.Fatalf("a fifo at the path: %v", err)
	}
}

// The large files of one directory go to different copy jobs, so that
// the workers copy them side by side; small ones share a job.
func TestSplitJobsSetsLargeFilesApart(t *testing.T) {
	var items []walk.Item
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		items = append(items, walk.Item{Path: "videos/" + n + ".mp4", Size: 200 << 20})
	}
	for _, n := range []string{"a", "b", "c"} {
		items = append(items, walk.Item{Path: "zz/" + n + ".txt", Size: 10})
	}
	jobs := splitJobs(items)
	if len(jobs) != 6 {
		t.Fatalf("jobs %v: want one job a video and one for the three small files", jobs)
	}
	if last := jobs[len(jobs)-1]; last.from != 5 || last.to != 8 {
		t.Fatalf("the small files' job is %v, want items 5 to 8", last)
	}
}
