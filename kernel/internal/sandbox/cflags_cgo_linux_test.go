//go:build linux && cgo

package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The helper's C is built with warnings as errors and the hardening flags,
// named once in pid1_cgo_linux.go's #cgo CFLAGS (cgo builds every .c of the
// package with them). The test reads that line, compiles each of the
// helper's files with it, and shows the flags refuse planted faults, so
// that a flag taken away or ignored fails here.
func TestHelperCFlags(t *testing.T) {
	src, err := os.ReadFile("pid1_cgo_linux.go")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^#cgo CFLAGS: (.*)$`).FindSubmatch(src)
	if m == nil {
		t.Fatal("pid1_cgo_linux.go has no #cgo CFLAGS line")
	}
	flags := strings.Fields(string(m[1]))
	for _, want := range []string{"-Wall", "-Wextra", "-Werror", "-D_FORTIFY_SOURCE=2", "-fstack-protector-strong", "-fstack-clash-protection", "-fPIE"} {
		if !contains(flags, want) {
			t.Errorf("the helper's CFLAGS %q lack %s", flags, want)
		}
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "gcc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Fatalf("no C compiler (%s) for a cgo build: %v", cc, err)
	}
	obj := filepath.Join(t.TempDir(), "out.o")
	compile := func(file string, flags ...string) (string, error) {
		args := append([]string{"-O2", "-c", "-o", obj}, flags...)
		out, err := exec.Command(cc, append(args, file)...).CombinedOutput()
		return string(out), err
	}
	files, err := filepath.Glob("pid1*_linux.c")
	if err != nil || len(files) < 2 {
		t.Fatalf("the helper's C files: %v %v", files, err)
	}
	for _, f := range files {
		if out, err := compile(f, flags...); err != nil {
			t.Errorf("%s does not build with the helper's flags: %v\n%s", f, err, out)
		}
	}
	// The C library's checks (glibc's: musl has none) and the warnings.
	for file, want := range map[string]string{
		"testdata/cflags/planted_warning.c":  "-Werror=unused-variable",
		"testdata/cflags/planted_overflow.c": "__read_chk_warn",
	} {
		out, err := compile(file, flags...)
		if err == nil {
			t.Errorf("%s built with the helper's flags; they must refuse it", file)
		} else if !strings.Contains(out, want) {
			t.Errorf("%s was refused, but not for %s:\n%s", file, want, out)
		}
	}
	// The stack's canary: there with the flags, not without.
	for _, tc := range []struct {
		flags []string
		want  bool
	}{{flags, true}, {[]string{"-fno-stack-protector"}, false}} {
		if out, err := compile("testdata/cflags/stack_guarded.c", tc.flags...); err != nil {
			t.Fatalf("stack_guarded.c with %q: %v\n%s", tc.flags, err, out)
		}
		b, err := os.ReadFile(obj)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(b), "__stack_chk_fail"); got != tc.want {
			t.Errorf("stack_guarded.c built with %q calls __stack_chk_fail: %v, want %v", tc.flags, got, tc.want)
		}
	}
}

func contains(l []string, s string) bool {
	for _, v := range l {
		if v == s {
			return true
		}
	}
	return false
}
