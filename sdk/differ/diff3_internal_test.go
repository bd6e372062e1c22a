package differ

import (
	"math/rand/v2"
	"testing"
)

// TestMatchIsLongestCommonSubsequence checks the Myers matching against a
// dynamic-programming LCS on random sequences over a small alphabet.
func TestMatchIsLongestCommonSubsequence(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	for round := range 500 {
		a := make([]int, r.IntN(40))
		b := make([]int, r.IntN(40))
		for i := range a {
			a[i] = r.IntN(4)
		}
		for i := range b {
			b[i] = r.IntN(4)
		}
		m, ok := match(a, b)
		if !ok {
			t.Fatalf("round %d: no match", round)
		}
		n, last := 0, -1
		for i, j := range m {
			if j < 0 {
				continue
			}
			if j <= last || a[i] != b[j] {
				t.Fatalf("round %d: bad pair %d→%d in %v / %v: %v", round, i, j, a, b, m)
			}
			last = j
			n++
		}
		if want := lcsLen(a, b); n != want {
			t.Fatalf("round %d: matched %d, LCS is %d: %v / %v", round, n, want, a, b)
		}
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

// TestMatchTooFarApart: inputs further apart than maxEdit are refused, not
// diffed at quadratic cost.
func TestMatchTooFarApart(t *testing.T) {
	t.Parallel()
	a := make([]int, 3000)
	b := make([]int, 3000)
	for i := range a {
		a[i], b[i] = 2*i, 2*i+1
	}
	if _, ok := match(a, b); ok {
		t.Fatal("matched two sequences with nothing in common, 6000 edits apart")
	}
}
