package daemon

import (
	"strings"
	"testing"
)

// FuzzLineDiff checks, for any two texts, that the edit script rebuilds both sides, is as short
// as the longest common subsequence allows, and that the hunks count what changed.
func FuzzLineDiff(f *testing.F) {
	f.Add("a\nb\nc\n", "a\nc\nd\n")
	f.Add("", "x\n")
	f.Add("func Add(a, b int) int {\n\treturn a + b\n}\n", "func Add(a, b int) int {\n\treturn b + a\n}\n")
	f.Add("1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\nthree\n4\n5\n6\n7\n8\nnine\n")
	f.Fuzz(func(t *testing.T, a, b string) {
		if len(a) > 2000 || len(b) > 2000 {
			return
		}
		la, lb := splitLines(a), splitLines(b)
		checkScript(t, la, lb)
		fd := LineDiff("f", a, b)
		adds, gone := 0, 0
		for _, h := range fd.Hunks {
			for _, l := range h {
				switch l.Op {
				case "+":
					adds++
				case "-":
					gone++
				}
			}
		}
		if adds != fd.Added || gone != fd.Gone {
			t.Fatalf("hunks show +%d -%d, the counts say +%d -%d", adds, gone, fd.Added, fd.Gone)
		}
		if strings.Join(la, "\n") == strings.Join(lb, "\n") && len(fd.Hunks) != 0 {
			t.Fatalf("same texts gave %d hunks", len(fd.Hunks))
		}
	})
}
