package main

import (
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/kulehq/kule/kernel"
)

// goodDoctorEnv is a machine where every check passes: a planted /proc
// with user namespaces on, Landlock ABI 4, no helper beside the binary,
// node 20, npm, git 2.39, no agents and no daemon.
func goodDoctorEnv(t *testing.T) doctorEnv {
	t.Helper()
	dir := t.TempDir()
	proc := filepath.Join(dir, "proc")
	writeFile(t, filepath.Join(proc, "self", "ns", "user"), "")
	writeFile(t, filepath.Join(proc, "sys", "user", "max_user_namespaces"), "15000\n")
	writeFile(t, filepath.Join(proc, "sys", "kernel", "unprivileged_userns_clone"), "1\n")
	writeFile(t, filepath.Join(proc, "sys", "kernel", "apparmor_restrict_unprivileged_userns"), "0\n")
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	versions := map[string]string{"node": "v20.11.0", "npm": "10.2.4", "git": "git version 2.39.5"}
	writeFile(t, filepath.Join(bin, "kule-plugins"), "")
	if err := os.Chmod(filepath.Join(bin, "kule-plugins"), 0o755); err != nil {
		t.Fatal(err)
	}
	return doctorEnv{
		home: filepath.Join(dir, "home"), proc: proc, landlockABI: 4,
		exe: filepath.Join(bin, "kule"), plugins: filepath.Join(bin, "kule-plugins"),
		lookPath: func(name string) (string, error) {
			if _, ok := versions[name]; ok {
				return "/usr/bin/" + name, nil
			}
			return "", exec.ErrNotFound
		},
		output:   func(name string, _ ...string) string { return versions[filepath.Base(name)] },
		agents:   func() ([]kernel.AgentStatus, error) { return nil, nil },
		daemonUp: func() bool { return false },
	}
}

func findCheck(cs []doctorCheck, name string) (doctorCheck, bool) {
	for _, c := range cs {
		if c.Name == name {
			return c, true
		}
	}
	return doctorCheck{}, false
}

