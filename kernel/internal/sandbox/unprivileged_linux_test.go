//go:build linux

package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestUnprivileged runs the sandbox as the nobody user, the way a person
// without root runs kule: unprivileged user namespaces and Landlock only.
// The test binary re-runs itself as uid 65534 with KULE_UNPRIV_INNER set,
// and that run makes every attack of TestEscape and the terminal tests.
func TestUnprivileged(t *testing.T) {
	skipUnlessSandbox(t)
	if os.Getuid() != 0 {
		t.Skip("already unprivileged: the other tests cover this user")
	}
	root := testRoot(t)
	os.Chmod(root, 0o755)
	exe, _ := os.Executable()
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "sandbox.test")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(root, "work")
	os.Mkdir(work, 0o755)
	os.Chown(work, 65534, 65534)
	cmd := exec.Command(bin, "-test.run=^(TestUnprivilegedInner|TestEscape|TestWalls|TestSeccomp|TestKuleBundleWins|TestOwnTerminal|TestOwnTerminalCtrlC|TestNoTerminalWithoutOne)$", "-test.v")
	cmd.Env = []string{"KULE_TEST_ROOT=" + work, "KULE_UNPRIV_INNER=1", "PATH=/usr/bin:/bin", "HOME=" + work}
	cmd.Dir = work
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil || !strings.Contains(string(out), "--- PASS: TestUnprivilegedInner") {
		t.Fatalf("as nobody: %v", err)
	}
}

// TestUnprivilegedInner is TestUnprivileged's inside: it runs only there.
func TestUnprivilegedInner(t *testing.T) {
	if os.Getenv("KULE_UNPRIV_INNER") != "1" {
		t.Skip("runs only inside TestUnprivileged, as nobody")
	}
	if os.Getuid() == 0 {
		t.Fatal("inner run is root")
	}
	w := newWorld(t)
	r := w.run(t, w.sandbox(), runnerSpec("sh", "-c", "id -u; echo made > made.txt; cat made.txt"))
	if r.stdout != "65534\nmade\n" {
		t.Fatalf("stdout %q stderr %s", r.stdout, r.stderr)
	}
	var paths []string
	for _, c := range credentialFiles {
		paths = append(paths, filepath.Join(w.home, c))
	}
	assertHeld(t, w.attack(t, runnerSpec(), "read", append(paths, filepath.Join(w.other, "copy", "secret.txt"))...))
	assertHeld(t, w.attack(t, runnerSpec(), "write", filepath.Join(w.home, "notes.txt"), filepath.Join(w.folder, "main.go")))
	assertHeld(t, w.attack(t, runnerSpec(), "privileges"))
	assertHeld(t, w.attack(t, runnerSpec(), "mount", filepath.Join(w.home, ".ssh")))
	assertHeld(t, w.attack(t, runnerSpec(), "ptrace", "1"))
}
