package kernel_test

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/internal/effects"
	"github.com/kulehq/kule/kernel/internal/overlay"
	"github.com/kulehq/kule/kernel/internal/sandbox"
)

func needOverlay(t *testing.T) {
	t.Helper()
	missing := sandbox.Probe().Missing()
	if err := overlay.Available(); err != nil {
		missing = append(missing, err.Error())
	}
	if len(missing) > 0 {
		if os.Getenv("CI") != "" {
			t.Fatalf("the overlay backend is unavailable on CI: %v", missing)
		}
		t.Skipf("the overlay backend is unavailable here: %v", missing)
	}
}

func overlayFixture(t *testing.T, files map[string]string) *fixture {
	t.Helper()
	dir := t.TempDir()
	folder := filepath.Join(dir, "folder")
	write(t, folder, files)
	k, err := kernel.New(kernel.Config{Home: filepath.Join(dir, "home"), Backend: "overlay"})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, k: k, folder: folder}
}

func effectList(st *kernel.Status) []string {
	var out []string
	for _, e := range st.Effects {
		out = append(out, string(e.Kind)+" "+e.Path)
	}
	sort.Strings(out)
	return out
}

// A task on the overlay backend: a sandboxed command's writes land in the
// overlay's upper layer and are folded into the copy when it ends, so
// status, commit and undo see them as on the copy backend, and the upper
// layer is empty between commands.
func TestOverlayBackendEndToEnd(t *testing.T) {
	needOverlay(t)
	f := overlayFixture(t, map[string]string{"a.txt": "a\n", "gone.txt": "g\n", "dir/x.txt": "x\n", "keep.txt": "k\n"})
	tk := f.newTask()
	if tk.Backend != "overlay" {
		t.Fatalf("backend %q, want overlay", tk.Backend)
	}
	if name, why := f.k.BackendFor(f.folder); name != "overlay" || why == "" {
		t.Fatalf("BackendFor = %q (%s)", name, why)
	}
	out, err := f.sandboxed(tk, kernel.SandboxOptions{}, "echo more >> a.txt && rm gone.txt && rm -r dir && mkdir dir && echo y > dir/y.txt && echo n > new.txt && grep -c ' overlay ' /proc/self/mountinfo")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if out != "1\n" {
		t.Fatalf("the command's copy is not one overlay: %q", out)
	}
	upper := filepath.Join(tk.Paths.Dir, "overlay", "upper")
	if names, err := os.ReadDir(upper); err != nil || len(names) != 0 {
		t.Fatalf("the upper layer after the command: %v, %v", names, err)
	}
	st, err := f.k.Status(context.Background(), tk)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"add dir/y.txt", "add new.txt", "delete dir/x.txt", "delete gone.txt", "modify a.txt"}
	if diff := cmp.Diff(want, effectList(st)); diff != "" {
		t.Fatalf("status (-want +got):\n%s", diff)
	}
	if _, err := f.k.Commit(context.Background(), tk, kernel.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	if !fileIs(filepath.Join(f.folder, "a.txt"), "a\nmore\n") || !fileIs(filepath.Join(f.folder, "dir", "y.txt"), "y\n") {
		t.Fatal("the commit did not reach the folder")
	}
	if _, err := os.Lstat(filepath.Join(f.folder, "gone.txt")); err == nil {
		t.Fatal("the deleted file is still in the folder")
	}
	if _, err := f.k.Undo(context.Background(), tk); err != nil {
		t.Fatal(err)
	}
	if !fileIs(filepath.Join(f.folder, "gone.txt"), "g\n") || !fileIs(filepath.Join(f.folder, "a.txt"), "a\n") {
		t.Fatal("undo did not bring the folder back")
	}
	// A second command runs over the copy as the first left it.
	out, err = f.sandboxed(tk, kernel.SandboxOptions{}, "cat keep.txt && echo k2 > keep.txt")
	if err != nil || out != "k\n" {
		t.Fatalf("second command: %q, %v", out, err)
	}
	if !fileIs(filepath.Join(tk.Paths.Copy, "keep.txt"), "k2\n") {
		t.Fatal("the second command's write was not folded into the copy")
	}
}

// A fold cut off (the process killed after the command, before its
// changes were folded) is finished before the next command starts: the
// next command sees what the first one wrote.
func TestOverlayLeftoverIsFoldedFirst(t *testing.T) {
	needOverlay(t)
	f := overlayFixture(t, map[string]string{"a.txt": "a\n"})
	tk := f.newTask()
	upper := filepath.Join(tk.Paths.Dir, "overlay", "upper")
	if err := os.MkdirAll(upper, 0o700); err != nil {
		t.Fatal(err)
	}
	// What a killed kule leaves: the command's write still in the upper layer.
	if err := os.WriteFile(filepath.Join(upper, "a.txt"), []byte("from the cut-off run\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := f.sandboxed(tk, kernel.SandboxOptions{}, "cat a.txt")
	if err != nil || out != "from the cut-off run\n" {
		t.Fatalf("the next command saw %q (%v)", out, err)
	}
	st, err := f.k.Status(context.Background(), tk)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Effects) != 1 || st.Effects[0].Kind != effects.Modify {
		t.Fatalf("status after the resumed fold: %v", effectList(st))
	}
}
