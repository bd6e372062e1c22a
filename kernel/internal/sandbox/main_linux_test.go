//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kulehq/kule/kernel/internal/overlay"
	"github.com/kulehq/kule/kernel/internal/runner"
)

// The test binary is its own sandbox helper (the C of pid1_linux.c runs
// before this main when started as one) and its own attacker inside the
// sandbox (KULE_ATTACK=name), so the tests need neither the kule binary nor
// tools that may be missing.
func TestMain(m *testing.M) {
	if j := os.Getenv("KULE_PTY_HOST"); j != "" {
		os.Exit(ptyHostMain(j))
	}
	if a := os.Getenv("KULE_ATTACK"); a != "" {
		os.Exit(runAttack(a, os.Args[1:]))
	}
	code := m.Run()
	if attackerDir != "" {
		os.RemoveAll(attackerDir)
	}
	os.Exit(code)
}

var (
	attackerOnce sync.Once
	attackerDir  string
	attackerPath string
	attackerErr  error
)

// attackerBinary is one copy of this test binary outside /tmp (which the
// sandbox replaces) for every test of the run.
func attackerBinary(t testing.TB) string {
	attackerOnce.Do(func() {
		base := os.Getenv("KULE_TEST_ROOT")
		if base == "" {
			base = "/var/tmp"
		}
		exe, err := os.Executable()
		if err != nil {
			attackerErr = err
			return
		}
		b, err := os.ReadFile(exe)
		if err != nil {
			attackerErr = err
			return
		}
		if attackerDir, err = os.MkdirTemp(base, "kule-sandbox-attacker-"); err != nil {
			attackerErr = err
			return
		}
		os.Chmod(attackerDir, 0o755)
		attackerPath = filepath.Join(attackerDir, "attacker")
		attackerErr = os.WriteFile(attackerPath, b, 0o755)
	})
	if attackerErr != nil {
		t.Fatal(attackerErr)
	}
	return attackerPath
}

const marker = "KULE-SECRET-MARKER-7f3a"

// world is a person's machine in miniature: a home with credentials and
// personal folders, a workspace beside other projects, Kule's home with this
// task and another one.
type world struct {
	root, home, folder, sibling, shared, kule, other string
	task                                             runner.Task
	attacker                                         string
	env                                              []string
}

func skipUnlessSandbox(t *testing.T) {
	t.Helper()
	if m := Probe().Missing(); len(m) > 0 {
		if os.Getenv("CI") != "" {
			t.Fatalf("sandbox unavailable on CI: %v", m)
		}
		t.Skipf("sandbox unavailable here: %v", m)
	}
}

func testRoot(t testing.TB) string {
	t.Helper()
	// Not under /tmp: the sandbox replaces /tmp with the task's own.
	base := os.Getenv("KULE_TEST_ROOT")
	if base == "" {
		base = "/var/tmp"
	}
	d, err := os.MkdirTemp(base, "kule-sandbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

var credentialFiles = []string{
	".ssh/id_ed25519", ".aws/credentials", ".gnupg/private-keys-v1.d/key",
	".npmrc", ".netrc", ".git-credentials", ".config/gh/hosts.yml",
	".docker/config.json", ".kube/config", ".pypirc", ".cargo/credentials.toml",
	".config/gcloud/credentials.db", ".azure/accessTokens.json",
	"Documents/diary.txt", "Downloads/statement.pdf", "Pictures/me.jpg",
}

func newWorld(t *testing.T) *world { return newWorldB(t) }

func newWorldB(t testing.TB) *world { return newWorldAt(t, testRoot(t)) }

func newWorldAt(t testing.TB, r string) *world {
	t.Helper()
	w := &world{
		root:    r,
		home:    filepath.Join(r, "home"),
		kule:    filepath.Join(r, "home", ".kule"),
		folder:  filepath.Join(r, "home", "code", "proj"),
		sibling: filepath.Join(r, "home", "code", "other"),
		shared:  filepath.Join(r, "home", "code", "shared"),
	}
	for _, c := range credentialFiles {
		write(t, filepath.Join(w.home, c), marker+" "+c)
	}
	write(t, filepath.Join(w.home, "notes.txt"), "visible but read-only")
	write(t, filepath.Join(w.folder, "main.go"), "package main // the real folder "+marker)
	write(t, filepath.Join(w.folder, ".git", "HEAD"), "ref: refs/heads/main\n")
	write(t, filepath.Join(w.sibling, "secret.txt"), marker+" sibling")
	write(t, filepath.Join(w.shared, "lib.go"), "package shared // revealed")
	dir := filepath.Join(w.kule, "tasks", "0badc0de")
	w.task = runner.Task{
		ID: "0badc0de", Dir: dir, Copy: filepath.Join(dir, "copy"), Folder: w.folder,
		Tmp: filepath.Join(dir, "tmp"), Home: filepath.Join(dir, "home"), KuleDir: w.kule,
	}
	write(t, filepath.Join(w.task.Copy, "main.go"), "package main // the copy")
	if os.Getenv("KULE_TEST_BACKEND") == "overlay" { // every test, the escapes too, over an overlay copy
		w.task.Upper, w.task.Work = filepath.Join(dir, "overlay", "upper"), filepath.Join(dir, "overlay", "work")
		for _, d := range []string{w.task.Upper, w.task.Work} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				t.Fatal(err)
			}
		}
	}
	w.other = filepath.Join(w.kule, "tasks", "feedface")
	write(t, filepath.Join(w.other, "copy", "secret.txt"), marker+" other task")
	write(t, filepath.Join(w.kule, "keys", "history.key"), marker+" key")
	for _, d := range []string{w.task.Tmp, w.task.Home} {
		os.MkdirAll(d, 0o700)
	}
	w.attacker = attackerBinary(t)
	w.env = []string{"HOME=" + w.home, "PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C"}
	return w
}

