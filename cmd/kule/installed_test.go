package main

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestInstalledBinaries builds kule, kule-plugins and kule-sandbox side by
// side, as `make install` puts them, and runs the main job with them:
// commands run under the small helper as the sandbox's PID 1, and the
// differs and previewers (which kule-plugins serves, not that helper) still
// name what changed and lay a file out; without kule-plugins a preview says
// what is missing.
// The other CLI tests run the test binary as kule, without the helper beside
// it, so they cannot see how the two binaries meet.
func TestInstalledBinaries(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries (-short skips the slow end-to-end runs)")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	bin := t.TempDir()
	// As `make install` builds them: kule-sandbox with the Makefile's
	// HELPER_FLAGS, linked statically so that no loader runs before its C.
	static := []string{"-tags", "netgo,osusergo", "-ldflags", "-linkmode=external -extldflags=-static"}
	for _, b := range []struct {
		pkg, out string
		flags    []string
	}{{".", "kule", nil}, {"../kule-plugins", "kule-plugins", nil}, {"../kule-sandbox", "kule-sandbox", static}} {
		cmd := exec.Command(goTool, append(append([]string{"build"}, b.flags...), "-o", filepath.Join(bin, b.out), b.pkg)...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1") // the sandbox's helper is C in both
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", b.pkg, err, out)
		}
	}
	if f, err := elf.Open(filepath.Join(bin, "kule-sandbox")); err != nil {
		t.Fatal(err)
	} else {
		defer f.Close()
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Fatal("kule-sandbox is not static: it names a loader")
			}
		}
	}
	home, folder := t.TempDir(), t.TempDir()
	must(t, os.WriteFile(filepath.Join(folder, "notes.md"), []byte("# Plan\nhello\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(folder, "a.go"), []byte("package a\n\nfunc A() {}\n"), 0o644))
	try := func(args ...string) (string, error) {
		cmd := exec.Command(filepath.Join(bin, "kule"), args...)
		cmd.Env = append(os.Environ(), "KULE_HOME="+home)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	kule := func(args ...string) string {
		t.Helper()
		out, err := try(args...)
		if err != nil {
			t.Fatalf("kule %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	kule("new", folder)
	ids, err := os.ReadDir(filepath.Join(home, "tasks"))
	if err != nil || len(ids) != 1 {
		t.Fatalf("tasks: %v %v", ids, err)
	}
	id := ids[0].Name()
	out := kule("exec", id, "--", "sh", "-c", `tr '\0' ' ' < /proc/1/cmdline; echo; echo more >> notes.md; printf 'func B() {}\n' >> a.go`)
	if !strings.Contains(out, "kule-sandbox __sandbox") {
		t.Errorf("the sandbox's PID 1 is not the small helper:\n%s", out)
	}
	out = kule("status", id)
	for _, want := range []string{"+ func B", "section Plan"} {
		if !strings.Contains(out, want) {
			t.Errorf("status does not name %q (the differs did not start?):\n%s", want, out)
		}
	}
	if out := kule("preview", id, "notes.md"); !strings.Contains(out, "Plan") || !strings.Contains(out, "more") {
		t.Errorf("the Markdown previewer did not lay out notes.md:\n%s", out)
	}
	must(t, os.Remove(filepath.Join(bin, "kule-plugins")))
	if out, err := try("preview", id, "notes.md"); err == nil || !strings.Contains(out, "kule-plugins") {
		t.Errorf("without kule-plugins, a preview should fail and name it: %v\n%s", err, out)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
