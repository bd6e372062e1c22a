package kernel_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kulehq/kule/kernel"
)

// Where the file system has no reflinks, a folder of OverlayFrom entries
// or more gets the overlay backend, and a smaller one a plain copy; kule
// doctor's BackendFor says the same before the task is made.
func TestAutoBackendIsOverlayForALargeFolder(t *testing.T) {
	needOverlay(t)
	for _, tc := range []struct {
		files int
		want  string
	}{{3, "copy"}, {8, "overlay"}} {
		t.Run(fmt.Sprint(tc.files), func(t *testing.T) {
			t.Setenv("KULE_BACKEND", "")
			dir := t.TempDir()
			folder := filepath.Join(dir, "folder")
			files := map[string]string{}
			for i := range tc.files {
				files[fmt.Sprintf("f%d.txt", i)] = "x\n"
			}
			write(t, folder, files)
			k, err := kernel.New(kernel.Config{Home: filepath.Join(dir, "home"), OverlayFrom: 6})
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			if name, _ := k.BackendFor(folder); name == "reflink" {
				want = "reflink" // a file system with reflinks never gets an overlay
			}
			name, why := k.BackendFor(folder)
			if name != want || (want != "reflink" && !strings.Contains(why, "entries")) {
				t.Fatalf("BackendFor = %q (%s), want %q", name, why, want)
			}
			rep, err := k.NewTask(context.Background(), folder)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Task.Backend != want {
				t.Fatalf("kule new made a %q task, want %q", rep.Task.Backend, want)
			}
		})
	}
}

// A forced backend is never overruled by the folder's size.
func TestForcedCopyStaysCopyForALargeFolder(t *testing.T) {
	needOverlay(t)
	dir := t.TempDir()
	folder := filepath.Join(dir, "folder")
	write(t, folder, map[string]string{"a": "a", "b": "b", "c": "c", "d": "d"})
	k, err := kernel.New(kernel.Config{Home: filepath.Join(dir, "home"), Backend: "copy", OverlayFrom: 2})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := k.NewTask(context.Background(), folder)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Task.Backend != "copy" {
		t.Fatalf("backend %q, want the forced copy", rep.Task.Backend)
	}
}
