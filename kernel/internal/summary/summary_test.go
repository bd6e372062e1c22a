package summary

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kulehq/kule/kernel/internal/effects"
	"github.com/kulehq/kule/kernel/internal/review"
	"github.com/kulehq/kule/kernel/internal/task"
)

func testTask(t *testing.T) *task.Task {
	t.Helper()
	dir := t.TempDir()
	tk := &task.Task{ID: "1a2b3c4d", Paths: task.LayoutOf(dir)}
	if err := os.MkdirAll(tk.Paths.Base, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tk.Paths.Base, "manifest"), []byte("m1"), 0o600); err != nil {
		t.Fatal(err)
	}
	return tk
}

// A summary reads back while the base is the one it was taken against, and
// is gone once the base moved (a commit, rollback or undo rewrote it), or
// when its file is damaged.
func TestSummaryIsTiedToTheBase(t *testing.T) {
	tk := testTask(t)
	es := []effects.Effect{{Kind: effects.Modify, Path: "a.txt"}, {Kind: effects.Add, Path: "b.txt"}}
	s := New(tk, es)
	s.Files = []review.File{{Path: "a.txt", Op: review.Changed, Whole: true}}
	if err := Save(tk, s); err != nil {
		t.Fatal(err)
	}
	got := Load(tk)
	if got == nil || got.Line != "2 file changes: +1 ~1 -0" || got.Changes != 2 || len(got.Files) != 1 {
		t.Fatalf("Load = %+v", got)
	}
	tmp := filepath.Join(tk.Paths.Base, "manifest.new")
	if err := os.WriteFile(tmp, []byte("m2"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(tk.Paths.Base, "manifest")); err != nil {
		t.Fatal(err)
	}
	if got := Load(tk); got != nil {
		t.Errorf("after the base moved, Load = %+v, want none", got)
	}
	if err := os.WriteFile(Path(tk), []byte(`{"format":1,`), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := Load(tk); got != nil {
		t.Errorf("damaged summary loaded: %+v", got)
	}
}

// The namer asks a differ only about files whose path or bytes are not as
// the last summary saw them, under the same differs; a file the differ
// failed on is asked about again next time.
func TestNamerReusesNamesOfUnchangedFiles(t *testing.T) {
	asked := map[string]int{}
	compute := func(cs []review.Change) review.Review {
		var r review.Review
		for _, c := range cs {
			asked[c.Path]++
			f := review.File{Path: c.Path, Op: c.Op, Differ: "text", Entities: []review.EntityChange{{Op: review.Changed, Kind: "paragraph", Name: string(c.New)}}}
			if c.Path == "bad.txt" {
				f = review.File{Path: c.Path, Op: c.Op, Whole: true, Note: "no names: crashed"}
			}
			r.Files = append(r.Files, f)
		}
		return r
	}
	changes := []review.Change{
		{Path: "a.txt", Op: review.Changed, Old: []byte("a"), New: []byte("A")},
		{Path: "b.txt", Op: review.Changed, Old: []byte("b"), New: []byte("B")},
		{Path: "bad.txt", Op: review.Changed, Old: []byte("x"), New: []byte("X")},
	}
	n := NewNamer(nil, "p1")
	first := n.Review(compute, changes)
	prev := &Summary{}
	prev.Names, prev.Plugins = n.Names()

	changes[1].New = []byte("B2") // b.txt changed again
	n2 := NewNamer(prev, "p1")
	second := n2.Review(compute, changes)
	if d := cmp.Diff(map[string]int{"a.txt": 1, "b.txt": 2, "bad.txt": 2}, asked); d != "" {
		t.Errorf("differ asked (-want +got):\n%s", d)
	}
	if second.Files[0].Entities[0].Name != "A" || second.Files[1].Entities[0].Name != "B2" || first.Files[1].Entities[0].Name != "B" {
		t.Errorf("names: first %+v second %+v", first.Files, second.Files)
	}
	prev.Names, prev.Plugins = n2.Names()
	NewNamer(prev, "p2").Review(compute, changes) // other differs: nothing reused
	if asked["a.txt"] != 2 {
		t.Errorf("names reused across differs: asked %v", asked)
	}
}

// Meets between summaries: by name where both sides named a file, by file
// where either side lists it whole.
func TestMeetsByNameOrByFile(t *testing.T) {
	named := []review.File{{Path: "n.txt", Op: review.Changed, Entities: []review.EntityChange{{Op: review.Changed, Kind: "paragraph", Name: "Plan"}}}}
	other := []review.File{{Path: "n.txt", Op: review.Changed, Entities: []review.EntityChange{{Op: review.Changed, Kind: "paragraph", Name: "Later"}}}}
	if ms := Meets(named, other); len(ms) != 0 {
		t.Errorf("different paragraphs meet: %+v", ms)
	}
	whole := Whole([]review.Change{{Path: "n.txt", Op: review.Changed}, {Path: "m.txt", Op: review.Added}})
	if ms := Meets(named, whole); len(ms) != 1 || ms[0].Path != "n.txt" || len(ms[0].Entities) != 0 {
		t.Errorf("by file: %+v", ms)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"format":1,"line":"1 file change: +0 ~1 -0","files":[{"path":"a","op":"changed","whole":true}],"names":{"k":{"path":"a","op":"changed"}}}`))
	f.Add([]byte(`{"format":2}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, err := Decode(raw)
		if err != nil {
			return
		}
		if s.Format != Format {
			t.Fatalf("decoded format %d", s.Format)
		}
		_ = Meets(s.Files, s.ByHand)
	})
}
