// Package difftest is the shared test bench of the built-in differs: golden
// entity listings and change lists from testdata, three-way merge cases, the
// fuzz targets' bodies and the benchmark that compares a differ with a peer.
package difftest

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kulehq/kule/sdk/differ"
	"github.com/kulehq/kule/sdk/differ/differtest"
)

var update = flag.Bool("update", false, "rewrite golden files and fuzz seed corpora")

// Timeout is how long one call may take in tests before it counts as a hang.
const Timeout = 20 * time.Second

// Check verifies what every differ promises for any input: what the host's
// differ.Validate demands (ranges inside the file, UTF-8 names of bounded
// length, unique Kind+Name), and file order.
func Check(src []byte, ents []differ.Entity) error {
	if err := differ.Validate(src, ents); err != nil {
		return err
	}
	seen := map[string]bool{}
	last := 0
	for _, e := range ents {
		if e.Start < 0 || e.End > len(src) || e.Start > e.End {
			return fmt.Errorf("%s: range [%d,%d) outside the file of %d bytes", e.ID(), e.Start, e.End, len(src))
		}
		if e.Start < last {
			return fmt.Errorf("%s: starts at %d, before the previous entity at %d", e.ID(), e.Start, last)
		}
		last = e.Start
		if seen[e.ID()] {
			return fmt.Errorf("%s: named twice", e.ID())
		}
		seen[e.ID()] = true
		if e.Kind == "" || e.Name == "" {
			return fmt.Errorf("entity at %d has no kind or name", e.Start)
		}
	}
	return nil
}

func entities(t testing.TB, d differ.Differ, path string, src []byte) []differ.Entity {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	r, err := d.Entities(ctx, differ.EntitiesRequest{Path: path, Content: src})
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	ents := r.Entities
	if err := Check(src, ents); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return ents
}

