package daemon

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/kulehq/kule/kernel"
)

// Review's line diff: what a changed text file held before (the task's base) against what the
// copy holds now, as hunks of lines with a little context around each change. Files are read
// beneath their roots and never through a link; large or binary files say so instead.

// Bounds of a diff: larger files, or ones that differ in more lines than this, are described,
// not diffed (a diff of that size is read in an editor, not in Review).
const (
	maxDiffBytes = 1 << 20
	maxDiffEdits = 1500
	diffContext  = 3
)

// DiffLine is one line of a hunk: Op is ' ' (in both), '-' (only before) or '+' (only after).
type DiffLine struct {
	Op   string `json:"op"`
	Text string `json:"text"`
	Old  int    `json:"old,omitempty"` // its line number before, from 1
	New  int    `json:"new,omitempty"` // its line number after, from 1
}

// FileDiff is what Review shows under a changed file.
type FileDiff struct {
	Path   string       `json:"path"`
	Hunks  [][]DiffLine `json:"hunks"`
	Added  int          `json:"added"`
	Gone   int          `json:"removed"`
	Binary bool         `json:"binary,omitempty"`
	Large  bool         `json:"large,omitempty"` // over the bounds: not diffed
	Note   string       `json:"note,omitempty"`  // why there is no diff, for a person
}

// diffOps are the edits that turn a into b, as a shortest edit script (Myers' O(ND) greedy
// algorithm). Each round keeps the part of the frontier the walk back reads (O(D²) in all,
// which maxD bounds). ok is false when more than maxD edits are needed.
func diffOps(a, b []string, maxD int) (ops []byte, ok bool) {
	n, m := len(a), len(b)
	maxD = min(maxD, n+m)
	off := maxD + 1
	v := make([]int32, 2*maxD+3)
	var trace [][]int32 // trace[d] is v[off-d-1 : off+d+2] as round d began
	for d := 0; d <= maxD; d++ {
		trace = append(trace, append([]int32(nil), v[off-d-1:off+d+2]...))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = int(v[off+k+1]) // down: an insertion
			} else {
				x = int(v[off+k-1]) + 1 // right: a deletion
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = int32(x)
			if x >= n && y >= m {
				return walkBack(trace, n, m, d), true
			}
		}
	}
	return nil, false
}

// walkBack reads the edit script from the frontiers kept by diffOps, from the end to the start.
func walkBack(trace [][]int32, n, m, d int) []byte {
	var rev []byte
	x, y := n, m
	for ; d > 0; d-- {
		t := trace[d]
		at := func(k int) int { return int(t[k+d+1]) } // t holds v[off-d-1 …]
		k := x - y
		pk := k - 1
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			pk = k + 1
		}
		px := at(pk)
		py := px - pk
		for x > px && y > py {
			rev = append(rev, ' ')
			x--
			y--
		}
		if pk == k+1 {
			rev = append(rev, '+')
			y--
		} else {
			rev = append(rev, '-')
			x--
		}
	}
	for x > 0 && y > 0 {
		rev = append(rev, ' ')
		x--
		y--
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev
}

// splitLines splits text into lines without their ends ("a\nb" and "a\nb\n" are both a, b;
// the missing last newline is not a line of its own).
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	s = strings.TrimSuffix(s, "\n")
	return strings.Split(s, "\n")
}

