// Package myers matches two sequences by a shortest edit script (Myers'
// O(ND) algorithm, with the common prefix and suffix set aside first). It is
// the one diff of Kule: the SDK's three-way token merge and the kernel's line
// diff for review both run on it. Callers intern what they compare (lines,
// tokens) to ints, so comparisons are cheap.
package myers

// Match returns the index pairs (i, j), ascending in both, at which a[i] and
// b[j] are kept by a shortest edit script from a to b: a longest common
// subsequence. maxEdit bounds the edits it explores; when a and b are further
// apart than that, ok is false and pairs hold only their common prefix and
// suffix, so that what lies between is one change.
func Match(a, b []int, maxEdit int) (pairs [][2]int, ok bool) {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pairs = append(pairs, [2]int{pre, pre})
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	x, y := a[pre:len(a)-suf], b[pre:len(b)-suf]
	ok = true
	if len(x) > 0 && len(y) > 0 {
		var mid [][2]int
		mid, ok = middle(x, y, maxEdit)
		for _, p := range mid {
			pairs = append(pairs, [2]int{pre + p[0], pre + p[1]})
		}
	}
	for i := suf; i > 0; i-- {
		pairs = append(pairs, [2]int{len(a) - i, len(b) - i})
	}
	return pairs, ok
}

// middle returns the matched index pairs of a shortest edit script from a to
// b, ascending, or false when they are more than maxEdit edits apart.
func middle(a, b []int, maxEdit int) ([][2]int, bool) {
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
