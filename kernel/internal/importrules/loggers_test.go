package importrules

import (
	"fmt"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
)

// Kule logs through one logger, hclog (go-plugin's, which hands it every
// plugin's lines). No package imports another: not log/slog, not the
// standard log.
var otherLoggers = []string{"log/slog", "log"}

type imports struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

// loggerViolations lists each package that imports another logger.
func loggerViolations(pkgs []imports) []string {
	var out []string
	for _, p := range pkgs {
		for _, imp := range slices.Concat(p.Imports, p.TestImports, p.XTestImports) {
			if slices.Contains(otherLoggers, imp) {
				out = append(out, fmt.Sprintf("%s imports %s (Kule logs with hclog only)", p.ImportPath, imp))
			}
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

func TestOneLogger(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatal("go is not on PATH")
	}
	pkgs := goList[imports](t, "ImportPath,Imports,TestImports,XTestImports")
	hclog := 0
	for _, p := range pkgs {
		if slices.Contains(slices.Concat(p.Imports, p.TestImports, p.XTestImports), "github.com/hashicorp/go-hclog") {
			hclog++
		}
	}
	if hclog == 0 {
		t.Fatal("go list found no package importing hclog: the check would look at nothing")
	}
	for _, v := range loggerViolations(pkgs) {
		t.Error(v)
	}
}

// TestLoggerRuleCanFail: a made-up package on slog, one on the standard
// log in its tests, and one on hclog; only the first two are caught.
func TestLoggerRuleCanFail(t *testing.T) {
	got := loggerViolations([]imports{
		{ImportPath: module + "/kernel/review", Imports: []string{"fmt", "log/slog"}},
		{ImportPath: module + "/sdk/plugin", TestImports: []string{"log"}},
		{ImportPath: module + "/kernel/pluginhost", Imports: []string{"github.com/hashicorp/go-hclog"}},
	})
	if len(got) != 2 || !strings.Contains(got[0], "kernel/review") || !strings.Contains(got[1], "sdk/plugin") {
		t.Fatalf("violations:\n%s\nwant kernel/review and sdk/plugin", strings.Join(got, "\n"))
	}
}
