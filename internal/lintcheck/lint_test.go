package lintcheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// lint runs the tree's `make lint` on the given files and modules (paths from
// the repository's root) and returns its output and whether it passed.
func lint(t *testing.T, files, modules string) (string, bool) {
	t.Helper()
	for _, tool := range []string{"make", "gofmt", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is not installed: %v", tool, err)
			}
			t.Skipf("%s is not installed: %v", tool, err)
		}
	}
	cmd := exec.Command("make", "-s", "lint", "FMT_FILES="+files, "MODULES="+modules)
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.CombinedOutput()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("make lint did not run: %v\n%s", err, out)
		}
	}
	return string(out), err == nil
}

const (
	planted = "internal/lintcheck/testdata/planted"
	clean   = "internal/lintcheck/testdata/clean"
)

func TestLintPassesCleanCode(t *testing.T) {
	t.Parallel()
	if out, ok := lint(t, clean+"/clean.go", clean); !ok {
		t.Fatalf("make lint failed on clean code:\n%s", out)
	}
}

func TestLintFailsOnAFileGofmtWouldChange(t *testing.T) {
	t.Parallel()
	out, ok := lint(t, clean+"/clean.go "+planted+"/unformatted.go", "")
	if ok {
		t.Fatalf("make lint passed an unformatted file:\n%s", out)
	}
	if !strings.Contains(out, "not gofmt-formatted") || !strings.Contains(out, planted+"/unformatted.go") {
		t.Errorf("make lint's output does not name the unformatted file:\n%s", out)
	}
	if strings.Contains(out, "clean.go") {
		t.Errorf("make lint names a formatted file:\n%s", out)
	}
}

func TestLintFailsOnAStaticcheckFinding(t *testing.T) {
	t.Parallel()
	out, ok := lint(t, planted+"/same.go", planted)
	if ok {
		t.Fatalf("make lint passed staticcheck findings:\n%s", out)
	}
	for _, want := range []string{"same.go:7:", "SA4000", "same.go:11:", "SA4006"} {
		if !strings.Contains(out, want) {
			t.Errorf("make lint's output lacks %q:\n%s", want, out)
		}
	}
}
