// Package asnobody runs a test binary's own tests again as the nobody user
// (uid 65534), the way a person without root runs kule: a root test calls
// Rerun, and the tests it names run in a copy of the binary that nobody can
// execute, with a home and a TMPDIR nobody owns.
package asnobody

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Inner is the variable set in the run as nobody.
const Inner = "KULE_AS_NOBODY"

// Inside reports whether this is the run as nobody (and fails the test if
// that run is root after all).
func Inside(t *testing.T) bool {
	t.Helper()
	if os.Getenv(Inner) != "1" {
		return false
	}
	if os.Getuid() == 0 {
		t.Fatal("the run as nobody is root")
	}
	return true
}

// Rerun runs the tests named (exact names) as nobody, with env added to its
// environment, and fails t unless every one of them passes there. Not root:
// the test is skipped, as the tests already ran as this user.
func Rerun(t *testing.T, self string, names []string, env ...string) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("already unprivileged: the tests ran as this user")
	}
	root := t.TempDir()
	for _, d := range []string{filepath.Dir(root), root} { // t.TempDir makes both 0700
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, filepath.Base(exe))
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(root, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(work, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^("+self+"|"+strings.Join(names, "|")+")$", "-test.v")
	cmd.Env = append([]string{Inner + "=1", "TMPDIR=" + work, "HOME=" + work, "PATH=/usr/bin:/bin"}, env...)
	cmd.Dir = work
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil || strings.Contains(string(out), "--- FAIL") || strings.Contains(string(out), "--- SKIP") {
		t.Fatalf("as nobody: %v", err)
	}
	for _, name := range names {
		if !strings.Contains(string(out), "--- PASS: "+name+" ") {
			t.Errorf("as nobody, %s did not pass", name)
		}
	}
}
