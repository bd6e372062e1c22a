// Package packaging holds the tests of make dist: the release files are
// reproducible, and the .deb installs, runs and removes cleanly here.
package packaging

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// need skips (or fails on CI) when what the test needs is not here.
func need(t *testing.T, ok bool, why string) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatal(why + " (CI must have it: see .ci/run)")
	}
	t.Skip(why)
}

func have(tool string) bool { _, err := exec.LookPath(tool); return err == nil }

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// makeDist runs make dist into dir for arches ("" for the default, every
// architecture) and returns its files by name.
func makeDist(t *testing.T, dir, arches string) map[string][]byte {
	t.Helper()
	cmd := exec.Command("make", "dist", "DIST="+dir)
	cmd.Dir = repoRoot(t)
	if arches != "" {
		cmd.Env = append(os.Environ(), "ARCHES="+arches)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make dist: %v\n%s", err, out)
	}
	files := map[string][]byte{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = b
	}
	return files
}

// TestDist builds the release, and the amd64 part of it a second time to
// compare every byte of what both made; checks what each file holds; then
// installs the .debs on this machine, runs what they installed, and
// removes them. The test itself only shells out: the race detector adds
// nothing to it, and the second build of one architecture proves the
// build reproducible at half the cost of a second full one.
func TestDist(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the release twice: slow")
	}
	need(t, have("aarch64-linux-gnu-gcc"), "aarch64-linux-gnu-gcc is not installed: make dist cross-builds arm64")
	need(t, exec.Command("pkg-config", "--exists", "webkit2gtk-4.1").Run() == nil, "libwebkit2gtk-4.1-dev is not installed: make dist builds kule-desktop")
	tmp := t.TempDir()
	a := makeDist(t, filepath.Join(tmp, "a"), "")
	b := makeDist(t, filepath.Join(tmp, "b"), "amd64")
	var names []string
	for name := range a {
		names = append(names, name)
	}
	compared := 0
	for name, body := range b {
		if name == "SHA256SUMS" {
			continue
		}
		compared++
		if !bytes.Equal(body, a[name]) {
			t.Errorf("%s differs between two builds of one commit", name)
		}
	}
	if compared != 5 { // the .deb, .rpm and .tar.gz of kule, the .deb and .rpm of kule-desktop
		t.Errorf("the amd64 build made %d files, want 5: %v", compared, b)
	}
	sums := checkSums(t, a)
	rpmArch := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}
	for _, arch := range []string{"amd64", "arm64"} {
		var deb, rpm, tgz, ddeb, drpm string
		for _, n := range names {
			switch {
			case strings.HasPrefix(n, "kule_") && strings.HasSuffix(n, "_"+arch+".deb"):
				deb = n
			case strings.HasPrefix(n, "kule-desktop_") && strings.HasSuffix(n, "_"+arch+".deb"):
				ddeb = n
			case strings.HasPrefix(n, "kule-desktop-") && strings.HasSuffix(n, "."+rpmArch[arch]+".rpm"):
				drpm = n
			case strings.HasPrefix(n, "kule-") && strings.HasSuffix(n, "."+rpmArch[arch]+".rpm"):
				rpm = n
			case strings.HasSuffix(n, "-linux-"+arch+".tar.gz"):
				tgz = n
			}
		}
		if deb == "" || rpm == "" || tgz == "" {
			t.Fatalf("%s: a .deb, a .rpm and a .tar.gz, got %v", arch, names)
		}
		want := []string{deb, rpm, tgz}
		switch {
		case arch == "amd64" && (ddeb == "" || drpm == ""):
			t.Fatalf("amd64: the kule-desktop .deb and .rpm, got %v", names)
		case arch == "amd64":
			want = append(want, ddeb, drpm)
		case ddeb != "" || drpm != "":
			t.Errorf("%s: a kule-desktop package (%s %s), but it is built for this machine's architecture only", arch, ddeb, drpm)
		}
		for _, n := range want {
			if !sums[n] {
				t.Errorf("SHA256SUMS does not list %s", n)
			}
		}
		for _, n := range []string{rpm, drpm} {
			if n != "" && !bytes.HasPrefix(a[n], []byte{0xed, 0xab, 0xee, 0xdb}) {
				t.Errorf("%s is not an RPM file (its lead is %x)", n, a[n][:4])
			}
		}
		checkTarball(t, a[tgz], arch)
	}
	t.Run("install", func(t *testing.T) { installDeb(t, filepath.Join(tmp, "a"), names) })
}

// checkSums verifies SHA256SUMS against the files and returns the names
// it lists.
func checkSums(t *testing.T, files map[string][]byte) map[string]bool {
	t.Helper()
	listed := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(files["SHA256SUMS"]))
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q", sc.Text())
		}
		got := sha256.Sum256(files[name])
		if hex.EncodeToString(got[:]) != sum {
			t.Errorf("SHA256SUMS: %s does not match", name)
		}
		listed[name] = true
	}
	if len(listed) != len(files)-1 {
		t.Errorf("SHA256SUMS lists %d files of %d", len(listed), len(files)-1)
	}
	return listed
}