// TestDoctorPlantedFailures plants each failure kule doctor looks for in
// an otherwise good machine and checks that exactly that check says so,
// with a fix, and that the good machine has no failure at all (so no case
// passes because the check always fails).
func TestDoctorPlantedFailures(t *testing.T) {
	t.Run("good", func(t *testing.T) {
		for _, c := range doctorChecks(goodDoctorEnv(t)) {
			if c.Status == checkFail {
				t.Errorf("the good machine fails %s: %s", c.Name, c.Detail)
			}
		}
	})
	t.Run("a desktop window that starts", func(t *testing.T) {
		e := goodDoctorEnv(t)
		desk := filepath.Join(filepath.Dir(e.exe), "kule-desktop")
		writeFile(t, desk, "")
		out := e.output
		e.output = func(n string, a ...string) string {
			if n == desk {
				return "kule-desktop 0.4.0"
			}
			return out(n, a...)
		}
		if c, _ := findCheck(doctorChecks(e), "desktop window"); c.Status != checkOK || c.Detail != desk+", 0.4.0" {
			t.Errorf("desktop window: %+v", c)
		}
		if c, _ := findCheck(doctorChecks(goodDoctorEnv(t)), "desktop window"); c.Status != checkOK || !strings.Contains(c.Detail, "not installed") {
			t.Errorf("no desktop window: %+v", c)
		}
	})
	for _, tc := range []struct {
		name   string
		check  string
		status string
		want   string // in the detail
		plant  func(t *testing.T, e *doctorEnv)
	}{
		{"no user namespaces", "user namespaces", checkFail, "no user namespaces", func(t *testing.T, e *doctorEnv) {
			os.Remove(filepath.Join(e.proc, "self", "ns", "user"))
		}},
		{"max_user_namespaces 0", "user namespaces", checkFail, "max_user_namespaces is 0", func(t *testing.T, e *doctorEnv) {
			writeFile(t, filepath.Join(e.proc, "sys", "user", "max_user_namespaces"), "0\n")
		}},
		{"debian unprivileged_userns_clone", "user namespaces", checkFail, "unprivileged_userns_clone is 0", func(t *testing.T, e *doctorEnv) {
			writeFile(t, filepath.Join(e.proc, "sys", "kernel", "unprivileged_userns_clone"), "0\n")
		}},
		{"ubuntu apparmor sysctl", "user namespaces", checkFail, "AppArmor restricts", func(t *testing.T, e *doctorEnv) {
			writeFile(t, filepath.Join(e.proc, "sys", "kernel", "apparmor_restrict_unprivileged_userns"), "1\n")
		}},
		{"no landlock", "landlock", checkFail, "no Landlock", func(t *testing.T, e *doctorEnv) { e.landlockABI = 0 }},
		{"no kule-plugins", "built-in plugins", checkFail, "previews, chat transports and extensions cannot start", func(t *testing.T, e *doctorEnv) {
			os.Remove(e.plugins)
		}},
		{"kule-plugins not executable", "built-in plugins", checkFail, "not an executable", func(t *testing.T, e *doctorEnv) {
			os.Chmod(e.plugins, 0o644)
		}},
		{"landlock abi 1", "landlock", checkFail, "ABI 1 only", func(t *testing.T, e *doctorEnv) { e.landlockABI = 1 }},
		{"helper not executable", "sandbox helper", checkFail, "not an executable", func(t *testing.T, e *doctorEnv) {
			writeFile(t, filepath.Join(filepath.Dir(e.exe), kernel.SandboxHelperName), "#!/bin/sh\n")
		}},
		{"helper not a program", "sandbox helper", checkFail, "not a program", func(t *testing.T, e *doctorEnv) {
			h := filepath.Join(filepath.Dir(e.exe), kernel.SandboxHelperName)
			writeFile(t, h, "#!/bin/sh\n")
			if err := os.Chmod(h, 0o755); err != nil {
				t.Fatal(err)
			}
		}},
		{"helper linked dynamically", "sandbox helper", checkFail, "linked dynamically", func(t *testing.T, e *doctorEnv) {
			sh, err := exec.LookPath("sh")
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(sh)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(filepath.Dir(e.exe), kernel.SandboxHelperName), b, 0o755); err != nil {
				t.Fatal(err)
			}
		}},
		{"KULE_HOME not writable", "KULE_HOME", checkFail, "cannot make", func(t *testing.T, e *doctorEnv) {
			blocker := filepath.Join(t.TempDir(), "file")
			writeFile(t, blocker, "")
			e.home = filepath.Join(blocker, "home")
		}},
		{"key file gone", "secrets", checkFail, "which is gone", func(t *testing.T, e *doctorEnv) {
			writeFile(t, filepath.Join(e.home, "secrets", "sealing"), "key-file\n")
		}},
		{"key file readable by others", "secrets", checkFail, "readable by others", func(t *testing.T, e *doctorEnv) {
			writeFile(t, filepath.Join(e.home, "secrets", "sealing"), "key-file\n")
			writeFile(t, filepath.Join(e.home, "keys", "secrets.key"), strings.Repeat("k", 32))
		}},
		{"unknown sealing", "secrets", checkFail, "unknown sealing", func(t *testing.T, e *doctorEnv) {
			writeFile(t, filepath.Join(e.home, "secrets", "sealing"), "rot13\n")
		}},
		{"no node", "node", checkWarn, "not on PATH", func(t *testing.T, e *doctorEnv) {
			look := e.lookPath
			e.lookPath = func(n string) (string, error) {
				if n == "node" {
					return "", exec.ErrNotFound
				}
				return look(n)
			}
		}},
		{"old node", "node", checkWarn, "need node 18", func(t *testing.T, e *doctorEnv) {
			out := e.output
			e.output = func(n string, a ...string) string {
				if filepath.Base(n) == "node" {
					return "v16.20.0"
				}
				return out(n, a...)
			}
		}},
		{"no npm", "npm", checkWarn, "not on PATH", func(t *testing.T, e *doctorEnv) {
			look := e.lookPath
			e.lookPath = func(n string) (string, error) {
				if n == "npm" {
					return "", exec.ErrNotFound
				}
				return look(n)
			}
		}},
		{"agents file broken", "agents", checkFail, "agents.toml", func(t *testing.T, e *doctorEnv) {
			e.agents = func() ([]kernel.AgentStatus, error) {
				return nil, errors.New("agents: agents.toml line 3: expected '='")
			}
		}},
		{"agent cannot start", "agent planted", checkWarn, "needs node", func(t *testing.T, e *doctorEnv) {
			e.agents = func() ([]kernel.AgentStatus, error) {
				return []kernel.AgentStatus{{Profile: kernel.AgentProfile{Name: "planted"}, Approved: true, Missing: []string{"node"}}}, nil
			}
		}},
		{"agent not approved", "agent planted", checkWarn, "waits for approval", func(t *testing.T, e *doctorEnv) {
			e.agents = func() ([]kernel.AgentStatus, error) {
				return []kernel.AgentStatus{{Profile: kernel.AgentProfile{Name: "planted"}}}, nil
			}
		}},
		{"socket not a socket", "daemon", checkFail, "is not a socket", func(t *testing.T, e *doctorEnv) {
			writeFile(t, filepath.Join(e.home, "kuled.sock"), "")
		}},
		{"stale socket", "daemon", checkFail, "no daemon answers", func(t *testing.T, e *doctorEnv) {
			if err := os.MkdirAll(e.home, 0o700); err != nil {
				t.Fatal(err)
			}
			l, err := net.Listen("unix", filepath.Join(e.home, "kuled.sock"))
			if err != nil {
				t.Fatal(err)
			}
			l.(*net.UnixListener).SetUnlinkOnClose(false)
			l.Close()
		}},
		{"app address damaged", "app port", checkFail, "not a loopback address of Kule's own", func(t *testing.T, e *doctorEnv) {
			writeFile(t, filepath.Join(e.home, "app-address"), "127.0.0.1\n")
		}},
		{"a desktop window that does not start", "desktop window", checkWarn, "does not start", func(t *testing.T, e *doctorEnv) {
			writeFile(t, filepath.Join(filepath.Dir(e.exe), "kule-desktop"), "") // its output: "", as when the loader fails
		}},
		{"no git", "git", checkWarn, "not on PATH", func(t *testing.T, e *doctorEnv) {
			look := e.lookPath
			e.lookPath = func(n string) (string, error) {
				if n == "git" {
					return "", exec.ErrNotFound
				}
				return look(n)
			}
		}},
		{"old git", "git", checkWarn, "needs 2.30", func(t *testing.T, e *doctorEnv) {
			out := e.output
			e.output = func(n string, a ...string) string {
				if filepath.Base(n) == "git" {
					return "git version 2.20.1"
				}
				return out(n, a...)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := goodDoctorEnv(t)
			tc.plant(t, &e)
			cs := doctorChecks(e)
			c, ok := findCheck(cs, tc.check)
			if !ok {
				t.Fatalf("no %q check in %+v", tc.check, cs)
			}
			if c.Status != tc.status || !strings.Contains(c.Detail, tc.want) || c.Fix == "" {
				t.Fatalf("%s: got %s %q (fix %q), want %s with %q and a fix", tc.check, c.Status, c.Detail, c.Fix, tc.status, tc.want)
			}
			for _, o := range cs {
				if o.Name != tc.check && o.Status == checkFail {
					t.Errorf("planting %s also fails %s: %s", tc.name, o.Name, o.Detail)
				}
			}
		})
	}
}

