// Package differtest is the conformance test a differ's author runs against
// their own differ. Run checks the contract every Kule differ keeps: it never
// panics or hangs on bad input, its entities lie inside the file and nest
// properly, the same bytes always give the same names, a Merger merges
// identical sides to the identity, and all of it survives the trip over the
// plugin wire. Check is the same contract for one input, for fuzz targets.
//
//	func TestConformance(t *testing.T) {
//		differtest.Run(t, mydiffer.New(), differtest.Sample{Path: "a.ini", Src: src})
//	}
package differtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"time"

	"github.com/kulehq/kule/sdk/differ"
)

// Sample is one real file the differ should read.
type Sample struct {
	Path string
	Src  []byte
}

// Timeout is how long one call may take before Check calls it a hang.
var Timeout = 10 * time.Second

// Sentinel errors of Check.
var (
	ErrPanic    = errors.New("differtest: differ panicked")
	ErrHang     = errors.New("differtest: differ did not return in time")
	ErrContract = errors.New("differtest: contract broken")
)

// Check runs d on one input and checks everything the contract says of one
// call: no panic, no hang, entities valid (differ.Validate), in file order,
// nested inside their parents, siblings not overlapping, and the same result
// on a second call. An error from the differ itself is allowed (a file that
// does not parse), a broken contract is not.
func Check(d differ.Differ, path string, src []byte) error {
	first, ferr := call(d, path, src)
	if errors.Is(ferr, ErrPanic) || errors.Is(ferr, ErrHang) {
		return ferr
	}
	if ferr == nil {
		if err := Structure(src, first); err != nil {
			return err
		}
	}
	second, serr := call(d, path, src)
	if (ferr == nil) != (serr == nil) {
		return fmt.Errorf("%w: two calls on the same bytes: one failed (%v), one did not (%v)", ErrContract, ferr, serr)
	}
	if ferr == nil && !reflect.DeepEqual(first, second) {
		return fmt.Errorf("%w: two calls on the same bytes gave different entities", ErrContract)
	}
	return nil
}

// Structure checks entities for src beyond differ.Validate: file order (Start
// never goes back), every Parent names an entity that contains the child, and
// entities with the same parent do not overlap.
func Structure(src []byte, es []differ.Entity) error {
	if err := differ.Validate(src, es); err != nil {
		return fmt.Errorf("%w: %w", ErrContract, err)
	}
	byName := map[string]differ.Entity{}
	for _, e := range es {
		if _, dup := byName[e.Name]; !dup {
			byName[e.Name] = e
		}
	}
	lastEnd := map[string]int{} // per parent: end of the previous sibling
	for i, e := range es {
		if i > 0 && e.Start < es[i-1].Start {
			return fmt.Errorf("%w: entity %q starts before the one listed ahead of it (not in file order)", ErrContract, e.ID())
		}
		if e.Parent != "" {
			p, ok := byName[e.Parent]
			if !ok {
				return fmt.Errorf("%w: entity %q names parent %q, which is not an entity of the file", ErrContract, e.ID(), e.Parent)
			}
			if e.Start < p.Start || e.End > p.End {
				return fmt.Errorf("%w: entity %q [%d,%d) lies outside its parent %q [%d,%d)", ErrContract, e.ID(), e.Start, e.End, p.ID(), p.Start, p.End)
			}
		}
		if end, ok := lastEnd[e.Parent]; ok && e.Start < end {
			return fmt.Errorf("%w: entity %q overlaps the sibling before it", ErrContract, e.ID())
		}
		lastEnd[e.Parent] = e.End
	}
	return nil
}

// call runs Entities with a timeout and turns a panic into ErrPanic.
func call(d differ.Differ, path string, src []byte) (es []differ.Entity, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	type result struct {
		es  []differ.Entity
		err error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		defer func() {
			if p := recover(); p != nil {
				r = result{err: fmt.Errorf("%w on %s (%d bytes): %v", ErrPanic, path, len(src), p)}
			}
			done <- r
		}()
		resp, err := d.Entities(ctx, differ.EntitiesRequest{Path: path, Content: bytes.Clone(src)})
		r.es, r.err = resp.Entities, err
	}()
	select {
	case r := <-done:
		return r.es, r.err
	case <-time.After(Timeout + time.Second):
		return nil, fmt.Errorf("%w: %s (%d bytes) after %v", ErrHang, path, len(src), Timeout)
	}
}

// CheckMerge checks the identities every Merger keeps: merging three equal
// versions gives that version, and a change on one side only gives that side.
func CheckMerge(m differ.Merger, path string, base, changed []byte) error {
	cases := []struct {
		name               string
		base, ours, theirs []byte
		want               []byte
	}{
		{"all equal", base, base, base, base},
		{"ours only", base, changed, base, changed},
		{"theirs only", base, base, changed, changed},
	}
	for _, c := range cases {
		r, err := merge(m, path, c.base, c.ours, c.theirs)
		if err != nil {
			return fmt.Errorf("merge %s: %w", c.name, err)
		}
		if len(r.Conflicts) > 0 {
			return fmt.Errorf("%w: merge %s: conflicts %q where there can be none", ErrContract, c.name, r.Conflicts)
		}
		if !bytes.Equal(r.Merged, c.want) {
			return fmt.Errorf("%w: merge %s: merged %q, want %q", ErrContract, c.name, r.Merged, c.want)
		}
	}
	return nil
}

func merge(m differ.Merger, path string, base, ours, theirs []byte) (r differ.MergeResponse, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w in merge: %v", ErrPanic, p)
		}
	}()
	return m.Merge(ctx, differ.MergeRequest{Path: path, Base: bytes.Clone(base), Ours: bytes.Clone(ours), Theirs: bytes.Clone(theirs)})
}

// Garbage returns bad inputs derived from samples: empty, NUL bytes, invalid
// UTF-8, a very long line, deep nesting brackets, each sample cut at several
// points, and with random bytes flipped. The seed makes it repeatable.
func Garbage(seed int64, samples []Sample) [][]byte {
	rng := rand.New(rand.NewSource(seed))
	out := [][]byte{
		nil, {}, {0}, bytes.Repeat([]byte{0}, 1000), {0xff, 0xfe, 0xfd},
		[]byte("\xc3\x28\xa0\xa1\xe2\x28\xa1"),
		bytes.Repeat([]byte("x"), 1<<20),
		bytes.Repeat([]byte("{[(<"), 5000),
		bytes.Repeat([]byte("\n"), 10000),
		[]byte("\r\n\r\n\r"),
	}
	for _, s := range samples {
		for _, frac := range []int{1, 3, 5, 7, 9} {
			out = append(out, bytes.Clone(s.Src[:len(s.Src)*frac/10]))
		}
		for range 5 {
			b := bytes.Clone(s.Src)
			for range 1 + len(b)/50 {
				if len(b) > 0 {
					b[rng.Intn(len(b))] = byte(rng.Intn(256))
				}
			}
			out = append(out, b)
		}
	}
	return out
}
