package review

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kulehq/kule/sdk/differ"
)

// braces is a test differ for "*.b" files: a line "kind name {" opens an
// entity that ends at its matching "}" line; nested ones are named
// "outer.inner". Kernel tests may not import plugins/, so it lives here.
type braces struct{ failOn string }

func (braces) Name() string             { return "braces" }
func (braces) Accepts(path string) bool { return strings.HasSuffix(path, ".b") }
func (b braces) Entities(_ context.Context, req differ.EntitiesRequest) (differ.EntitiesResponse, error) {
	es, err := b.entities(req.Content)
	return differ.EntitiesResponse{Entities: es}, err
}

func (b braces) entities(src []byte) ([]differ.Entity, error) {
	if b.failOn != "" && strings.Contains(string(src), b.failOn) {
		return nil, errors.New("cannot read this")
	}
	type open struct {
		e   differ.Entity
		idx int
	}
	var out []differ.Entity
	var stack []open
	off := 0
	for _, line := range strings.SplitAfter(string(src), "\n") {
		t := strings.TrimSpace(line)
		switch {
		case strings.HasSuffix(t, "{"):
			f := strings.Fields(strings.TrimSuffix(t, "{"))
			if len(f) == 2 {
				e := differ.Entity{Kind: f[0], Name: f[1], Start: off}
				if len(stack) > 0 {
					e.Parent = stack[len(stack)-1].e.Name
					e.Name = e.Parent + "." + f[1]
				}
				out = append(out, e)
				stack = append(stack, open{e, len(out) - 1})
			}
		case t == "}" && len(stack) > 0:
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			out[top.idx].End = off + len(line)
		}
		off += len(line)
	}
	var done []differ.Entity
	for _, e := range out {
		if e.End > 0 {
			done = append(done, e)
		}
	}
	return done, nil
}

// braceMerger merges by taking whole entities, for Merge's differ path.
type braceMerger struct{ braces }

func (braceMerger) Merge(context.Context, differ.MergeRequest) (differ.MergeResponse, error) {
	return differ.MergeResponse{Conflicts: []string{"func f"}}, nil
}

const base = `package x

class Task {
  method commit {
    a
  }
  method check {
    b
  }
}

func helper {
  h
}
`

