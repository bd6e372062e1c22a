package review

import "bytes"

// hunk replaces lines [A0,A1) of a with lines [B0,B1) of b.
type hunk struct{ A0, A1, B0, B1 int }

// maxEdit bounds the Myers search: two versions further apart than this many
// line edits are one hunk covering all that differs.
const maxEdit = 4000

// splitLines cuts src after every '\n'; the last line may lack one.
func splitLines(src []byte) [][]byte {
	var out [][]byte
	for len(src) > 0 {
		i := bytes.IndexByte(src, '\n')
		if i < 0 {
			out = append(out, src)
			break
		}
		out = append(out, src[:i+1])
		src = src[i+1:]
	}
	return out
}

// diffLines returns the hunks that turn a into b (Myers' O(ND) algorithm on
// lines, after the common prefix and suffix are set aside).
func diffLines(a, b [][]byte) []hunk {
	ids := map[string]int{}
	id := func(l []byte) int {
		if v, ok := ids[string(l)]; ok {
			return v
		}
		ids[string(l)] = len(ids)
		return len(ids) - 1
	}
	ai := make([]int, len(a))
	for i, l := range a {
		ai[i] = id(l)
	}
	bi := make([]int, len(b))
	for i, l := range b {
		bi[i] = id(l)
	}
	pre := 0
	for pre < len(ai) && pre < len(bi) && ai[pre] == bi[pre] {
		pre++
	}
	suf := 0
	for suf < len(ai)-pre && suf < len(bi)-pre && ai[len(ai)-1-suf] == bi[len(bi)-1-suf] {
		suf++
	}
	x, y := ai[pre:len(ai)-suf], bi[pre:len(bi)-suf]
	var hs []hunk
	for _, h := range myers(x, y) {
		hs = append(hs, hunk{h.A0 + pre, h.A1 + pre, h.B0 + pre, h.B1 + pre})
	}
	return hs
}

func myers(a, b []int) []hunk {
	n, m := len(a), len(b)
	if n == 0 && m == 0 {
		return nil
	}
	if n == 0 || m == 0 {
		return []hunk{{0, n, 0, m}}
	}
	max := n + m
	if max > maxEdit {
		max = maxEdit
	}
	off := max + 1
	v := make([]int, 2*max+3)
	var trace [][]int
	found := -1
	for d := 0; d <= max && found < 0; d++ {
		trace = append(trace, append([]int(nil), v...))
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
				found = d
				break
			}
		}
	}
	if found < 0 {
		return []hunk{{0, n, 0, m}}
	}
	// Walk back through the trace, collecting matched (diagonal) runs.
	type pt struct{ x, y int }
	var path []pt
	x, y := n, m
	for d := found; d > 0; d-- {
		vp := trace[d]
		k := x - y
		var pk int
		if k == -d || (k != d && vp[off+k-1] < vp[off+k+1]) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := vp[off+pk]
		py := px - pk
		for x > px && y > py && x > 0 && y > 0 && a[x-1] == b[y-1] {
			path = append(path, pt{x - 1, y - 1})
			x--
			y--
		}
		x, y = px, py
	}
	for x > 0 && y > 0 {
		path = append(path, pt{x - 1, y - 1})
		x--
		y--
	}
	// path holds matched pairs in reverse; hunks are the gaps between them.
	var hs []hunk
	ax, by := 0, 0
	for i := len(path) - 1; i >= 0; i-- {
		p := path[i]
		if p.x > ax || p.y > by {
			hs = append(hs, hunk{ax, p.x, by, p.y})
		}
		ax, by = p.x+1, p.y+1
	}
	if ax < n || by < m {
		hs = append(hs, hunk{ax, n, by, m})
	}
	return hs
}
