package differ

import (
	"math/rand/v2"
	"testing"

	"github.com/kulehq/kule/sdk/differ/myers"
)

// TestMatchIsMyersMatch checks that match maps each index of a to the one
// of b that myers.Match pairs it with (whose own tests check that the
// pairs are a longest common subsequence), on random sequences over a
// small alphabet.
func TestMatchIsMyersMatch(t *testing.T) {
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
		pairs, _ := myers.Match(a, b, maxEdit)
		if n != len(pairs) {
			t.Fatalf("round %d: matched %d, myers.Match pairs %d: %v / %v", round, n, len(pairs), a, b)
		}
		for _, p := range pairs {
			if m[p[0]] != p[1] {
				t.Fatalf("round %d: %d is matched to %d, myers.Match pairs it with %d", round, p[0], m[p[0]], p[1])
			}
		}
	}
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