// Listing renders entities as the golden files show them: line range,
// kind and name, and the parent.
func Listing(src []byte, ents []differ.Entity) string {
	if len(ents) == 0 {
		return "(no entities: the file is changed as a whole)\n"
	}
	var b strings.Builder
	for _, e := range ents {
		l1 := bytes.Count(src[:e.Start], []byte("\n")) + 1
		l2 := bytes.Count(src[:e.End], []byte("\n")) + 1
		if e.End > e.Start && src[e.End-1] == '\n' {
			l2--
		}
		fmt.Fprintf(&b, "L%d-L%d\t%s", l1, l2, e.ID())
		if e.Parent != "" {
			fmt.Fprintf(&b, "\t(in %s)", e.Parent)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// Changes lists what changed between two versions, by name, as a review
// shows it: "+ added", "- deleted", "~ changed", "> moved", "= renamed a → b".
func Changes(oldSrc, newSrc []byte, oldE, newE []differ.Entity) string {
	text := func(src []byte, e differ.Entity) string { return string(src[e.Start:e.End]) }
	oldBy := map[string]differ.Entity{}
	for _, e := range oldE {
		oldBy[e.ID()] = e
	}
	newBy := map[string]differ.Entity{}
	for _, e := range newE {
		newBy[e.ID()] = e
	}
	var added, removed []differ.Entity
	for _, e := range newE {
		if _, ok := oldBy[e.ID()]; !ok {
			added = append(added, e)
		}
	}
	for _, e := range oldE {
		if _, ok := newBy[e.ID()]; !ok {
			removed = append(removed, e)
		}
	}
	var lines []string
	short := func(n string) string {
		if i := strings.LastIndex(n, "›"); i >= 0 { // a heading path: its last heading, spaces and all
			return strings.TrimSpace(n[i+len("›"):])
		}
		n = strings.TrimRight(n, ")")
		if i := strings.IndexAny(n, "("); i > 0 {
			n = n[:i]
		}
		i := strings.LastIndexAny(n, ".:› ")
		return strings.TrimSpace(n[i+1:])
	}
	renamed := map[string]bool{}
	for _, r := range removed {
		for _, a := range added {
			if renamed[a.ID()] || a.Kind != r.Kind {
				continue
			}
			if ot, nt := text(oldSrc, r), text(newSrc, a); strings.Replace(ot, short(r.Name), short(a.Name), 1) == nt || strings.ReplaceAll(ot, short(r.Name), short(a.Name)) == nt {
				lines = append(lines, fmt.Sprintf("= %s → %s", r.ID(), a.Name))
				renamed[a.ID()], renamed[r.ID()] = true, true
				break
			}
		}
	}
	for _, e := range removed {
		if !renamed[e.ID()] {
			lines = append(lines, "- "+e.ID())
		}
	}
	for _, e := range added {
		if !renamed[e.ID()] {
			lines = append(lines, "+ "+e.ID())
		}
	}
	// Moved: an entity both versions have, outside the longest common
	// order of its siblings, or under another parent.
	moved := map[string]bool{}
	group := func(es []differ.Entity, other map[string]differ.Entity) map[string][]string {
		g := map[string][]string{}
		for _, e := range es {
			if _, ok := other[e.ID()]; ok {
				g[e.Parent] = append(g[e.Parent], e.ID())
			}
		}
		return g
	}
	og, ng := group(oldE, newBy), group(newE, oldBy)
	for p, ns := range ng {
		keep := lcs(og[p], ns)
		for _, id := range ns {
			if !keep[id] {
				moved[id] = true
			}
		}
	}
	for _, e := range newE {
		o, ok := oldBy[e.ID()]
		if !ok {
			continue
		}
		changed := text(oldSrc, o) != text(newSrc, e)
		switch {
		case (moved[e.ID()] || o.Parent != e.Parent) && changed:
			lines = append(lines, "~ "+e.ID()+" (moved)")
		case moved[e.ID()] || o.Parent != e.Parent:
			lines = append(lines, "> "+e.ID())
		case changed:
			lines = append(lines, "~ "+e.ID())
		}
	}
	sort.SliceStable(lines, func(i, j int) bool { return lines[i][2:] < lines[j][2:] })
	if len(lines) == 0 {
		return "(no changes by name)\n"
	}
	return strings.Join(lines, "\n") + "\n"
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden: %v (run go test -update)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs (run go test -update after checking):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// Golden checks every file the differ accepts in dir against its .golden
// listing, and every pair NAME.old.EXT / NAME.new.EXT against
// NAME.changes.golden.
func Golden(t *testing.T, d differ.Differ, dir string) {
	t.Helper()
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		name := f.Name()
		if f.IsDir() || !d.Accepts(name) {
			continue
		}
		n++
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			ents := entities(t, d, name, src)
			golden(t, path+".golden", Listing(src, ents))
			if i := strings.Index(name, ".old."); i > 0 {
				newName := name[:i] + ".new." + name[i+5:]
				newSrc, err := os.ReadFile(filepath.Join(dir, newName))
				if err != nil {
					t.Fatal(err)
				}
				newE := entities(t, d, newName, newSrc)
				golden(t, filepath.Join(dir, name[:i]+".changes.golden"), Changes(src, newSrc, ents, newE))
			}
		})
	}
	if n == 0 {
		t.Fatalf("no test files in %s", dir)
	}
}

// Merge runs the merge cases under dir/merge/CASE/{base,ours,theirs}.EXT
// against CASE/result.golden. A case whose name starts with "conflict"
// must conflict; every other case must merge, and its result, named again,
// must hold every entity either side changed, as that side left it when the
// other did not touch it.
func Merge(t *testing.T, d differ.Differ, dir, ext string) {
	t.Helper()
	m, ok := d.(differ.Merger)
	if !ok {
		t.Fatalf("%s is not a differ.Merger", d.Name())
	}
	cases, err := os.ReadDir(filepath.Join(dir, "merge"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if !c.IsDir() {
			continue
		}
		t.Run(c.Name(), func(t *testing.T) {
			cd := filepath.Join(dir, "merge", c.Name())
			read := func(n string) []byte {
				b, err := os.ReadFile(filepath.Join(cd, n+ext))
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			base, ours, theirs := read("base"), read("ours"), read("theirs")
			ctx, cancel := context.WithTimeout(context.Background(), Timeout)
			defer cancel()
			res, err := m.Merge(ctx, differ.MergeRequest{Path: "file" + ext, Base: base, Ours: ours, Theirs: theirs})
			if err != nil {
				t.Fatal(err)
			}
			var got string
			if len(res.Conflicts) > 0 {
				if res.Merged != nil {
					t.Fatalf("conflicts %q with a merged file", res.Conflicts)
				}
				got = "CONFLICTS\n" + strings.Join(res.Conflicts, "\n") + "\n"
			} else {
				got = string(res.Merged)
				if len(res.Notes) > 0 {
					got += "\n----- NOTES\n" + strings.Join(res.Notes, "\n") + "\n"
				}
			}
			wantConflict := strings.HasPrefix(c.Name(), "conflict")
			if wantConflict != (len(res.Conflicts) > 0) {
				t.Fatalf("conflict = %v, want %v: %s", len(res.Conflicts) > 0, wantConflict, got)
			}
			if !wantConflict {
				if err := Property(t, d, base, ours, theirs, res.Merged, ext); err != nil {
					t.Fatal(err)
				}
			}
			golden(t, filepath.Join(cd, "result.golden"), got)
		})
	}
}

// Property is the merge's promise, checked from outside: the merged file,
// named again, holds every entity either side changed or added, with that
// side's text when the other side left it as in base, and none that one
// side deleted and the other left alone.
func Property(t testing.TB, d differ.Differ, base, ours, theirs, merged []byte, ext string) error {
	path := "file" + ext
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	get := func(src []byte) (map[string]string, error) {
		r, err := d.Entities(ctx, differ.EntitiesRequest{Path: path, Content: src})
		if err != nil {
			return nil, err
		}
		out := map[string]string{}
		for _, e := range r.Entities {
			out[e.ID()] = string(src[e.Start:e.End])
		}
		return out, nil
	}
	b, err := get(base)
	if err != nil {
		return err
	}
	o, err := get(ours)
	if err != nil {
		return err
	}
	th, err := get(theirs)
	if err != nil {
		return err
	}
	g, err := get(merged)
	if err != nil {
		return err
	}
	for _, side := range [][2]map[string]string{{o, th}, {th, o}} {
		s, other := side[0], side[1]
		for id, txt := range s {
			bt, inBase := b[id]
			if inBase && bt == txt {
				continue
			}
			mt, ok := g[id]
			if !ok {
				return fmt.Errorf("merged file lost %s", id)
			}
			if ot, ok := other[id]; ok && inBase && ot == bt && mt != txt {
				return fmt.Errorf("merged file changed %s:\n%s\nwant:\n%s", id, mt, txt)
			}
		}
		for id, bt := range b {
			if _, ok := s[id]; !ok {
				if ot, ok := other[id]; ok && ot == bt {
					if _, still := g[id]; still {
						return fmt.Errorf("merged file kept deleted %s", id)
					}
				}
			}
		}
	}
	return nil
}

// FuzzEntities is the body of a differ's fuzz target: no panic, no hang,
// and the promises of Check on any input.
func FuzzEntities(f *testing.F, d differ.Differ, ext string, seedDir string) {
	addSeeds(f, d, seedDir, 1)
	f.Fuzz(func(t *testing.T, src []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), Timeout)
		defer cancel()
		r, err := d.Entities(ctx, differ.EntitiesRequest{Path: "f" + ext, Content: src})
		if err != nil {
			if ctx.Err() != nil {
				t.Fatalf("hang: %v", err)
			}
			return
		}
		if err := Check(src, r.Entities); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzMerge is the body of a merge fuzz target: no panic, no hang, a merged
// file only without conflicts, and the property of Property when it merged.
func FuzzMerge(f *testing.F, d differ.Differ, ext string, seedDir string) {
	addSeeds(f, d, seedDir, 3)
	m := d.(differ.Merger)
	f.Fuzz(func(t *testing.T, base, ours, theirs []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), Timeout)
		defer cancel()
		res, err := m.Merge(ctx, differ.MergeRequest{Path: "f" + ext, Base: base, Ours: ours, Theirs: theirs})
		if err != nil {
			if ctx.Err() != nil {
				t.Fatalf("hang: %v", err)
			}
			return
		}
		if len(res.Conflicts) > 0 {
			if res.Merged != nil {
				t.Fatal("conflicts with a merged file")
			}
			return
		}
		if err := Property(t, d, base, ours, theirs, res.Merged, ext); err != nil {
			t.Fatal(err)
		}
	})
}

// addSeeds adds the test files (and the merge cases, for arity 3) as seeds.
// The checked-in corpus under testdata/fuzz is read by go test itself.
func addSeeds(f *testing.F, d differ.Differ, dir string, arity int) {
	files, _ := os.ReadDir(dir)
	var srcs [][]byte
	for _, fi := range files {
		if !fi.IsDir() && d.Accepts(fi.Name()) {
			b, err := os.ReadFile(filepath.Join(dir, fi.Name()))
			if err == nil {
				srcs = append(srcs, b)
			}
		}
	}
	if arity == 1 {
		for i, s := range srcs {
			f.Add(s)
			writeSeed(f, dir, fmt.Sprint(i), s)
		}
		return
	}
	cases, _ := os.ReadDir(filepath.Join(dir, "merge"))
	for _, c := range cases {
		var v [3][]byte
		ok := true
		for i, n := range []string{"base", "ours", "theirs"} {
			m, _ := filepath.Glob(filepath.Join(dir, "merge", c.Name(), n+".*"))
			if len(m) != 1 {
				ok = false
				break
			}
			v[i], _ = os.ReadFile(m[0])
		}
		if ok {
			f.Add(v[0], v[1], v[2])
			writeSeed(f, dir, c.Name(), v[0], v[1], v[2])
		}
	}
}

// Compare benchmarks fn against a named peer doing comparable work on the
// same input, and reports ms per file for both and the ratio. The two run
// interleaved, one call each per iteration (the peer with the timer
// stopped), so a busy machine slows both alike.
func Compare(b *testing.B, fn func(), peerName string, peer func()) {
	fn()
	peer() // warm up
	var peerTotal time.Duration
	b.ResetTimer()
	for b.Loop() {
		fn()
		b.StopTimer()
		t0 := time.Now()
		peer()
		peerTotal += time.Since(t0)
		b.StartTimer()
	}
	own := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	peerNs := float64(peerTotal.Nanoseconds()) / float64(b.N)
	b.ReportMetric(own/1e6, "ms/file")
	b.ReportMetric(peerNs/1e6, "peer-ms/file")
	ratio := own / peerNs
	b.ReportMetric(ratio, "x-"+peerName)
	b.Logf("differ %.2f ms/file, %s %.2f ms/file, ratio %.2f", own/1e6, peerName, peerNs/1e6, ratio)
}

// writeSeed writes one seed into dir/fuzz/FUZZNAME under -update, in the
// format go test reads.
func writeSeed(f *testing.F, dir, name string, vals ...[]byte) {
	if !*update {
		return
	}
	d := filepath.Join(dir, "fuzz", f.Name())
	if err := os.MkdirAll(d, 0o755); err != nil {
		f.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("go test fuzz v1\n")
	for _, v := range vals {
		b.WriteString("[]byte(" + strconv.Quote(string(v)) + ")\n")
	}
	if err := os.WriteFile(filepath.Join(d, "seed-"+name), []byte(b.String()), 0o644); err != nil {
		f.Fatal(err)
	}
}

// lcs returns the members of b on a longest common subsequence of a and b.
func lcs(a, b []string) map[string]bool {
	n, m := len(a), len(b)
	t := make([][]int, n+1)
	for i := range t {
		t[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				t[i][j] = t[i+1][j+1] + 1
			} else {
				t[i][j] = max(t[i+1][j], t[i][j+1])
			}
		}
	}
	keep := map[string]bool{}
	for i, j := 0, 0; i < n && j < m; {
		switch {
		case a[i] == b[j]:
			keep[b[j]] = true
			i++
			j++
		case t[i+1][j] >= t[i][j+1]:
			i++
		default:
			j++
		}
	}
	return keep
}

// Conformance runs the SDK's conformance suite (sdk/differ/differtest) on d
// with the test files in dir as samples, leaving out the broken, garbage
// and empty ones (the suite derives its own garbage from the samples).
func Conformance(t *testing.T, d differ.Differ, dir string) {
	t.Helper()
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var samples []differtest.Sample
	for _, f := range files {
		n := strings.ToLower(f.Name())
		if f.IsDir() || !d.Accepts(f.Name()) || strings.HasPrefix(n, "broken") || strings.HasPrefix(n, "garbage") || strings.HasPrefix(n, "empty") {
			continue
		}
		src, err := os.ReadFile(filepath.Join(dir, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		samples = append(samples, differtest.Sample{Path: f.Name(), Src: src})
	}
	differtest.Run(t, d, samples...)
}
