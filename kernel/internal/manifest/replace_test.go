package manifest

import (
	"math/rand"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/kulehq/kule/kernel/internal/walk"
)

// replaceByOne is what Replace stands for: a Remove per top, then a Set per
// added entry, each O(entries).
func replaceByOne(m *Manifest, tops []string, add []Entry) {
	for _, p := range tops {
		m.Remove(p)
	}
	for _, e := range add {
		m.Set(e)
	}
}

// TestReplaceMatchesRemoveAndSet checks Replace against one Remove per top
// and one Set per entry on random trees whose names sort around "/" ("a-b"
// sorts between "a" and "a/b"), with tops nested in each other and added
// entries both inside and outside what was removed.
func TestReplaceMatchesRemoveAndSet(t *testing.T) {
	t.Parallel()
	names := []string{"a", "a-b", "a.c", "a0", "b", "ab", "z"}
	rnd := rand.New(rand.NewSource(1))
	randPath := func() string {
		p := names[rnd.Intn(len(names))]
		for rnd.Intn(3) > 0 {
			p += "/" + names[rnd.Intn(len(names))]
		}
		return p
	}
	for round := range 400 {
		m := &Manifest{}
		for range rnd.Intn(40) {
			m.Set(Entry{Item: walk.Item{Path: randPath(), Size: int64(round)}})
		}
		var tops []string
		for range rnd.Intn(6) {
			tops = append(tops, randPath())
		}
		var add []Entry
		for k := range rnd.Intn(8) {
			add = append(add, Entry{Item: walk.Item{Path: randPath(), Size: int64(1000 + k)}})
		}
		want := &Manifest{Entries: append([]Entry(nil), m.Entries...)}
		replaceByOne(want, tops, add)
		m.Replace(tops, add)
		if d := cmp.Diff(want.Entries, m.Entries, cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("round %d: tops %q, adds %d: Replace differs from Remove+Set (-want +got):\n%s", round, tops, len(add), d)
		}
		for i := 1; i < len(m.Entries); i++ {
			if m.Entries[i-1].Path >= m.Entries[i].Path {
				t.Fatalf("round %d: out of order at %q", round, m.Entries[i].Path)
			}
		}
	}
}

// BenchmarkReplace500In100k replaces 500 files of a 100,000-entry
// manifest in one pass, beside the Remove+Set per path it replaced.
func BenchmarkReplace500In100k(b *testing.B) {
	base := make([]Entry, 0, 100000)
	for d := range 1000 {
		for f := range 100 {
			base = append(base, Entry{Item: walk.Item{Path: dirFile(d, f)}})
		}
	}
	tops := make([]string, 500)
	add := make([]Entry, 500)
	for i := range tops {
		tops[i] = dirFile(i, 1)
		add[i] = Entry{Item: walk.Item{Path: tops[i], Size: 1}}
	}
	for _, bc := range []struct {
		name string
		f    func(*Manifest)
	}{
		{"replace", func(m *Manifest) { m.Replace(tops, add) }},
		{"remove-and-set", func(m *Manifest) { replaceByOne(m, tops, add) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				m := &Manifest{Entries: append([]Entry(nil), base...)}
				b.StartTimer()
				bc.f(m)
			}
		})
	}
}

func dirFile(d, f int) string {
	const digits = "0123456789"
	return "d" + string([]byte{digits[d/1000%10], digits[d/100%10], digits[d/10%10], digits[d%10]}) + "/f" + string([]byte{digits[f/100%10], digits[f/10%10], digits[f%10]}) + ".txt"
}
