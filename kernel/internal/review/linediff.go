package review

import (
	"bytes"

	"github.com/kulehq/kule/sdk/differ/myers"
)

// hunk replaces lines [A0,A1) of a with lines [B0,B1) of b.
type hunk struct{ A0, A1, B0, B1 int }

// maxEdit bounds the diff's search: two versions further apart than this many
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

// diffLines returns the hunks that turn a into b: the gaps between the lines
// a shortest edit script keeps (package myers, on lines interned to ints).
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
	// Too far apart, the pairs are the common prefix and suffix only, and
	// all between them is one hunk.
	pairs, _ := myers.Match(ai, bi, maxEdit)
	var hs []hunk
	x, y := 0, 0
	for _, p := range pairs {
		if p[0] > x || p[1] > y {
			hs = append(hs, hunk{x, p[0], y, p[1]})
		}
		x, y = p[0]+1, p[1]+1
	}
	if x < len(ai) || y < len(bi) {
		hs = append(hs, hunk{x, len(ai), y, len(bi)})
	}
	return hs
}