// landed is where a write of the running command to rel in its copy shows
// from outside: the copy itself, or the overlay's upper layer until the
// command ends and the layer is folded.
func (w *world) landed(rel string) string {
	if w.task.Upper != "" {
		return filepath.Join(w.task.Upper, rel)
	}
	return filepath.Join(w.task.Copy, rel)
}

// fold folds the overlay's upper layer into the copy, as Kule does after a
// command; without an overlay there is nothing to fold.
func (w *world) fold(t *testing.T) {
	t.Helper()
	if w.task.Upper == "" {
		return
	}
	if _, err := overlay.Fold(w.task.Upper, w.task.Copy); err != nil {
		t.Fatalf("fold the overlay: %v", err)
	}
}

func (w *world) sandbox() *Sandbox {
	exe, _ := os.Executable()
	return &Sandbox{
		Exe:     exe,
		Home:    w.home,
		HostEnv: append([]string{"XDG_RUNTIME_DIR=" + filepath.Join(w.root, "run", "user", "1000")}, w.env...),
	}
}

type result struct {
	code           int
	stdout, stderr string
}

func (w *world) run(t *testing.T, s *Sandbox, spec runner.Spec) result {
	t.Helper()
	var out, errb bytes.Buffer
	spec.Task = w.task
	if spec.Env == nil {
		spec.Env = w.env
	}
	if spec.Stdout == nil {
		spec.Stdout = &out
	}
	if spec.Stderr == nil {
		spec.Stderr = &errb
	}
	if spec.Dir == "" {
		spec.Dir = w.task.Copy
	}
	code, err := s.Run(context.Background(), spec)
	if err != nil {
		t.Fatalf("run %q: %v (stderr: %s)", spec.Args, err, errb.String())
	}
	if spec.Task.Upper != "" { // as Kule does after every command over an overlay
		if _, err := overlay.Fold(spec.Task.Upper, spec.Task.Copy); err != nil {
			t.Fatalf("fold the overlay after %q: %v", spec.Args, err)
		}
	}
	return result{code, out.String(), errb.String()}
}

// attack runs the named attack inside the sandbox; the attack prints
// "ESCAPED: ..." when it got through and "held: ..." for each refusal.
func (w *world) attack(t *testing.T, spec runner.Spec, name string, args ...string) result {
	t.Helper()
	spec.Args = append([]string{w.attacker}, args...)
	env := spec.Env
	if env == nil {
		env = w.env
	}
	spec.Env = append(append([]string(nil), env...), "KULE_ATTACK="+name)
	return w.run(t, w.sandbox(), spec)
}

func assertHeld(t *testing.T, r result) {
	t.Helper()
	t.Log(r.stdout)
	if strings.Contains(r.stdout, "ESCAPED") || strings.Contains(r.stdout, marker) || strings.Contains(r.stderr, marker) {
		t.Fatalf("escape:\n%s\nstderr: %s", r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "held") {
		t.Fatalf("the attack did not run (exit %d):\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}

func TestRunsInCopy(t *testing.T) {
	skipUnlessSandbox(t)
	w := newWorld(t)
	r := w.run(t, w.sandbox(), runner.Spec{Args: []string{"sh", "-c", "pwd; cat main.go; echo made > new.txt; echo t > /tmp/t; echo $TMPDIR; exit 7"}})
	if r.code != 7 {
		t.Fatalf("exit code %d, want 7; stderr %s", r.code, r.stderr)
	}
	want := w.task.Copy + "\npackage main // the copy/tmp\n"
	if got := strings.ReplaceAll(r.stdout, "\n/tmp", "/tmp"); got != want {
		t.Fatalf("stdout %q, want %q", r.stdout, want)
	}
	if b, _ := os.ReadFile(filepath.Join(w.task.Copy, "new.txt")); string(b) != "made\n" {
		t.Fatalf("copy not written: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(w.task.Tmp, "t")); string(b) != "t\n" {
		t.Fatalf("task tmp not written at /tmp: %q", b)
	}
	fmt.Fprint(os.Stderr)
}

func runnerSpec(args ...string) runner.Spec { return runner.Spec{Args: args} }

// staticHelper is the Makefile's HELPER_FLAGS: the helper linked
// statically, so that no loader runs before its C.
var staticHelper = []string{"-tags", "netgo,osusergo", "-ldflags", "-linkmode=external -extldflags=-static"}

// buildHelper builds cmd/kule-sandbox with flags, and env added to the
// build's environment, and returns its path.
func buildHelper(tb testing.TB, flags []string, env ...string) string {
	tb.Helper()
	out := filepath.Join(tb.TempDir(), HelperName)
	build := exec.Command("go", append(append([]string{"build"}, flags...), "-o", out, "github.com/kulehq/kule/cmd/kule-sandbox")...)
	build.Env = append(os.Environ(), env...)
	if msg, err := build.CombinedOutput(); err != nil {
		tb.Fatalf("build the helper (%v): %v\n%s", env, err, msg)
	}
	return out
}

// waitForFile waits for a file a command in the sandbox makes to say where
// it is, true once it is there; the bound of a minute only ends a broken run.
func waitForFile(path string) bool {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return true
		}
	}
	return false
}
