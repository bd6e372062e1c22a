package clone

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kulehq/kule/kernel/internal/effects"
	"github.com/kulehq/kule/kernel/internal/walk"
)

func writeFile(t *testing.T, path string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// CopyFile keeps the bytes, the mode and the times, hashes what it read,
// and reports the copy's own metadata; small and large files alike.
func TestCopyFileKeepsContentModeAndTimes(t *testing.T) {
	dir := t.TempDir()
	when := time.Date(2021, 3, 4, 5, 6, 7, 123456789, time.UTC)
	for name, size := range map[string]int{"empty": 0, "small": 1000, "large": smallFile + 12345} {
		t.Run(name, func(t *testing.T) {
			data := bytes.Repeat([]byte("kule "), size/5+1)[:size]
			src, dst := filepath.Join(dir, name+".src"), filepath.Join(dir, name+".dst")
			writeFile(t, src, data, 0o640)
			if err := os.Chtimes(src, when, when); err != nil {
				t.Fatal(err)
			}
			it, err := walk.Lstat(dir, name+".src")
			if err != nil {
				t.Fatal(err)
			}
			r, err := CopyFile(src, dst, it, false, true)
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(dst)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("copy holds %d bytes (%v), want the %d of the source", len(got), err, len(data))
			}
			if r.Hash != sha256.Sum256(data) {
				t.Error("hash is not the sha256 of the content")
			}
			if size <= smallFile && !bytes.Equal(r.Content, data) {
				t.Error("a small file's content is not returned for the base")
			}
			fi, err := os.Stat(dst)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o640 || !fi.ModTime().Equal(when) {
				t.Errorf("copy has mode %v and time %v, want 0640 and %v", fi.Mode().Perm(), fi.ModTime(), when)
			}
			if r.Stat.Size != int64(size) || r.Stat.MTime != when.UnixNano() || r.Stat.Type != effects.TypeFile {
				t.Errorf("reported stat %+v does not describe the copy", r.Stat)
			}
		})
	}
}

// Nothing is clobbered, followed or half-made: an existing destination is
// refused and kept, a source that is gone or became another file is said,
// and no partial copy is left behind.
func TestCopyFileRefuses(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	writeFile(t, src, []byte("source"), 0o644)
	it, err := walk.Lstat(dir, "src")
	if err != nil {
		t.Fatal(err)
	}

	dst := filepath.Join(dir, "kept")
	writeFile(t, dst, []byte("the person's"), 0o644)
	if _, err := CopyFile(src, dst, it, false, false); !errors.Is(err, os.ErrExist) {
		t.Errorf("onto an existing file: %v, want ErrExist", err)
	}
	if b, _ := os.ReadFile(dst); string(b) != "the person's" {
		t.Errorf("the existing file now holds %q", b)
	}

	if _, err := CopyFile(filepath.Join(dir, "gone"), filepath.Join(dir, "out1"), it, false, false); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a vanished source: %v, want ErrNotExist", err)
	}

	other := filepath.Join(dir, "other")
	writeFile(t, other, []byte("another file"), 0o644)
	if _, err := CopyFile(other, filepath.Join(dir, "out2"), it, false, false); !errors.Is(err, ErrChanged) {
		t.Errorf("a source that is another file (inode): %v, want ErrChanged", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "out2")); !errors.Is(err, os.ErrNotExist) {
		t.Error("a refused copy left a file behind")
	}

	link := filepath.Join(dir, "link")
	if err := os.Symlink(src, link); err != nil {
		t.Fatal(err)
	}
	if _, err := CopyFile(link, filepath.Join(dir, "out3"), walk.Item{}, false, false); err == nil {
		t.Error("CopyFile followed a symbolic link")
	}
}

// Tree copies every entry whatever the layout: the files of one directory
// are one job, and a directory whose files sort around a subdirectory's is
// split in two; files past a job's size split too.
func TestTreeCopiesEveryEntry(t *testing.T) {
	root := t.TempDir()
	folder := filepath.Join(root, "folder")
	want := map[string]string{}
	add := func(rel, content string) {
		writeFile(t, filepath.Join(folder, rel), []byte(content), 0o644)
		want[rel] = content
	}
	for i := range 600 { // more than one job's worth in one directory
		add(fmt.Sprintf("big/f%03d.txt", i), fmt.Sprint("file ", i))
	}
	add("a/b.txt", "b")
	add("a/c/x.txt", "x") // sorts between a/b.txt and a/d.txt
	add("a/d.txt", "d")
	add("top.txt", "top")
	if err := os.Symlink("top.txt", filepath.Join(folder, "link")); err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(root, "base")
	if err := os.Mkdir(base, 0o700); err != nil {
		t.Fatal(err)
	}
	res, err := Tree(folder, filepath.Join(root, "copy"), base, Options{Backend: Copy, Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	for rel, content := range want {
		b, err := os.ReadFile(filepath.Join(root, "copy", rel))
		if err != nil || string(b) != content {
			t.Errorf("%s: %q, %v; want %q", rel, b, err, content)
		}
		e, ok := res.Manifest.Get(rel)
		if !ok || e.Hash != sha256.Sum256([]byte(content)) || e.Len != int64(len(content)) {
			t.Errorf("%s: manifest entry %+v (found %v) lacks its hash or base content", rel, e, ok)
		}
	}
	if target, err := os.Readlink(filepath.Join(root, "copy", "link")); err != nil || target != "top.txt" {
		t.Errorf("link: %q, %v", target, err)
	}
	if len(res.Problems) != 0 {
		t.Errorf("problems: %v", res.Problems)
	}
}