func TestCompute(t *testing.T) {
	tests := map[string]struct {
		old, new string
		want     []EntityChange
	}{
		"method body changed": {old: base, new: strings.Replace(base, "    a\n", "    a2\n", 1),
			want: []EntityChange{{Op: Changed, Kind: "method", Name: "Task.commit"}}},
		"method added": {old: base, new: strings.Replace(base, "  method check {", "  method more {\n    m\n  }\n\n  method check {", 1),
			want: []EntityChange{{Op: Added, Kind: "method", Name: "Task.more"}}},
		"func deleted": {old: base, new: strings.Replace(base, "\nfunc helper {\n  h\n}\n", "", 1),
			want: []EntityChange{{Op: Deleted, Kind: "func", Name: "helper"}}},
		"func renamed": {old: base, new: strings.Replace(base, "func helper {", "func aide {", 1),
			want: []EntityChange{{Op: Renamed, Kind: "func", Name: "aide", OldName: "helper"}}},
		"top level changed": {old: base, new: strings.Replace(base, "package x", "package y", 1),
			want: []EntityChange{{Op: Changed, Name: TopLevel}}},
		"class own text changed": {old: base, new: strings.Replace(base, "    b\n  }\n}", "    b\n  }\n  field z\n}", 1),
			want: []EntityChange{{Op: Changed, Kind: "class", Name: "Task"}}},
		"methods reordered": {old: base, new: strings.Replace(strings.Replace(base, "  method commit {\n    a\n  }\n", "", 1), "    b\n  }\n", "    b\n  }\n  method commit {\n    a\n  }\n", 1),
			want: []EntityChange{{Op: Changed, Name: TopLevel}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := Compute(context.Background(), InProcess{braces{}}, []Change{{Path: "task.b", Op: Changed, Old: []byte(tc.old), New: []byte(tc.new)}})
			if len(r.Files) != 1 || r.Files[0].Differ != "braces" || r.Files[0].Whole {
				t.Fatalf("review = %+v", r)
			}
			if diff := cmp.Diff(tc.want, r.Files[0].Entities); diff != "" {
				t.Errorf("entities (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRenderAndJSON(t *testing.T) {
	ctx := context.Background()
	r := Compute(ctx, InProcess{braces{failOn: "BROKEN"}}, []Change{
		{Path: "src/task.b", Op: Changed, Old: []byte(base), New: []byte(strings.Replace(strings.Replace(base, "    a\n", "    a2\n", 1), "func helper {", "func helper {\n  more", 1))},
		{Path: "notes.txt", Op: Changed, Old: []byte("a"), New: []byte("b")},
		{Path: "new.b", Op: Added, New: []byte("func f {\n}\n")},
		{Path: "gone.b", Op: Deleted, Old: []byte(base)},
		{Path: "bad.b", Op: Changed, Old: []byte(base), New: []byte("BROKEN")},
	})
	want := `  ~ bad.b  (changed as a whole: no names: cannot read this)
  - gone.b
  + new.b
      + func f
  ~ notes.txt
  ~ src/task.b
      ~ method Task.commit
      ~ func helper
`
	if diff := cmp.Diff(want, r.String()); diff != "" {
		t.Errorf("rendered review (-want +got):\n%s", diff)
	}
	data, err := json.Marshal(r.Files[4])
	if err != nil {
		t.Fatal(err)
	}
	wantJSON := `{"path":"src/task.b","op":"changed","differ":"braces","entities":[{"op":"changed","kind":"method","name":"Task.commit"},{"op":"changed","kind":"func","name":"helper"}]}`
	if string(data) != wantJSON {
		t.Errorf("json = %s\nwant %s", data, wantJSON)
	}
}

func TestMeet(t *testing.T) {
	ch := func(path string, es ...EntityChange) File { return File{Path: path, Op: Changed, Entities: es} }
	commit := EntityChange{Op: Changed, Kind: "method", Name: "Task::commit"}
	check := EntityChange{Op: Added, Kind: "method", Name: "Task::check"}
	tests := map[string]struct {
		a, b Review
		want string
	}{
		"same entity": {a: Review{Files: []File{ch("task.rs", commit, check)}}, b: Review{Files: []File{ch("task.rs", commit)}},
			want: "task 5e6f7a8b changes them too: task.rs · method Task::commit"},
		"different entities":  {a: Review{Files: []File{ch("task.rs", commit)}}, b: Review{Files: []File{ch("task.rs", check)}}},
		"different files":     {a: Review{Files: []File{ch("a.rs", commit)}}, b: Review{Files: []File{ch("b.rs", commit)}}},
		"no differ reads it":  {a: Review{Files: []File{{Path: "x.bin", Op: Changed, Whole: true}}}, b: Review{Files: []File{{Path: "x.bin", Op: Changed, Whole: true}}}, want: "task 5e6f7a8b changes them too: x.bin"},
		"one side deleted it": {a: Review{Files: []File{ch("task.rs", commit)}}, b: Review{Files: []File{{Path: "task.rs", Op: Deleted, Whole: true}}}, want: "task 5e6f7a8b changes them too: task.rs"},
		"renamed meets old name": {a: Review{Files: []File{ch("t.go", EntityChange{Op: Renamed, Kind: "func", Name: "B", OldName: "A"})}}, b: Review{Files: []File{ch("t.go", EntityChange{Op: Changed, Kind: "func", Name: "A"})}},
			want: "task 5e6f7a8b changes them too: t.go · func A"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := FormatMeet("task 5e6f7a8b", Meet(tc.a, tc.b)); got != tc.want {
				t.Errorf("meet = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestMerge(t *testing.T) {
	ctx := context.Background()
	ba := "1\n2\n3\n4\n5\n6\n7\n8\n"
	tests := map[string]struct {
		ds                 Differs
		path               string
		base, ours, theirs string
		want               string
		conflicts          string
		by                 string
	}{
		"disjoint lines":          {path: "a.txt", base: ba, ours: strings.Replace(ba, "2\n", "2x\n", 1), theirs: strings.Replace(ba, "7\n", "7y\n", 1), want: "1\n2x\n3\n4\n5\n6\n7y\n8\n", by: "lines"},
		"same change both sides":  {path: "a.txt", base: ba, ours: "x\n" + ba, theirs: "x\n" + ba, want: "x\n" + ba, by: "one side"},
		"one side only":           {path: "a.txt", base: ba, ours: ba, theirs: ba + "9\n", want: ba + "9\n", by: "one side"},
		"overlapping lines":       {path: "a.txt", base: ba, ours: strings.Replace(ba, "4\n", "4o\n", 1), theirs: strings.Replace(ba, "4\n", "4t\n", 1), conflicts: "both changed lines 4", by: "lines"},
		"adjacent lines":          {path: "a.txt", base: ba, ours: strings.Replace(ba, "4\n", "4o\n", 1), theirs: strings.Replace(ba, "5\n", "5t\n", 1), conflicts: "both changed lines 4–5", by: "lines"},
		"insertions at one place": {path: "a.txt", base: ba, ours: strings.Replace(ba, "4\n", "4\nA\n", 1), theirs: strings.Replace(ba, "4\n", "4\nB\n", 1), conflicts: "both changed lines at 5", by: "lines"},
		"differ merges by name":   {ds: InProcess{braceMerger{}}, path: "a.b", base: ba, ours: "x", theirs: "y", conflicts: "func f", by: "differ braces"},
		"differ without merger":   {ds: InProcess{braces{}}, path: "a.b", base: ba, ours: "0\n" + ba, theirs: ba + "9\n", want: "0\n" + ba + "9\n", by: "lines"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := Merge(ctx, tc.ds, tc.path, []byte(tc.base), []byte(tc.ours), []byte(tc.theirs))
			if got := strings.Join(r.Conflicts, "; "); got != tc.conflicts {
				t.Fatalf("conflicts = %q, want %q", got, tc.conflicts)
			}
			if tc.conflicts != "" && r.Merged != nil {
				t.Errorf("a conflict returned a merged file")
			}
			if string(r.Merged) != tc.want || r.By != tc.by {
				t.Errorf("merged = %q by %q, want %q by %q", r.Merged, r.By, tc.want, tc.by)
			}
		})
	}
}

// applyHunks rebuilds b from a and the hunks diffLines gave.
func applyHunks(a, b [][]byte, hs []hunk) string {
	var out strings.Builder
	pos := 0
	for _, h := range hs {
		for _, l := range a[pos:h.A0] {
			out.Write(l)
		}
		for _, l := range b[h.B0:h.B1] {
			out.Write(l)
		}
		pos = h.A1
	}
	for _, l := range a[pos:] {
		out.Write(l)
	}
	return out.String()
}

func FuzzLineMerge(f *testing.F) {
	f.Add([]byte("1\n2\n3\n"), []byte("1\n2x\n3\n"), []byte("1\n2\n3\n4\n"))
	f.Add([]byte(""), []byte("a"), []byte("b"))
	f.Add([]byte(base), []byte(strings.Replace(base, "a", "b", 1)), []byte(strings.Replace(base, "h", "i", 1)))
	f.Fuzz(func(t *testing.T, b, o, th []byte) {
		bl, ol := splitLines(b), splitLines(o)
		if got := applyHunks(bl, ol, diffLines(bl, ol)); got != string(o) {
			t.Fatalf("diff does not rebuild ours: %q", got)
		}
		merged, conflicts := lineMerge(b, o, th)
		if len(conflicts) > 0 {
			if merged != nil {
				t.Fatal("conflict with a merged file")
			}
			return
		}
		if string(o) == string(b) && string(merged) != string(th) {
			t.Fatalf("ours unchanged: merged %q, want theirs %q", merged, th)
		}
		if string(th) == string(b) && string(merged) != string(o) {
			t.Fatalf("theirs unchanged: merged %q, want ours %q", merged, o)
		}
	})
}

// FuzzCompute: any two versions review without a panic, every entity change
// names an entity of one version (or the top level), and a file never meets
// itself on nothing.
func FuzzCompute(f *testing.F) {
	f.Add([]byte(base), []byte(strings.Replace(base, "a\n", "b\n", 1)))
	f.Add([]byte("class A {\n}\n"), []byte("class A {\n  method f {\n  }\n}\n"))
	f.Fuzz(func(t *testing.T, old, new []byte) {
		r := Compute(context.Background(), InProcess{braces{}}, []Change{{Path: "f.b", Op: Changed, Old: old, New: new}})
		if len(r.Files) != 1 {
			t.Fatalf("files = %d", len(r.Files))
		}
		f := r.Files[0]
		if string(old) != string(new) && !f.Whole && len(f.Entities) == 0 {
			t.Fatalf("a changed file with names lists nothing under them or the top level")
		}
		if ms := Meet(r, r); string(old) != string(new) && len(ms) != 1 {
			t.Fatalf("a review does not meet itself: %v", ms)
		}
	})
}
