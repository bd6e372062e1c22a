//go:build linux

package beneath

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestAsNobody runs the attack tests again as the nobody user, as a person
// without root runs kule: no capability lets a lookup pass a link or a
// permission check differ. The test binary re-runs itself as uid 65534.
func TestAsNobody(t *testing.T) {
	if os.Getenv("KULE_BENEATH_NOBODY") == "1" {
		if os.Getuid() == 0 {
			t.Fatal("the inner run is root")
		}
		return
	}
	if os.Getuid() != 0 {
		if os.Getenv("CI") != "" {
			return // already unprivileged: the other tests are this user's
		}
		t.Skip("already unprivileged: the other tests cover this user")
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
	bin := filepath.Join(root, "beneath.test")
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
	cmd := exec.Command(bin, "-test.run=^(TestAsNobody|TestEveryCallRefusesALinkOnTheWay|TestWithTheGuardOffTheAttackLands|TestCallsWorkBeneathTheRoot|TestARootThatIsALinkIsRefused)$", "-test.v")
	cmd.Env = []string{"KULE_BENEATH_NOBODY=1", "TMPDIR=" + work, "HOME=" + work, "PATH=/usr/bin:/bin"}
	cmd.Dir = work
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil || strings.Contains(string(out), "--- FAIL") {
		t.Fatalf("as nobody: %v", err)
	}
	for _, name := range []string{"TestEveryCallRefusesALinkOnTheWay", "TestWithTheGuardOffTheAttackLands", "TestCallsWorkBeneathTheRoot", "TestARootThatIsALinkIsRefused"} {
		if !strings.Contains(string(out), "--- PASS: "+name+" ") {
			t.Errorf("as nobody, %s did not pass", name)
		}
	}
}
