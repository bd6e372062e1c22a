package differ

import "github.com/kulehq/kule/sdk/differ/myers"

// This file holds the token diff and the three-way token merge that the
// entity merge runs on a file's skeleton (its text with each entity replaced
// by one placeholder token). Tokens are interned to ints so comparisons are
// cheap; the diff is package myers.

// maxEdit bounds the edit distance the diff explores. Two versions further
// apart than this are not merged token by token: the caller reports a
// conflict instead of spending quadratic time and memory on them.
const maxEdit = 2000

// match returns, for each index of a, the index of b it is matched to by a
// longest common subsequence, or -1. ok is false when a and b are further
// apart than maxEdit.
func match(a, b []int) (m []int, ok bool) {
	pairs, ok := myers.Match(a, b, maxEdit)
	if !ok {
		return nil, false
	}
	m = make([]int, len(a))
	for i := range m {
		m[i] = -1
	}
	for _, p := range pairs {
		m[p[0]] = p[1]
	}
	return m, true
}

// hunk is one region of a three-way token merge.
type hunk struct {
	stable             bool
	base, ours, theirs []int // token ranges as [start, end) pairs
}

// diff3 splits base/ours/theirs into stable runs and changed hunks. ok is
// false when a side is too far from base to diff.
func diff3(base, ours, theirs []int) (hs []hunk, mo, mt []int, ok bool) {
	mo, ok1 := match(base, ours)
	mt, ok2 := match(base, theirs)
	if !ok1 || !ok2 {
		return nil, nil, nil, false
	}
	var out []hunk
	b, o, t := 0, 0, 0
	for b < len(base) || o < len(ours) || t < len(theirs) {
		i := 0
		for b+i < len(base) && o+i < len(ours) && t+i < len(theirs) && mo[b+i] == o+i && mt[b+i] == t+i {
			i++
		}
		if i > 0 {
			out = append(out, hunk{stable: true, base: []int{b, b + i}, ours: []int{o, o + i}, theirs: []int{t, t + i}})
			b, o, t = b+i, o+i, t+i
			continue
		}
		j := b
		for j < len(base) && (mo[j] < 0 || mt[j] < 0) {
			j++
		}
		var ne, te int
		if j == len(base) {
			ne, te = len(ours), len(theirs)
		} else {
			ne, te = mo[j], mt[j]
		}
		if j == b && ne == o && te == t {
			// Cannot happen with monotone matchings; never loop forever.
			return nil, nil, nil, false
		}
		out = append(out, hunk{base: []int{b, j}, ours: []int{o, ne}, theirs: []int{t, te}})
		b, o, t = j, ne, te
	}
	return out, mo, mt, true
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
