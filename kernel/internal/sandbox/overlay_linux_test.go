package sandbox

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/kulehq/kule/kernel/internal/overlay"
	"github.com/kulehq/kule/kernel/internal/runner"
)

// With an upper layer in the spec the copy is an overlayfs the sandbox
// mounts in its own user namespace: the command sees and changes the copy
// as ever, but every write lands in the upper layer and the copy itself is
// untouched until Kule folds the layer back.
func TestOverlayCopy(t *testing.T) {
	skipUnlessSandbox(t)
	w := newWorld(t)
	task := w.task
	task.Upper, task.Work = filepath.Join(task.Dir, "ovl", "upper"), filepath.Join(task.Dir, "ovl", "work")
	for _, d := range []string{task.Upper, task.Work} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(task.Copy, "gone.txt"), "gone")
	var out, errb bytes.Buffer
	code, err := w.sandbox().Run(t.Context(), runner.Spec{
		Task: task, Dir: task.Copy, Env: w.env, Stdout: &out, Stderr: &errb,
		Args: []string{"sh", "-c", "cat main.go && echo made > new.txt && rm gone.txt && echo more >> main.go && cat /proc/self/mountinfo | grep -c ' overlay '"},
	})
	if err != nil || code != 0 {
		t.Fatalf("exit %d, %v; stderr %s", code, err, errb.String())
	}
	if got := out.String(); got != "package main // the copy1\n" {
		t.Fatalf("stdout %q: the command did not see the copy through one overlay", got)
	}
	if b, _ := os.ReadFile(filepath.Join(task.Copy, "main.go")); string(b) != "package main // the copy" {
		t.Fatalf("the copy was written while it was the lower layer: %q", b)
	}
	if _, err := os.Stat(filepath.Join(task.Copy, "new.txt")); err == nil {
		t.Fatal("a new file landed in the lower layer")
	}
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(task.Upper, "gone.txt"), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR {
		t.Fatalf("no whiteout for the deleted file in the upper layer (%v)", err)
	}
	if _, err := overlay.Fold(task.Upper, task.Copy); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(task.Copy, "main.go")); string(b) != "package main // the copymore\n" {
		t.Fatalf("after the fold main.go is %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(task.Copy, "new.txt")); string(b) != "made\n" {
		t.Fatalf("after the fold new.txt is %q", b)
	}
	if _, err := os.Lstat(filepath.Join(task.Copy, "gone.txt")); err == nil {
		t.Fatal("after the fold the deleted file is still in the copy")
	}
}

// An upper layer inside the copy would be a layer the command can write
// directly; the spec is refused.
func TestOverlayLayersOutsideTheCopy(t *testing.T) {
	skipUnlessSandbox(t)
	w := newWorld(t)
	task := w.task
	task.Upper, task.Work = filepath.Join(task.Copy, "upper"), filepath.Join(task.Dir, "work")
	for _, d := range []string{task.Upper, task.Work} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	_, err := w.sandbox().Run(t.Context(), runner.Spec{Task: task, Dir: task.Copy, Env: w.env, Args: []string{"true"}})
	if err == nil {
		t.Fatal("an upper layer inside the copy was accepted")
	}
}
