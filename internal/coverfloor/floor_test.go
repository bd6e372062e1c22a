package main

import (
	"strings"
	"testing"
)

// sample is real `go test -cover` output: a measured package, a cached one,
// one without tests, one without statements, and a failing test's log.
const sample = "ok  \tgithub.com/kulehq/kule/kernel/internal/apply\t1.105s\tcoverage: 91.3% of statements\n" +
	"ok  \tgithub.com/kulehq/kule/kernel/effects\t(cached)\tcoverage: 88.0% of statements\n" +
	"\tgithub.com/kulehq/kule/kernel/relpath\t\tcoverage: 0.0% of statements\n" +
	"ok  \tgithub.com/kulehq/kule/sdk/kind\t0.01s\tcoverage: [no statements]\n" +
	"?   \tgithub.com/kulehq/kule/cmd/tool\t[no test files]\n" +
	"ok  \tgithub.com/kulehq/kule/kernel/internal/scan\t0.2s\tcoverage: 86.0% of statements\n" +
	"ok  \tgithub.com/kulehq/kule/kernel/task\t0.1s\tcoverage: 85.0% of statements\n" +
	"ok  \tgithub.com/kulehq/kule/kernel/internal/checkpoint\t2.1s\tcoverage: 90.0% of statements\n" +
	"ok  \tgithub.com/kulehq/kule/kernel/internal/gitstate\t19s\tcoverage: 87.5% of statements\n" +
	"--- FAIL: TestSomething (0.00s)\n" +
	"    x_test.go:12: coverage: 10.0% of statements\n" +
	"ok  \tgithub.com/kulehq/kule/plugins/task\t0.1s\tcoverage: 12.0% of statements\n"

