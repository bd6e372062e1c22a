package daemon

import (
	"strings"
	"testing"
)

// apply rebuilds both sides from an edit script: what was kept and removed is a, what was kept
// and added is b.
func apply(a, b []string, ops []byte) (ra, rb []string) {
	i, j := 0, 0
	for _, op := range ops {
		switch op {
		case ' ':
			ra, rb = append(ra, a[i]), append(rb, b[j])
			i++
			j++
		case '-':
			ra = append(ra, a[i])
			i++
		case '+':
			rb = append(rb, b[j])
			j++
		}
	}
	return ra, rb
}

// lcs is the length of the longest common subsequence, by the textbook table: a shortest edit
// script has len(a)+len(b)-2*lcs edits.
func lcs(a, b []string) int {
	t := make([][]int, len(a)+1)
	for i := range t {
		t[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				t[i][j] = t[i+1][j+1] + 1
			} else {
				t[i][j] = max(t[i+1][j], t[i][j+1])
			}
		}
	}
	return t[0][0]
}

func checkScript(t *testing.T, a, b []string) {
	t.Helper()
	ops, ok := diffOps(a, b, len(a)+len(b))
	if !ok {
		t.Fatalf("no script for %q → %q", a, b)
	}
	ra, rb := apply(a, b, ops)
	if strings.Join(ra, "\n") != strings.Join(a, "\n") || strings.Join(rb, "\n") != strings.Join(b, "\n") || len(ra) != len(a) || len(rb) != len(b) {
		t.Fatalf("the script %q does not rebuild %q → %q (got %q → %q)", ops, a, b, ra, rb)
	}
	edits := 0
	for _, op := range ops {
		if op != ' ' {
			edits++
		}
	}
	if want := len(a) + len(b) - 2*lcs(a, b); edits != want {
		t.Fatalf("%q → %q takes %d edits, the shortest takes %d", a, b, edits, want)
	}
}

func TestLineDiff(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct{ a, b string }{
		"same":          {"a\nb\n", "a\nb\n"},
		"added file":    {"", "a\nb\n"},
		"deleted file":  {"a\nb\n", ""},
		"one changed":   {"func Add(a, b int) int {\n\treturn a + b\n}\n", "func Add(a, b int) int {\n\treturn b + a\n}\n"},
		"moved block":   {"a\nb\nc\nd\ne\n", "c\nd\ne\na\nb\n"},
		"no newline":    {"a\nb", "a\nc"},
		"interleaved":   {"1\n2\n3\n4\n5\n6\n", "0\n2\n3x\n4\n6\n7\n"},
		"all different": {"a\nb\nc\n", "x\ny\n"},
	} {
		t.Run(name, func(t *testing.T) {
			checkScript(t, splitLines(c.a), splitLines(c.b))
		})
	}
	fd := LineDiff("add.go", "func Add(a, b int) int {\n\treturn a + b\n}\n", "func Add(a, b int) int {\n\treturn b + a\n}\n")
	if fd.Added != 1 || fd.Gone != 1 || len(fd.Hunks) != 1 {
		t.Fatalf("diff %+v", fd)
	}
	var got []string
	for _, l := range fd.Hunks[0] {
		got = append(got, l.Op+l.Text)
	}
	if want := "func Add(a, b int) int {|-\treturn a + b|+\treturn b + a| }"; strings.Join(got, "|") != " "+want {
		t.Fatalf("hunk %q", strings.Join(got, "|"))
	}
	// Changes far apart are separate hunks with their context.
	var a, b []string
	for i := range 40 {
		a = append(a, strings.Repeat("x", i))
		b = append(b, strings.Repeat("x", i))
	}
	b[2], b[35] = "two", "thirty-five"
	fd = LineDiff("f", strings.Join(a, "\n"), strings.Join(b, "\n"))
	if len(fd.Hunks) != 2 || fd.Hunks[1][0].Old != 33 {
		t.Fatalf("far changes: %d hunks, second from line %d", len(fd.Hunks), fd.Hunks[len(fd.Hunks)-1][0].Old)
	}
	// Too many differences are described, not diffed.
	a, b = nil, nil
	for i := range maxDiffEdits + 10 {
		a = append(a, "a"+strings.Repeat("-", i%7))
		b = append(b, "b"+strings.Repeat("-", i%5))
	}
	if fd := LineDiff("big", strings.Join(a, "\n"), strings.Join(b, "\n")); !fd.Large || fd.Note == "" {
		t.Fatalf("a diff of %d edits was not refused: %+v", 2*len(a), fd.Note)
	}
}