// LineDiff diffs before against after into hunks with diffContext lines around each change.
func LineDiff(path, before, after string) FileDiff {
	fd := FileDiff{Path: path, Hunks: [][]DiffLine{}}
	a, b := splitLines(before), splitLines(after)
	ops, ok := diffOps(a, b, maxDiffEdits)
	if !ok {
		fd.Large = true
		fd.Note = fmt.Sprintf("more than %d lines differ: open the file to compare it", maxDiffEdits)
		return fd
	}
	all := make([]DiffLine, 0, len(ops))
	i, j := 0, 0
	for _, op := range ops {
		switch op {
		case ' ':
			all = append(all, DiffLine{Op: " ", Text: a[i], Old: i + 1, New: j + 1})
			i++
			j++
		case '-':
			all = append(all, DiffLine{Op: "-", Text: a[i], Old: i + 1})
			fd.Gone++
			i++
		case '+':
			all = append(all, DiffLine{Op: "+", Text: b[j], New: j + 1})
			fd.Added++
			j++
		}
	}
	// Hunks: each change with diffContext lines of context; changes closer than twice that
	// share a hunk.
	var cur []DiffLine
	lastChange := -1 << 30
	for n, l := range all {
		if l.Op != " " {
			if n-lastChange > 2*diffContext+1 && cur != nil {
				fd.Hunks = append(fd.Hunks, cur)
				cur = nil
			}
			if cur == nil {
				for c := max(n-diffContext, 0, lastChange+diffContext+1); c < n; c++ {
					cur = append(cur, all[c])
				}
			}
			cur = append(cur, l)
			lastChange = n
			continue
		}
		if cur != nil && n-lastChange <= diffContext {
			cur = append(cur, l)
		}
	}
	if cur != nil {
		fd.Hunks = append(fd.Hunks, cur)
	}
	return fd
}

// isText says whether b is text Review can show: UTF-8 without NUL bytes.
func isText(b []byte) bool { return utf8.Valid(b) && bytes.IndexByte(b, 0) < 0 }

var errNoDiff = errors.New("no line diff")

// readSide reads one side of a changed file within maxDiffBytes: "after" from the copy
// (beneath it, never through a link), "before" from the task's base. A side that does not
// exist reads as empty (an added or a deleted file).
func (d *Daemon) readSide(t *kernel.Task, rel, side string) ([]byte, error) {
	if err := kernel.CheckRelPath(rel); err != nil {
		return nil, fmt.Errorf("%w: %v", errPath, err)
	}
	if side == "before" {
		rc, err := d.k.OpenBefore(t, rel, maxDiffBytes)
		if errors.Is(err, os.ErrNotExist) {
			if strings.Contains(err.Error(), "no earlier version") {
				return nil, nil // an added file: nothing before
			}
			// The base keeps no copy and the folder changed since: shown as all new, the
			// diff would lie.
			return nil, fmt.Errorf("%w: the earlier version is not kept (the folder changed since the task began)", errNoDiff)
		}
		if errors.Is(err, kernel.ErrTooLarge) {
			return nil, fmt.Errorf("%w: larger than 1 MiB", errNoDiff)
		}
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		return io.ReadAll(io.LimitReader(rc, maxDiffBytes+1))
	}
	root, err := os.OpenRoot(t.Paths.Copy)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	fi, err := openInside(root, rel)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: not a regular file", errNoDiff)
	}
	if fi.Size() > maxDiffBytes {
		return nil, fmt.Errorf("%w: larger than 1 MiB", errNoDiff)
	}
	f, err := root.Open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxDiffBytes+1))
}

// Diff is the line diff of one changed path; from is where a moved file came from.
func (d *Daemon) Diff(t *kernel.Task, rel, from string) (FileDiff, error) {
	if from == "" {
		from = rel
	}
	before, err := d.readSide(t, from, "before")
	if err == nil {
		var after []byte
		if after, err = d.readSide(t, rel, "after"); err == nil {
			if len(before) > maxDiffBytes || len(after) > maxDiffBytes {
				return FileDiff{Path: rel, Hunks: [][]DiffLine{}, Large: true, Note: "larger than 1 MiB: open the file to compare it"}, nil
			}
			if !isText(before) || !isText(after) {
				return FileDiff{Path: rel, Hunks: [][]DiffLine{}, Binary: true, Note: "not text: no line diff"}, nil
			}
			return LineDiff(rel, string(before), string(after)), nil
		}
	}
	if errors.Is(err, errNoDiff) {
		return FileDiff{Path: rel, Hunks: [][]DiffLine{}, Large: true, Note: strings.TrimPrefix(err.Error(), errNoDiff.Error()+": ")}, nil
	}
	return FileDiff{}, err
}

func (d *Daemon) serveDiff(w http.ResponseWriter, r *http.Request, t *kernel.Task) {
	fd, err := d.Diff(t, r.URL.Query().Get("path"), r.URL.Query().Get("from"))
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, 200, fd)
}