// checkTarball: the tar.gz holds kule-VERSION-linux-ARCH/ with kule and
// kule-plugins (which serves its built-in plugins), executables for arch,
// owned by root, every time the commit's.
func checkTarball(t *testing.T, body []byte, arch string) {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var entries []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, h.Name)
		if h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s is owned by %d:%d", h.Name, h.Uid, h.Gid)
		}
		if b := filepath.Base(h.Name); (b != "kule" && b != "kule-plugins") || h.Typeflag != tar.TypeReg {
			continue
		}
		if h.Mode&0o111 == 0 {
			t.Errorf("%s is not executable: %o", h.Name, h.Mode)
		}
		bin, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		f, err := elf.NewFile(bytes.NewReader(bin))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]
		if f.Machine != want {
			t.Errorf("the %s tarball's %s is for %v", arch, filepath.Base(h.Name), f.Machine)
		}
	}
	if len(entries) != 3 || !strings.HasSuffix(entries[1], "-linux-"+arch+"/kule") || !strings.HasSuffix(entries[2], "-linux-"+arch+"/kule-plugins") {
		t.Errorf("the %s tarball holds %v, want its folder, kule and kule-plugins", arch, entries)
	}
}

// dpkg runs dpkg, waiting while another dpkg or apt holds its lock.
func dpkg(t *testing.T, args ...string) string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		out, err := exec.Command("dpkg", args...).CombinedOutput()
		if err == nil {
			return string(out)
		}
		if !strings.Contains(string(out), "lock") || time.Now().After(deadline) {
			t.Fatalf("dpkg %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		time.Sleep(time.Second) // another package manager holds the lock
	}
}