// TestDoctorFullDisk: KULE_HOME on a 2 MiB tmpfs is said to be nearly
// full, and a folder bigger than its room cannot be copied there.
func TestDoctorFullDisk(t *testing.T) {
	if os.Getuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("needs root to mount a small tmpfs (CI runs as root)")
		}
		t.Skip("needs root to mount a small tmpfs")
	}
	e := goodDoctorEnv(t)
	mnt := filepath.Join(t.TempDir(), "small")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=2m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(mnt, unix.MNT_DETACH) })
	e.home = filepath.Join(mnt, "home")
	e.folder = t.TempDir()
	writeFile(t, filepath.Join(e.folder, "big.bin"), strings.Repeat("x", 3<<20))
	cs := doctorChecks(e)
	home, _ := findCheck(cs, "KULE_HOME")
	if home.Status != checkFail || !strings.Contains(home.Detail, "tmpfs") || !strings.Contains(home.Detail, "free") {
		t.Errorf("KULE_HOME on a 2 MiB tmpfs: %+v", home)
	}
	folder, _ := findCheck(cs, "folder")
	if folder.Status != checkFail || !strings.Contains(folder.Detail, "a copy takes 3 MiB") {
		t.Errorf("a 3 MiB folder for a 2 MiB KULE_HOME: %+v", folder)
	}
}

