package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/creack/pty"

	"github.com/kulehq/kule/kernel"
)

// A folder over the bounds that would get a plain copy is said with its
// cost; under them, or asked on a terminal and answered yes, it is not.
func TestCopyCostAsks(t *testing.T) {
	dir := t.TempDir()
	folder := filepath.Join(dir, "folder")
	for i := range 5 {
		writeFile(t, filepath.Join(folder, "f"+string(rune('a'+i))), strings.Repeat("x", 1000))
	}
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	hi, err := kernel.ProbeFileSystem(home, true)
	if err != nil {
		t.Fatal(err)
	}
	if hi.Reflinks {
		t.Skip("the temporary folder clones: no plain copy to warn of")
	}
	msg, err := copyCost(folder, home, 1<<30, 3)
	if err != nil || !strings.Contains(msg, "over 4 files") || !strings.Contains(msg, "plain copy") || !strings.Contains(msg, "free") {
		t.Errorf("5 files over a bound of 3: %q, %v", msg, err)
	}
	if msg, err := copyCost(folder, home, 1<<30, 100); err != nil || msg != "" {
		t.Errorf("5 files under a bound of 100: %q, %v", msg, err)
	}
	if msg, _ := copyCost(folder, home, 2000, 100); !strings.Contains(msg, "over") {
		t.Errorf("5000 bytes over a bound of 2000: %q", msg)
	}
	var out bytes.Buffer
	for in, want := range map[string]bool{"y\n": true, "YES\n": true, "\n": false, "n\n": false, "": false} {
		if got := confirm(strings.NewReader(in), &out, "Make it?"); got != want {
			t.Errorf("answer %q: %v", in, got)
		}
	}
}

// A folder over the bounds that would get a plain copy: kule new with no
// terminal to ask on refuses and names --yes; --yes makes it; on a
// terminal the answer decides, and a no says nothing was copied.
func TestCopyCostRefusesOrAsks(t *testing.T) {
	dir := t.TempDir()
	folder := filepath.Join(dir, "folder")
	for i := range 5 {
		writeFile(t, filepath.Join(folder, "f"+string(rune('a'+i))), "x\n")
	}
	home := filepath.Join(dir, "home")
	t.Setenv("KULE_HOME", home)
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if hi, err := kernel.ProbeFileSystem(home, true); err != nil {
		t.Fatal(err)
	} else if hi.Reflinks {
		t.Skip("the temporary folder clones: no plain copy to ask about")
	}
	var out bytes.Buffer
	err := askCopyCost(folder, false, strings.NewReader("y\n"), &out, 1<<30, 3)
	if err == nil || !strings.Contains(err.Error(), "kule new --yes") || !strings.Contains(err.Error(), "Nothing was copied") || out.Len() != 0 {
		t.Errorf("no terminal: %v, asked %q; want a refusal that names --yes, and no question", err, out.String())
	}
	if err := askCopyCost(folder, true, strings.NewReader(""), &out, 1<<30, 3); err != nil {
		t.Errorf("--yes: %v", err)
	}
	if err := askCopyCost(folder, false, strings.NewReader(""), &out, 1<<30, 100); err != nil {
		t.Errorf("under the bounds: %v", err)
	}
	for answer, made := range map[string]bool{"y\n": true, "n\n": false} {
		ptmx, tty, err := pty.Open()
		if err != nil {
			t.Skipf("no pty: %v", err)
		}
		if _, err := ptmx.Write([]byte(answer)); err != nil {
			t.Fatal(err)
		}
		out.Reset()
		err = askCopyCost(folder, false, tty, &out, 1<<30, 3)
		_ = tty.Close()
		_ = ptmx.Close()
		if !strings.Contains(out.String(), "gets a plain copy") || !strings.Contains(out.String(), "Make the task anyway? [y/N]") {
			t.Errorf("on a terminal, answered %q: asked %q", answer, out.String())
		}
		if made != (err == nil) || (!made && !strings.Contains(err.Error(), "nothing was copied")) {
			t.Errorf("on a terminal, answered %q: %v", answer, err)
		}
	}
}
