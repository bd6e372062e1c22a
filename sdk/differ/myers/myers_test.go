package myers_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kulehq/kule/sdk/differ/myers"
)

// check fails unless pairs are ascending in both indexes and match equal
// elements.
func check(t *testing.T, a, b []int, pairs [][2]int) {
	t.Helper()
	li, lj := -1, -1
	for _, p := range pairs {
		if p[0] <= li || p[1] <= lj || p[0] >= len(a) || p[1] >= len(b) || a[p[0]] != b[p[1]] {
			t.Fatalf("bad pair %v in %v of %v / %v", p, pairs, a, b)
		}
		li, lj = p[0], p[1]
	}
}

func lcsLen(a, b []int) int {
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

// TestMatchIsLongestCommonSubsequence checks Match against a
// dynamic-programming LCS on random sequences over small alphabets.
func TestMatchIsLongestCommonSubsequence(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 6))
	for round := range 2000 {
		alpha := 1 + r.IntN(5)
		a, b := make([]int, r.IntN(50)), make([]int, r.IntN(50))
		for i := range a {
			a[i] = r.IntN(alpha)
		}
		for i := range b {
			b[i] = r.IntN(alpha)
		}
		pairs, ok := myers.Match(a, b, 1000)
		if !ok {
			t.Fatalf("round %d: refused %v / %v", round, a, b)
		}
		check(t, a, b, pairs)
		if want := lcsLen(a, b); len(pairs) != want {
			t.Fatalf("round %d: matched %d, LCS is %d: %v / %v", round, len(pairs), want, a, b)
		}
	}
}

func TestMatch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		a, b    []int
		maxEdit int
		want    [][2]int
		ok      bool
	}{
		{name: "both empty", maxEdit: 10, ok: true},
		{name: "all inserted", b: []int{1, 2}, maxEdit: 10, ok: true},
		{name: "all deleted", a: []int{1, 2}, maxEdit: 10, ok: true},
		{name: "same", a: []int{1, 2, 3}, b: []int{1, 2, 3}, maxEdit: 0, want: [][2]int{{0, 0}, {1, 1}, {2, 2}}, ok: true},
		{name: "one changed", a: []int{1, 2, 3}, b: []int{1, 9, 3}, maxEdit: 10, want: [][2]int{{0, 0}, {2, 2}}, ok: true},
		{name: "inner match", a: []int{1, 5, 6, 7, 2}, b: []int{1, 8, 6, 9, 2}, maxEdit: 10, want: [][2]int{{0, 0}, {2, 2}, {4, 4}}, ok: true},
		// Too far apart: only the common prefix and suffix, although 6
		// matches inside.
		{name: "too far", a: []int{1, 5, 6, 7, 2}, b: []int{1, 8, 6, 9, 2}, maxEdit: 3, want: [][2]int{{0, 0}, {4, 4}}, ok: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := myers.Match(tc.a, tc.b, tc.maxEdit)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("pairs (-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzMatch(f *testing.F) {
	f.Add([]byte("abcabba"), []byte("cbabac"), uint16(20))
	f.Add([]byte(""), []byte("x"), uint16(0))
	f.Add([]byte("same"), []byte("same"), uint16(1))
	f.Fuzz(func(t *testing.T, as, bs []byte, maxEdit uint16) {
		if len(as) > 300 || len(bs) > 300 {
			return
		}
		a, b := make([]int, len(as)), make([]int, len(bs))
		for i, c := range as {
			a[i] = int(c % 8)
		}
		for i, c := range bs {
			b[i] = int(c % 8)
		}
		pairs, ok := myers.Match(a, b, int(maxEdit))
		check(t, a, b, pairs)
		if ok && len(pairs) != lcsLen(a, b) {
			t.Fatalf("matched %d, LCS is %d", len(pairs), lcsLen(a, b))
		}
	})
}

// Match keeps the lines a shortest edit keeps; what lies between the pairs
// is deleted from a or inserted from b.
func ExampleMatch() {
	a := []int{1, 2, 3, 4}
	b := []int{1, 3, 4, 5}
	pairs, ok := myers.Match(a, b, 100)
	fmt.Println(pairs, ok)
	// Output: [[0 0] [2 1] [3 2]] true
}
