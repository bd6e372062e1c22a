package kernel_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kulehq/kule/kernel"
)

// A task plants a link where its file was (and a link as a directory on the
// way): a preview reads what the link points to without the guard — the
// person's secret would reach the window — and with it refuses, saying no
// link is followed.
func TestPreviewNeverFollowsALinkInTheCopy(t *testing.T) {
	const secret = "the person's private words"
	for name, rel := range map[string]string{"file": "notes.txt", "directory": "dir/notes.txt"} {
		t.Run(name, func(t *testing.T) {
			guarded(t, func(t *testing.T) (bool, error) {
				victim := t.TempDir()
				write(t, victim, map[string]string{"notes.txt": secret})
				f := newFixture(t, map[string]string{"notes.txt": "mine", "dir/notes.txt": "mine"})
				tk := f.newTask()
				link, target := filepath.Join(tk.Paths.Copy, "notes.txt"), filepath.Join(victim, "notes.txt")
				if name == "directory" {
					link, target = filepath.Join(tk.Paths.Copy, "dir"), victim
				}
				must(t, os.RemoveAll(link))
				must(t, os.Symlink(target, link))
				data, err := kernel.ReadCopyFile(tk, rel, kernel.MaxPreviewBytes)
				return strings.Contains(string(data), secret), err
			}, func(t *testing.T, err error) {
				if !errors.Is(err, kernel.ErrCannotPreview) || !strings.Contains(err.Error(), "never followed") {
					t.Fatalf("got %v, want a refusal that says the link is not followed", err)
				}
			})
		})
	}
}

func TestPreviewReadsOnlyRegularFilesInsideTheCopy(t *testing.T) {
	f := newFixture(t, map[string]string{"a.txt": "hello", "big.txt": "", "d/x": ""})
	tk := f.newTask()
	must(t, os.Truncate(filepath.Join(tk.Paths.Copy, "big.txt"), kernel.MaxPreviewBytes+1))
	if data, err := kernel.ReadCopyFile(tk, "a.txt", kernel.MaxPreviewBytes); err != nil || string(data) != "hello" {
		t.Fatalf("ReadCopyFile = %q, %v", data, err)
	}
	for rel, says := range map[string]string{
		"../home":     "inside the task's copy",
		"/etc/passwd": "no such file",
		"big.txt":     "larger than the 16 MiB",
		"d":           "not a regular file (a directory)",
		"nosuch":      "no such file",
	} {
		_, err := kernel.ReadCopyFile(tk, rel, kernel.MaxPreviewBytes)
		if !errors.Is(err, kernel.ErrCannotPreview) || !strings.Contains(err.Error(), says) {
			t.Errorf("%s: got %v, want a refusal saying %q", rel, err, says)
		}
	}
}

func TestColumnName(t *testing.T) {
	for n, want := range map[int]string{1: "A", 26: "Z", 27: "AA", 52: "AZ", 53: "BA", 702: "ZZ", 703: "AAA", 16384: "XFD"} {
		if got := kernel.ColumnName(n); got != want {
			t.Errorf("ColumnName(%d) = %q, want %q", n, got, want)
		}
	}
}
