package differ

// This file holds the token diff and the three-way token merge that the
// entity merge runs on a file's skeleton (its text with each entity replaced
// by one placeholder token). Tokens are interned to ints so comparisons are
// cheap; the diff is Myers' O(ND) algorithm with common prefix and suffix
// trimmed first.

// maxEdit bounds the edit distance the diff explores. Two versions further
// apart than this are not merged token by token: the caller reports a
// conflict instead of spending quadratic time and memory on them.
const maxEdit = 2000

// match returns, for each index of a, the index of b it is matched to by a
// longest common subsequence, or -1. ok is false when a and b are further
// apart than maxEdit.
func match(a, b []int) (m []int, ok bool) {
	m = make([]int, len(a))
	for i := range m {
		m[i] = -1
	}
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		m[pre] = pre
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		m[len(a)-1-suf] = len(b) - 1 - suf
		suf++
	}
	x, y := a[pre:len(a)-suf], b[pre:len(b)-suf]
	if len(x) == 0 || len(y) == 0 {
		return m, true
	}
	pairs, ok := myers(x, y)
	if !ok {
		return nil, false
	}
	for _, p := range pairs {
		m[pre+p[0]] = pre + p[1]
	}
	return m, true
}

// myers returns the matched index pairs of a shortest edit script from a to b.
func myers(a, b []int) ([][2]int, bool) {
	n, m := len(a), len(b)
	max := n + m
	if max > maxEdit {
		max = maxEdit
	}
	off := max + 1
	v := make([]int, 2*max+3)
	var trace [][]int
	found := false
	var dEnd int
	for d := 0; d <= max && !found; d++ {
		snap := make([]int, 2*d+3)
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				found = true
				dEnd = d
			}
		}
		for k := -d - 1; k <= d+1; k++ {
			snap[k+d+1] = v[off+k]
		}
		trace = append(trace, snap)
	}
	if !found {
		return nil, false
	}
	// Walk back through the snapshots to recover the diagonals (matches).
	var pairs [][2]int
	x, y := n, m
	for d := dEnd; d > 0; d-- {
		prev := trace[d-1] // v after step d-1, indexed k+(d-1)+1
		get := func(k int) int { return prev[k+d] }
		k := x - y
		var pk int
		if k == -d || (k != d && get(k-1) < get(k+1)) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := get(pk)
		py := px - pk
		// the snake from the move's end to (x, y)
		sx, sy := px, py
		if pk == k+1 {
			sy++ // moved down: insertion from b
		} else {
			sx++ // moved right: deletion from a
		}
		for x > sx && y > sy {
			x--
			y--
			pairs = append(pairs, [2]int{x, y})
		}
		x, y = px, py
	}
	for x > 0 && y > 0 {
		x--
		y--
		pairs = append(pairs, [2]int{x, y})
	}
	for i, j := 0, len(pairs)-1; i < j; i, j = i+1, j-1 {
		pairs[i], pairs[j] = pairs[j], pairs[i]
	}
	return pairs, true
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
