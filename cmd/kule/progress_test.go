package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/creack/pty"
)

// newOnPTY runs kule new with its stderr on a terminal (a pty) and returns
// what the terminal showed and what stdout got.
func newOnPTY(t *testing.T, home, folder string, env ...string) (term, stdout string) {
	t.Helper()
	return onPTY(t, home, []string{"new", folder}, env...)
}

// onPTY runs kule with args, its stderr on a terminal (a pty), and returns
// what the terminal showed and what stdout got.
func onPTY(t *testing.T, home string, args []string, env ...string) (term, stdout string) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 24, Cols: 120}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), "KULE_AS_CLI=1", "KULE_HOME="+home), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, tty
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	var shown bytes.Buffer
	read := make(chan struct{})
	go func() { _, _ = io.Copy(&shown, ptmx); close(read) }() // ends with EIO once the child is gone
	if err := cmd.Wait(); err != nil {
		t.Fatalf("kule %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), shown.String())
	}
	<-read
	return shown.String(), out.String()
}

// TestNewShowsProgressOnATerminal: kule new on a terminal draws a bar with
// the files and bytes done and the time left, and clears it; into a pipe
// it draws nothing. The floor below which no bar is drawn is lowered for
// the test's small folder; with it in place, that folder gets none.
func TestNewShowsProgressOnATerminal(t *testing.T) {
	dir := t.TempDir()
	folder := filepath.Join(dir, "folder")
	for i := range 40 {
		writeFile(t, filepath.Join(folder, fmt.Sprintf("d%d", i%4), fmt.Sprintf("f%02d.bin", i)), strings.Repeat("x", 64<<10))
	}
	home := filepath.Join(dir, "home")

	shown, stdout := newOnPTY(t, home, folder, "KULE_TEST_PROGRESS_FLOOR=1")
	if !strings.Contains(shown, "copying 40 of 40 files, 2.5 MiB of 2.5 MiB") || !strings.Contains(shown, "100%") || !strings.Contains(shown, "s:0s]") {
		t.Errorf("the terminal showed no progress bar of 40 files and 2.5 MiB with the time spent and left:\n%q", shown)
	}
	if !strings.HasSuffix(shown, "\x1b[2K\r") {
		t.Errorf("the bar is not cleared at the end:\n%q", shown)
	}
	if strings.Contains(stdout, "copying") || !strings.Contains(stdout, "40 files from") {
		t.Errorf("stdout:\n%s", stdout)
	}

	t.Run("not a terminal", func(t *testing.T) {
		cmd := exec.Command(os.Args[0], "new", folder)
		cmd.Env = append(os.Environ(), "KULE_AS_CLI=1", "KULE_HOME="+home, "KULE_TEST_PROGRESS_FLOOR=1")
		out, err := cmd.CombinedOutput()
		if err != nil || strings.Contains(string(out), "copying") || strings.Contains(string(out), "\x1b[") {
			t.Errorf("kule new into a pipe: %v\n%q", err, out)
		}
	})
	t.Run("under the floor", func(t *testing.T) {
		shown, _ := newOnPTY(t, home, folder)
		if strings.Contains(shown, "copying") {
			t.Errorf("a bar for 40 small files:\n%q", shown)
		}
	})
}

// TestCommitAndUndoShowProgressOnATerminal: a commit draws the files and
// bytes it stages from the copy; an undo, whose checkpoint's sizes are not
// known ahead, the files it puts back. Into a pipe neither draws anything.
func TestCommitAndUndoShowProgressOnATerminal(t *testing.T) {
	dir := t.TempDir()
	folder := filepath.Join(dir, "folder")
	for i := range 40 {
		writeFile(t, filepath.Join(folder, fmt.Sprintf("f%02d.txt", i)), "before\n")
	}
	home := filepath.Join(dir, "home")
	_, _ = newOnPTY(t, home, folder)
	copies, _ := filepath.Glob(filepath.Join(home, "tasks", "*", "copy"))
	if len(copies) != 1 {
		t.Fatalf("the task's copy: %v", copies)
	}
	id := filepath.Base(filepath.Dir(copies[0]))
	for i := range 40 {
		writeFile(t, filepath.Join(copies[0], fmt.Sprintf("f%02d.txt", i)), strings.Repeat("after\n", 100))
	}
	shown, _ := onPTY(t, home, []string{"commit", id[:8], "--approve"}, "KULE_TEST_PROGRESS_FLOOR=1")
	if !strings.Contains(shown, "committing 40 of 40 files, 23.4 KiB of 23.4 KiB") || !strings.Contains(shown, "100%") {
		t.Errorf("the terminal showed no bar of the commit's 40 files:\n%q", shown)
	}
	if b, err := os.ReadFile(filepath.Join(folder, "f07.txt")); err != nil || !strings.HasPrefix(string(b), "after") {
		t.Fatalf("the commit did not reach the folder: %q, %v", b, err)
	}
	shown, _ = onPTY(t, home, []string{"undo", id[:8]}, "KULE_TEST_PROGRESS_FLOOR=1")
	if !strings.Contains(shown, "undoing 40 of 40 files, 0.3 KiB") || !strings.Contains(shown, "100%") {
		t.Errorf("the terminal showed no bar of the undo's 40 files:\n%q", shown)
	}
	if b, err := os.ReadFile(filepath.Join(folder, "f07.txt")); err != nil || string(b) != "before\n" {
		t.Fatalf("the undo did not put the folder back: %q, %v", b, err)
	}
}