// installDeb installs the amd64 .debs of kule and kule-desktop with dpkg
// -i, runs kule --version and kule doctor from /usr/bin, checks the
// desktop's launcher, starts the daemon as the systemd user unit's
// ExecStart says and sees it answer, then dpkg -r and checks that nothing
// they installed is left, while the person's KULE_HOME is.
func installDeb(t *testing.T, dir string, names []string) {
	need(t, os.Getuid() == 0, "dpkg -i needs root")
	need(t, have("dpkg"), "no dpkg: not a Debian system")
	var deb, ddeb string
	for _, n := range names {
		switch {
		case strings.HasPrefix(n, "kule_") && strings.HasSuffix(n, "_amd64.deb"):
			deb = filepath.Join(dir, n)
		case strings.HasPrefix(n, "kule-desktop_") && strings.HasSuffix(n, "_amd64.deb"):
			ddeb = filepath.Join(dir, n)
		}
	}
	if deb == "" || ddeb == "" {
		t.Fatal("no amd64 .deb of kule and of kule-desktop")
	}
	for _, pkg := range []string{"kule", "kule-desktop"} {
		if out, err := exec.Command("dpkg-query", "-W", "-f=${Status}", pkg).CombinedOutput(); err == nil && strings.Contains(string(out), "installed") && !strings.Contains(string(out), "not-installed") {
			t.Fatalf("a %s package is installed here already (%s): the test would remove it; dpkg -r %s first", pkg, out, pkg)
		}
	}
	dpkg(t, "-i", deb, ddeb)
	removed := false
	t.Cleanup(func() {
		if !removed {
			_, _ = exec.Command("dpkg", "-r", "kule-desktop", "kule").CombinedOutput()
		}
	})
	files := strings.Fields(dpkg(t, "-L", "kule"))
	dfiles := strings.Fields(dpkg(t, "-L", "kule-desktop"))
	for _, want := range []string{"/usr/bin/kule", "/usr/bin/kule-plugins", "/usr/bin/kule-sandbox", "/usr/lib/systemd/user/kule.service",
		"/usr/share/bash-completion/completions/kule", "/usr/share/zsh/vendor-completions/_kule",
		"/usr/share/fish/vendor_completions.d/kule.fish", "/usr/share/man/man1/kule.1.gz", "/usr/share/man/man1/kule-doctor.1.gz"} {
		if !contains(files, want) {
			t.Errorf("the package does not install %s", want)
		}
	}
	for _, want := range []string{"/usr/bin/kule-desktop", "/usr/share/applications/kule.desktop", "/usr/share/icons/hicolor/scalable/apps/kule.svg"} {
		if !contains(dfiles, want) {
			t.Errorf("the desktop package does not install %s", want)
		}
	}
	files = append(files, dfiles...)
	if out, err := exec.Command("/usr/bin/kule-desktop", "--version").CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "kule-desktop 0") {
		t.Errorf("kule-desktop --version: %v\n%s", err, out)
	}
	launcher, err := os.ReadFile("/usr/share/applications/kule.desktop")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"[Desktop Entry]", "Type=Application", "Exec=kule-desktop", "Icon=kule", "Terminal=false"} {
		if !strings.Contains(string(launcher), "\n"+l+"\n") && !strings.HasPrefix(string(launcher), l+"\n") {
			t.Errorf("the launcher has no line %q:\n%s", l, launcher)
		}
	}
	if have("desktop-file-validate") {
		if out, err := exec.Command("desktop-file-validate", "/usr/share/applications/kule.desktop").CombinedOutput(); err != nil {
			t.Errorf("desktop-file-validate: %v\n%s", err, out)
		}
	}

	home := filepath.Join(t.TempDir(), "person")
	kuleHome := filepath.Join(home, ".kule")
	env := append(os.Environ(), "HOME="+home, "KULE_HOME="+kuleHome)
	run := func(args ...string) (string, error) {
		cmd := exec.Command("/usr/bin/kule", args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run("--version"); err != nil || !strings.HasPrefix(out, "kule ") || !strings.Contains(out, "commit ") || !strings.Contains(out, ", go1.") {
		t.Errorf("kule --version: %v\n%s", err, out)
	}
	// The release is built with the VCS stamp off: the version and commit
	// it says are the ones make dist linked in, never "dev" or "unknown".
	if out, err := run("version", "--json"); err != nil {
		t.Errorf("kule version --json: %v\n%s", err, out)
	} else {
		var v struct{ Version, Commit, Go string }
		head, _ := exec.Command("git", "-C", repoRoot(t), "rev-parse", "HEAD").Output()
		if err := json.Unmarshal([]byte(out), &v); err != nil || v.Version == "dev" || !strings.HasPrefix(v.Go, "go1.") || v.Commit != strings.TrimSpace(string(head)) {
			t.Errorf("kule version --json from the package: %v\n%s", err, out)
		}
	}
	out, err := run("doctor")
	var ee *exec.ExitError
	if (err != nil && (!errors.As(err, &ee) || ee.ExitCode() != 4)) || !strings.Contains(out, "sandbox helper") || !strings.Contains(out, "/usr/bin/kule-sandbox, static") {
		t.Errorf("kule doctor from the package: %v\n%s", err, out)
	}

	// The user unit: its ExecStart is run as systemd --user would run it,
	// and the daemon it starts answers on the person's socket.
	unit, err := os.ReadFile("/usr/lib/systemd/user/kule.service")
	if err != nil {
		t.Fatal(err)
	}
	var execStart []string
	for _, l := range strings.Split(string(unit), "\n") {
		if v, ok := strings.CutPrefix(l, "ExecStart="); ok {
			execStart = strings.Fields(v)
		}
	}
	if len(execStart) == 0 || execStart[0] != "/usr/bin/kule" || !strings.Contains(string(unit), "WantedBy=default.target") {
		t.Fatalf("the user unit:\n%s", unit)
	}
	if have("systemd-analyze") {
		if out, err := exec.Command("systemd-analyze", "verify", "/usr/lib/systemd/user/kule.service").CombinedOutput(); err != nil {
			t.Errorf("systemd-analyze verify: %v\n%s", err, out)
		}
	}
	d := exec.Command(execStart[0], execStart[1:]...)
	d.Env = env
	var dout bytes.Buffer
	d.Stdout, d.Stderr = &dout, &dout
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	answered := false
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && !answered; {
		out, _ := run("doctor", "--json")
		var rep struct {
			Checks []struct{ Name, Detail string }
		}
		if json.Unmarshal([]byte(out), &rep) == nil {
			for _, c := range rep.Checks {
				answered = answered || (c.Name == "daemon" && strings.HasPrefix(c.Detail, "running"))
			}
		}
		if !answered {
			time.Sleep(200 * time.Millisecond) // polls the daemon's start; the deadline only ends a broken run
		}
	}
	_ = d.Process.Signal(syscall.SIGTERM)
	_ = d.Wait()
	if !answered {
		t.Errorf("the daemon the user unit starts did not answer within 30s:\n%s", dout.String())
	}

	dpkg(t, "-r", "kule-desktop", "kule")
	removed = true
	for _, f := range files {
		fi, err := os.Lstat(f)
		if err == nil && !fi.IsDir() {
			t.Errorf("dpkg -r left %s", f)
		}
	}
	for _, pkg := range []string{"kule", "kule-desktop"} {
		if out, _ := exec.Command("dpkg-query", "-W", "-f=${Status}", pkg).CombinedOutput(); strings.Contains(string(out), " installed") {
			t.Errorf("%s is still installed after dpkg -r: %s", pkg, out)
		}
	}
	if _, err := os.Stat(kuleHome); err != nil {
		t.Errorf("dpkg -r took the person's KULE_HOME: %v", err)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
