package differ_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kulehq/kule/sdk/differ"
)

// toyFile renders toy entities "def NAME" with bodies, separated by blank
// lines, after a header.
func toyFile(order []string, body map[string]string) []byte {
	var b strings.Builder
	b.WriteString("head\n")
	for _, n := range order {
		fmt.Fprintf(&b, "\ndef %s\n  %s\n", n, body[n])
	}
	return []byte(b.String())
}

// TestMergeProperty edits random, different entities on each side (change,
// add, delete, and a reorder on one side) and checks that the merge succeeds
// and that the result, named again, holds every change of both sides.
func TestMergeProperty(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 300; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		n := 3 + r.IntN(12)
		var order []string
		body := map[string]string{}
		for i := range n {
			name := fmt.Sprintf("e%d", i)
			order = append(order, name)
			body[name] = fmt.Sprintf("v%d", i)
		}
		base := toyFile(order, body)
		// Split entities between the sides so their edits never meet.
		side := map[string]int{}
		for _, name := range order {
			side[name] = r.IntN(2)
		}
		edit := func(who int, reorder bool) ([]byte, map[string]string) {
			o := append([]string{}, order...)
			b := map[string]string{}
			for k, v := range body {
				b[k] = v
			}
			want := map[string]string{}
			var kept []string
			for _, name := range o {
				if side[name] != who {
					kept = append(kept, name)
					continue
				}
				switch r.IntN(4) {
				case 0:
					b[name] += " changed"
					want[name] = b[name]
					kept = append(kept, name)
				case 1:
					want[name] = "" // deleted
				default:
					kept = append(kept, name)
				}
			}
			if reorder && len(kept) > 1 {
				// Move this side's own first entity to the very front.
				for i, name := range kept {
					if side[name] == who && i > 0 {
						kept = append([]string{name}, append(kept[:i:i], kept[i+1:]...)...)
						break
					}
				}
			}
			// Add one entity after an entity of its own, or at the end.
			add := fmt.Sprintf("new%d", who)
			at := len(kept)
			for i, name := range kept {
				if side[name] == who {
					at = i + 1
				}
			}
			kept = append(kept[:at:at], append([]string{add}, kept[at:]...)...)
			b[add] = "added"
			want[add] = "added"
			return toyFile(kept, b), want
		}
		ours, wantO := edit(0, seed%3 == 0)
		theirs, wantT := edit(1, false)
		res, err := differ.MergeEntities(context.Background(), toyParse, differ.MergeRequest{Base: base, Ours: ours, Theirs: theirs})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Conflicts) > 0 {
			t.Fatalf("seed %d: conflicts %q\nbase:\n%s\nours:\n%s\ntheirs:\n%s", seed, res.Conflicts, base, ours, theirs)
		}
		ents, _ := toyParse(context.Background(), res.Merged)
		got := map[string]string{}
		for _, e := range ents {
			got[e.Name] = strings.TrimSpace(strings.TrimPrefix(string(res.Merged[e.Start:e.End]), "def "+e.Name))
		}
		for _, want := range []map[string]string{wantO, wantT} {
			for name, v := range want {
				g, ok := got[name]
				switch {
				case v == "" && ok:
					t.Fatalf("seed %d: deleted %s is back:\n%s", seed, name, res.Merged)
				case v != "" && g != v:
					t.Fatalf("seed %d: %s = %q, want %q:\n%s", seed, name, g, v, res.Merged)
				}
			}
		}
	}
}

func FuzzMergeEntities(f *testing.F) {
	f.Add([]byte("head\n\ndef a\n  x\n"), []byte("head\n\ndef a\n  y\n"), []byte("head\n\ndef b\n  x\n"))
	f.Add([]byte("def a\n  def b\n    1\n"), []byte("def a\n  def b\n    2\n  def c\n"), []byte("x\ndef a\n  def b\n    1\n"))
	f.Fuzz(func(t *testing.T, base, ours, theirs []byte) {
		res, err := differ.MergeEntities(context.Background(), toyParse, differ.MergeRequest{Base: base, Ours: ours, Theirs: theirs})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Conflicts) > 0 && res.Merged != nil {
			t.Fatal("conflicts with a merged file")
		}
		if len(res.Conflicts) == 0 && res.Merged == nil && (len(ours) > 0 || len(theirs) > 0) {
			t.Fatal("no conflicts and no merged file")
		}
	})
}

// TestMergeEntitiesFallsBackToLines: without entities, a merge is a line
// merge — disjoint lines merge, overlapping lines conflict at the top level.
func TestMergeEntitiesFallsBackToLines(t *testing.T) {
	t.Parallel()
	none := func(context.Context, []byte) ([]differ.Entity, error) { return nil, nil }
	base := "a\nb\nc\nd\ne\n"
	res, err := differ.MergeEntities(context.Background(), none, differ.MergeRequest{Base: []byte(base), Ours: []byte("A\nb\nc\nd\ne\n"), Theirs: []byte("a\nb\nc\nd\nE\n")})
	if err != nil || string(res.Merged) != "A\nb\nc\nd\nE\n" {
		t.Fatalf("merged %q, %v, conflicts %q", res.Merged, err, res.Conflicts)
	}
	res, _ = differ.MergeEntities(context.Background(), none, differ.MergeRequest{Base: []byte(base), Ours: []byte("a\nB\nc\nd\ne\n"), Theirs: []byte("a\nb2\nc\nd\ne\n")})
	if len(res.Conflicts) != 1 || res.Conflicts[0] != "top level" || res.Merged != nil {
		t.Fatalf("want a top-level conflict, got %q / %q", res.Conflicts, res.Merged)
	}
}
