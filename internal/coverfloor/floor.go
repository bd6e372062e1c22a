package main

import (
	"bufio"
	"fmt"
	"io"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Floors is the least coverage, in percent of statements, of each package
// that guards the person's folder, keyed by the last element of its import
// path.
var Floors = map[string]float64{
	"apply":      85,
	"effects":    85,
	"scan":       85,
	"task":       85,
	"checkpoint": 85,
	"gitstate":   85,
}

// guardedRoot is the part of the tree whose packages the floors name: a
// package elsewhere that happens to be called "task" is not held to them.
const guardedRoot = "/kernel/"

// Package is one package's line of `go test -cover`.
type Package struct {
	Path     string
	Percent  float64 // of statements; 0 when the package has no tests
	NoStmts  bool    // "coverage: [no statements]"
	NoTests  bool    // no test files at all
	Failed   bool    // its tests failed or did not build
	Measured bool    // a coverage figure was printed
}

// Report is every package of one `go test -cover` run.
type Report struct {
	Packages map[string]*Package
}

var (
	// ok  	example.com/p	0.1s	coverage: 81.4% of statements
	// 	example.com/p		coverage: 0.0% of statements
	// ok  	example.com/p	(cached)	coverage: [no statements]
	coverRe = regexp.MustCompile(`^(?:ok\s+|\t)(\S+)\t.*\bcoverage: (?:([0-9]+(?:\.[0-9]+)?)% of statements|\[no statements\])`)
	// FAIL	example.com/p	0.1s   or   FAIL	example.com/p [build failed]
	failRe = regexp.MustCompile(`^FAIL\s+(\S+)`)
	// ?   	example.com/p	[no test files]
	noTestRe = regexp.MustCompile(`^\?\s+(\S+)\s+\[no test files\]`)
)

// Parse reads the output of `go test -cover` (other lines, such as a failing
// test's log, are passed over).
func Parse(r io.Reader) (*Report, error) {
	rep := &Report{Packages: map[string]*Package{}}
	get := func(p string) *Package {
		if rep.Packages[p] == nil {
			rep.Packages[p] = &Package{Path: p}
		}
		return rep.Packages[p]
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if m := failRe.FindStringSubmatch(line); m != nil {
			get(m[1]).Failed = true
			continue
		}
		if m := noTestRe.FindStringSubmatch(line); m != nil {
			get(m[1]).NoTests = true
			continue
		}
		m := coverRe.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		p := get(m[1])
		p.Measured = true
		if m[2] == "" {
			p.NoStmts = true
			continue
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil || v < 0 || v > 100 {
			return nil, fmt.Errorf("read coverage of %s: %q is not a percentage", m[1], m[2])
		}
		p.Percent = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read go test output: %w", err)
	}
	return rep, nil
}

// floorOf is the floor that holds for import path p, if any.
func floorOf(floors map[string]float64, p string) (float64, bool) {
	if !strings.Contains("/"+p, guardedRoot) {
		return 0, false
	}
	f, ok := floors[path.Base(p)]
	return f, ok
}

// Table is one line per package, sorted by import path, with the floor
// beside each guarded package and BELOW where it is not met.
func (r *Report) Table(floors map[string]float64) string {
	paths := make([]string, 0, len(r.Packages))
	for p := range r.Packages {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var b strings.Builder
	for _, p := range paths {
		pk := r.Packages[p]
		var figure string
		switch {
		case pk.Failed:
			figure = "FAIL"
		case pk.NoStmts:
			figure = "-"
		case pk.Measured:
			figure = strconv.FormatFloat(pk.Percent, 'f', 1, 64) + "%"
		default:
			figure = "no tests"
		}
		fmt.Fprintf(&b, "%8s  %s", figure, p)
		if f, ok := floorOf(floors, p); ok {
			fmt.Fprintf(&b, "  (floor %g%%", f)
			if pk.Failed || pk.Percent < f {
				b.WriteString(", BELOW")
			}
			b.WriteString(")")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// Check lists what fails the run: a failed package, a guarded package below
// its floor, and a floor that no package of the run matched (a guarded
// package renamed or left out would otherwise pass unmeasured).
func (r *Report) Check(floors map[string]float64) []string {
	var out []string
	matched := map[string]bool{}
	paths := make([]string, 0, len(r.Packages))
	for p := range r.Packages {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		pk := r.Packages[p]
		if pk.Failed {
			out = append(out, fmt.Sprintf("%s: tests failed, so its coverage is unknown (see the go test output)", p))
		}
		f, ok := floorOf(floors, p)
		if !ok {
			continue
		}
		matched[path.Base(p)] = true
		if !pk.Failed && pk.Percent < f {
			out = append(out, fmt.Sprintf("%s: coverage %.1f%% is below its floor of %g%%", p, pk.Percent, f))
		}
	}
	names := make([]string, 0, len(floors))
	for n := range floors {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !matched[n] {
			out = append(out, fmt.Sprintf("no package named %q under kernel/ was measured: was it renamed, or left out of the run?", n))
		}
	}
	return out
}