// TestDoctorCommand runs kule doctor as a person does: on this machine it
// exits 0 exactly when no check failed; with a planted failure (a key file
// others can read) it exits 4 and says which check and what to do, in
// text and in --json.
func TestDoctorCommand(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	c := cli{t: t, home: home}
	out, err := c.stdout("doctor", "--json")
	var rep struct {
		OK     bool          `json:"ok"`
		Checks []doctorCheck `json:"checks"`
	}
	if jerr := json.Unmarshal([]byte(out), &rep); jerr != nil {
		t.Fatalf("doctor --json: %v\n%s", jerr, out)
	}
	if rep.OK != (err == nil) || len(rep.Checks) < 10 {
		t.Fatalf("doctor --json says ok=%v with %d checks, exit %v", rep.OK, len(rep.Checks), err)
	}
	writeFile(t, filepath.Join(home, "secrets", "sealing"), "key-file\n")
	writeFile(t, filepath.Join(home, "keys", "secrets.key"), strings.Repeat("k", 32))
	out, err = c.stdout("doctor")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitCheckFailed {
		t.Fatalf("doctor with a key file others can read: %v, want exit %d\n%s", err, exitCheckFailed, out)
	}
	if !strings.Contains(out, "FAIL  secrets") || !strings.Contains(out, "fix: run `chmod 600") {
		t.Errorf("doctor's text does not name the failure and its fix:\n%s", out)
	}
}

// TestVersion: kule --version and kule version --json say the version,
// the commit and the Go version the binary was built with.
func TestVersion(t *testing.T) {
	c := cli{t: t, home: t.TempDir()}
	line := c.must("--version")
	if !strings.HasPrefix(line, "kule ") || !strings.Contains(line, "(commit ") || !strings.Contains(line, "go1.") {
		t.Errorf("kule --version: %q", line)
	}
	out, err := c.stdout("version", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var v versionInfo
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	if v.Version == "" || v.Commit == "" || !strings.HasPrefix(v.Go, "go1.") || v.Platform == "" {
		t.Errorf("kule version --json: %+v", v)
	}
	if !strings.Contains(line, v.Version) {
		t.Errorf("--version %q and version --json %q disagree", line, v.Version)
	}
}

// kule doctor FOLDER says which backend a task of the folder gets and
// why; a forced backend Kule does not have is a failure with its fix.
func TestDoctorSaysTheBackend(t *testing.T) {
	e := goodDoctorEnv(t)
	e.folder = t.TempDir()
	e.backendFor = func(string) (string, string) { return "copy", "plain copy: no reflinks" }
	c := checkBackend(e)
	if c.Status != checkOK || !strings.HasPrefix(c.Detail, "copy: plain copy: no reflinks; ") || !strings.Contains(c.Detail, "overlay") {
		t.Fatalf("backend line %+v", c)
	}
	e.backendFor = func(string) (string, string) { return "", `KULE_BACKEND="bogus" is not a workspace backend` }
	if c := checkBackend(e); c.Status != checkFail || !strings.Contains(c.Fix, "overlay") {
		t.Fatalf("a bad backend gives %+v", c)
	}
}

// kule doctor without a folder still checks a backend forced by
// KULE_BACKEND: a misspelt one makes every kule new fail, so doctor fails
// too and says what to do, while an unset one adds no line.
func TestDoctorChecksAForcedBackendWithoutAFolder(t *testing.T) {
	e := goodDoctorEnv(t)
	e.backendFor = func(string) (string, string) { return "", `KULE_BACKEND="bogus" is not a workspace backend` }
	if c, ok := findCheck(doctorChecks(e), "backend"); ok {
		t.Errorf("no backend forced and no folder, yet a backend line: %+v", c)
	}
	e.forcedBackend = "bogus"
	if c, ok := findCheck(doctorChecks(e), "backend"); !ok || c.Status != checkFail || c.Fix == "" {
		t.Errorf("KULE_BACKEND=bogus gives the backend line %+v (found %v), want a failure with its fix", c, ok)
	}

	cmd := exec.Command(os.Args[0], "doctor")
	cmd.Env = append(os.Environ(), "KULE_AS_CLI=1", "KULE_HOME="+filepath.Join(t.TempDir(), "home"), "KULE_BACKEND=bogus")
	out, err := cmd.Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitCheckFailed {
		t.Errorf("KULE_BACKEND=bogus kule doctor: %v, want exit %d\n%s", err, exitCheckFailed, out)
	}
	if !strings.Contains(string(out), "FAIL  backend") || !strings.Contains(string(out), `KULE_BACKEND="bogus"`) {
		t.Errorf("KULE_BACKEND=bogus kule doctor does not say so:\n%s", out)
	}
}
