package clone

import (
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/kulehq/kule/kernel/internal/walk"
)

// A large file is copied inside the kernel (copy_file_range) and by read
// and write where that is off, in pieces that end off a chunk's edge too;
// both give the same bytes and the sha256 of them.
func TestCopyLargeFileBothWays(t *testing.T) {
	data := make([]byte, 2*largeChunk+4321)
	for i := range data {
		data[i] = byte(i*7 + i>>13)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "big.src")
	writeFile(t, src, data, 0o600)
	for _, kernelCopy := range []bool{true, false} {
		name := "read-write"
		if kernelCopy {
			name = "copy_file_range"
		}
		t.Run(name, func(t *testing.T) {
			old := useCopyFileRange
			useCopyFileRange = kernelCopy
			defer func() { useCopyFileRange = old }()
			dst := filepath.Join(dir, name+".dst")
			r, err := CopyFile(src, dst, walk.Item{}, false, false)
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(dst)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("the copy holds %d bytes (%v), want the source's %d", len(got), err, len(data))
			}
			if r.Hash != sha256.Sum256(data) {
				t.Fatal("the hash is not the sha256 of what was copied")
			}
		})
	}
}

// A large file written to while it is copied is ErrChanged, never a copy
// whose recorded hash is of other bytes than it holds: here the source's
// modification time moves between the copy's first look and its end.
func TestCopyLargeSeesAWriteDuringTheCopy(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "big.src")
	writeFile(t, src, bytes.Repeat([]byte("x"), smallFile+10), 0o600)
	in, err := unix.Open(src, unix.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(in)
	out, err := unix.Open(filepath.Join(dir, "big.dst"), unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(out)
	var st unix.Stat_t
	if err := unix.Fstat(in, &st); err != nil {
		t.Fatal(err)
	}
	// The write lands after st was taken, as one during the copy would; the
	// writer sets its own modification time, so the change shows whatever
	// the clock's granularity.
	if _, err := unix.Pwrite(in, []byte("y"), 0); err != nil {
		t.Fatal(err)
	}
	if err := unix.UtimesNano(src, []unix.Timespec{st.Atim, {Sec: st.Mtim.Sec - 100}}); err != nil {
		t.Fatal(err)
	}
	st.Size = smallFile + 10
	if _, err := copyLarge(in, out, src, "big.dst", st, true); err == nil {
		t.Fatal("a source written to during the copy was copied without a word")
	}
	// The check taken away (the stat taken after the write): the same copy passes.
	if err := unix.Fstat(in, &st); err != nil {
		t.Fatal(err)
	}
	if err := unix.Ftruncate(out, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := copyLarge(in, out, src, "big.dst", st, true); err != nil {
		t.Fatalf("an unchanged source: %v", err)
	}
}