func parse(t *testing.T, s string) *Report {
	t.Helper()
	rep, err := Parse(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestSampleMeetsTheFloors(t *testing.T) {
	t.Parallel()
	rep := parse(t, sample)
	if p := rep.Check(Floors); len(p) != 0 {
		t.Fatalf("Check = %q, want nothing", p)
	}
	if got := rep.Packages["github.com/kulehq/kule/kernel/internal/apply"].Percent; got != 91.3 {
		t.Errorf("apply = %v, want 91.3", got)
	}
	if _, ok := rep.Packages["x_test.go:12:"]; ok {
		t.Error("a test's log line was read as a package")
	}
}

func TestTableIsOneSortedLinePerPackage(t *testing.T) {
	t.Parallel()
	want := `   91.3%  github.com/kulehq/kule/kernel/internal/apply  (floor 85%)
   88.0%  github.com/kulehq/kule/kernel/effects  (floor 85%)
   90.0%  github.com/kulehq/kule/kernel/internal/checkpoint  (floor 85%)
`
	got := parse(t, sample).Table(Floors)
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 10 {
		t.Fatalf("table has %d lines, want 10:\n%s", len(lines), got)
	}
	for i := 1; i < len(lines); i++ {
		a, b := pathOf(lines[i-1]), pathOf(lines[i])
		if a >= b {
			t.Errorf("line %d (%s) is not after line %d (%s)", i+1, b, i, a)
		}
	}
	for _, w := range strings.Split(strings.TrimSuffix(want, "\n"), "\n") {
		if !strings.Contains(got, w+"\n") {
			t.Errorf("table lacks %q:\n%s", w, got)
		}
	}
	for _, w := range []string{"no tests  github.com/kulehq/kule/cmd/tool\n", "       -  github.com/kulehq/kule/sdk/kind\n", "   12.0%  github.com/kulehq/kule/plugins/task\n"} {
		if !strings.Contains(got, w) {
			t.Errorf("table lacks %q:\n%s", w, got)
		}
	}
}

// pathOf is the import path on one line of the table.
func pathOf(line string) string {
	for _, f := range strings.Fields(line) {
		if strings.Contains(f, "/") {
			return f
		}
	}
	return ""
}

func TestCheckFails(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		from, to string // a planted change to the sample
		want     string
	}{
		"a guarded package below its floor": {
			"kernel/task\t0.1s\tcoverage: 85.0%", "kernel/task\t0.1s\tcoverage: 84.9%",
			"github.com/kulehq/kule/kernel/task: coverage 84.9% is below its floor of 85%",
		},
		"a guarded package moved and below its floor": {
			"kernel/task\t0.1s\tcoverage: 85.0%", "kernel/internal/task\t0.1s\tcoverage: 40.0%",
			"github.com/kulehq/kule/kernel/internal/task: coverage 40.0% is below its floor of 85%",
		},
		"a guarded package without tests": {
			"ok  \tgithub.com/kulehq/kule/kernel/effects\t(cached)\tcoverage: 88.0% of statements",
			"\tgithub.com/kulehq/kule/kernel/effects\t\tcoverage: 0.0% of statements",
			"github.com/kulehq/kule/kernel/effects: coverage 0.0% is below its floor of 85%",
		},
		"a guarded package left out": {
			"ok  \tgithub.com/kulehq/kule/kernel/internal/gitstate\t19s\tcoverage: 87.5% of statements\n", "",
			`no package named "gitstate" under kernel/ was measured`,
		},
		"a failing package": {
			"ok  \tgithub.com/kulehq/kule/plugins/task\t0.1s\tcoverage: 12.0% of statements",
			"FAIL\tgithub.com/kulehq/kule/plugins/task\t0.1s",
			"github.com/kulehq/kule/plugins/task: tests failed",
		},
		"a guarded package that does not build": {
			"ok  \tgithub.com/kulehq/kule/kernel/internal/scan\t0.2s\tcoverage: 86.0% of statements",
			"FAIL\tgithub.com/kulehq/kule/kernel/internal/scan [build failed]",
			"github.com/kulehq/kule/kernel/internal/scan: tests failed",
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if !strings.Contains(sample, tc.from) {
				t.Fatalf("the sample lacks %q", tc.from)
			}
			rep := parse(t, strings.Replace(sample, tc.from, tc.to, 1))
			got := rep.Check(Floors)
			if len(got) != 1 || !strings.Contains(got[0], tc.want) {
				t.Fatalf("Check = %q, want one problem containing %q", got, tc.want)
			}
			if !strings.Contains(rep.Table(Floors), "BELOW") && !strings.Contains(tc.want, "measured") && !strings.Contains(tc.want, "plugins/") {
				t.Errorf("table does not mark the package BELOW:\n%s", rep.Table(Floors))
			}
		})
	}
}

func TestAFloorHoldsOnlyInsideKernel(t *testing.T) {
	t.Parallel()
	if _, ok := floorOf(Floors, "github.com/kulehq/kule/plugins/task"); ok {
		t.Error("plugins/task is held to a kernel floor")
	}
	if f, ok := floorOf(Floors, "github.com/kulehq/kule/kernel/internal/gitstate"); !ok || f != 85 {
		t.Errorf("kernel/internal/gitstate floor = %v, %v; want 85", f, ok)
	}
}

func TestParseRefusesANonPercentage(t *testing.T) {
	t.Parallel()
	_, err := Parse(strings.NewReader("ok  \tgithub.com/kulehq/kule/kernel/task\t0.1s\tcoverage: 185.0% of statements\n"))
	if err == nil || !strings.Contains(err.Error(), "kernel/task") {
		t.Fatalf("Parse = %v, want an error naming the package", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(sample)
	f.Add("ok  \tp\t0s\tcoverage: 1e400% of statements\n")
	f.Add("FAIL\t\n\t\tcoverage: [no statements]\n")
	f.Fuzz(func(t *testing.T, s string) {
		rep, err := Parse(strings.NewReader(s))
		if err != nil {
			return
		}
		for p, pk := range rep.Packages {
			if p == "" || pk.Path != p || pk.Percent < 0 || pk.Percent > 100 {
				t.Fatalf("package %q: %+v", p, pk)
			}
		}
		table := rep.Table(Floors)
		if n := strings.Count(table, "\n"); n != len(rep.Packages) {
			t.Fatalf("table has %d lines for %d packages", n, len(rep.Packages))
		}
		rep.Check(Floors)
	})
}
