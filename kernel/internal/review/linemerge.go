package review

import (
	"bytes"
	"fmt"
)

// lineMerge merges ours and theirs, both changed from base, by lines: changes
// to disjoint regions both go in; the same change on both sides goes in once;
// changes that overlap or touch (adjacent, or insertions at one place) are a
// conflict, and then nothing is merged.
func lineMerge(base, ours, theirs []byte) (merged []byte, conflicts []string) {
	bl, ol, tl := splitLines(base), splitLines(ours), splitLines(theirs)
	oh, th := diffLines(bl, ol), diffLines(bl, tl)
	type side struct {
		h     hunk
		lines [][]byte
	}
	var all []side
	i, j := 0, 0
	for i < len(oh) || j < len(th) {
		switch {
		case j >= len(th) || (i < len(oh) && oh[i].A0 <= th[j].A0):
			all = append(all, side{oh[i], ol[oh[i].B0:oh[i].B1]})
			i++
		default:
			all = append(all, side{th[j], tl[th[j].B0:th[j].B1]})
			j++
		}
	}
	var out bytes.Buffer
	pos := 0
	for k := 0; k < len(all); k++ {
		cur := all[k]
		if k+1 < len(all) {
			next := all[k+1]
			if touches(cur.h, next.h) {
				if cur.h.A0 == next.h.A0 && cur.h.A1 == next.h.A1 && equalLines(cur.lines, next.lines) {
					k++ // the same change on both sides
				} else {
					conflicts = append(conflicts, fmt.Sprintf("both changed lines %s", lineRange(cur.h, next.h)))
					for k+1 < len(all) && touches(cur.h, all[k+1].h) {
						k++
					}
					continue
				}
			}
		}
		for _, l := range bl[pos:cur.h.A0] {
			out.Write(l)
		}
		for _, l := range cur.lines {
			out.Write(l)
		}
		pos = cur.h.A1
	}
	if len(conflicts) > 0 {
		return nil, conflicts
	}
	for _, l := range bl[pos:] {
		out.Write(l)
	}
	return out.Bytes(), nil
}

// touches says whether two hunks (sorted by A0) overlap, are adjacent, or
// both insert at one place: their order in the merge would be a guess.
func touches(a, b hunk) bool { return b.A0 <= a.A1 }

func equalLines(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// lineRange names base lines (1-based) two hunks cover, e.g. "12–15".
func lineRange(a, b hunk) string {
	lo, hi := a.A0, a.A1
	if b.A1 > hi {
		hi = b.A1
	}
	if hi <= lo {
		return fmt.Sprintf("at %d", lo+1)
	}
	if hi-lo == 1 {
		return fmt.Sprintf("%d", lo+1)
	}
	return fmt.Sprintf("%d–%d", lo+1, hi)
}
