package effects

import (
	"encoding/json"
	"io/fs"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// What a person reads for each kind of change, as `kule status` prints it.
func TestStringIsWhatThePersonReads(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		e    Effect
		want string
	}{
		"added file":         {Effect{Kind: Add, Path: "notes/new.md", NewType: TypeFile}, "+ notes/new.md"},
		"added directory":    {Effect{Kind: Add, Path: "notes", NewType: TypeDir, Dir: true, Files: 3}, "+ notes/"},
		"modified":           {Effect{Kind: Modify, Path: "a.txt"}, "~ a.txt"},
		"deleted":            {Effect{Kind: Delete, Path: "old.txt", OldType: TypeFile}, "- old.txt"},
		"deleted directory":  {Effect{Kind: Delete, Path: "build", OldType: TypeDir, Dir: true}, "- build/"},
		"moved":              {Effect{Kind: Move, Path: "b.txt", From: "a.txt"}, "» a.txt → b.txt"},
		"moved directory":    {Effect{Kind: Move, Path: "new", From: "old", Dir: true}, "» old/ → new/"},
		"mode":               {Effect{Kind: Mode, Path: "run.sh", OldMode: 0o644, NewMode: 0o755 | fs.ModeSetuid}, "~ run.sh (mode 0644 → 0755)"}, // permission bits only
		"type":               {Effect{Kind: Type, Path: "x", OldType: TypeFile, NewType: TypeDir}, "~ x (file → dir)"},
		"type to link":       {Effect{Kind: Type, Path: "x", OldType: TypeDir, NewType: TypeLink}, "~ x (dir → link)"},
		"new link":           {Effect{Kind: Link, Path: "cur", Target: "v2", NewType: TypeLink}, "+ cur → v2 (link)"},
		"retargeted link":    {Effect{Kind: Link, Path: "cur", Target: "v3", OldType: TypeLink, NewType: TypeLink}, "~ cur → v3 (link)"},
		"link with newline":  {Effect{Kind: Link, Path: "l", Target: "a\nb"}, `+ l → "a\nb" (link)`},
		"non-UTF-8 name":     {Effect{Kind: Add, Path: "caf\xe9.txt"}, `+ "caf\xe9.txt"`},
		"newline in name":    {Effect{Kind: Delete, Path: "a\nrm -rf"}, `- "a\nrm -rf"`},
		"escape in a move":   {Effect{Kind: Move, Path: "ok", From: "\x1b[2J"}, `» "\x1b[2J" → ok`},
		"unicode name as is": {Effect{Kind: Add, Path: "résumé/日本.md"}, "+ résumé/日本.md"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := tc.e.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
			if strings.Contains(tc.e.String(), "\n") {
				t.Errorf("String() breaks the line: %q", tc.e.String())
			}
		})
	}
}

func TestSymbol(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		e    Effect
		want string
	}{
		{Effect{Kind: Add}, "+"},
		{Effect{Kind: Link}, "+"},
		{Effect{Kind: Link, OldType: TypeLink}, "~"},
		{Effect{Kind: Link, OldType: TypeFile}, "~"},
		{Effect{Kind: Delete}, "-"},
		{Effect{Kind: Move}, "»"},
		{Effect{Kind: Modify}, "~"},
		{Effect{Kind: Mode}, "~"},
		{Effect{Kind: Type}, "~"},
	} {
		if got := tc.e.Symbol(); got != tc.want {
			t.Errorf("%+v: Symbol() = %q, want %q", tc.e, got, tc.want)
		}
	}
}

func TestEntryTypeString(t *testing.T) {
	t.Parallel()
	for typ, want := range map[EntryType]string{TypeNone: "none", TypeFile: "file", TypeDir: "dir", TypeLink: "link", 42: "none"} {
		if got := typ.String(); got != want {
			t.Errorf("EntryType(%d).String() = %q, want %q", typ, got, want)
		}
	}
}

func TestQuote(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"plain.txt":     "plain.txt",
		"with space.md": "with space.md",
		"naïve.txt":     "naïve.txt",
		"bad\xff":       `"bad\xff"`,
		"tab\there":     `"tab\there"`,
		"nl\n":          `"nl\n"`,
		"\u202egnp.exe": `"\u202egnp.exe"`, // right-to-left override: not printable
		"":              "",
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
}

// A directory's entries follow it directly, before a sibling whose name
// continues with a byte below '/'.
func TestSortListsADirectoryThenItsEntries(t *testing.T) {
	t.Parallel()
	es := []Effect{
		{Kind: Add, Path: "a-b"},
		{Kind: Modify, Path: "a/x"},
		{Kind: Delete, Path: "b"},
		{Kind: Add, Path: "a"},
		{Kind: Modify, Path: "a.txt"},
		{Kind: Add, Path: "a/x/y"},
		{Kind: Add, Path: "b"},
	}
	Sort(es)
	var got []string
	for _, e := range es {
		got = append(got, string(e.Kind)+" "+e.Path)
	}
	want := []string{"add a", "modify a/x", "add a/x/y", "add a-b", "modify a.txt", "add b", "delete b"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Sort (-want +got):\n%s", d)
	}
}

func TestComparePaths(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		sign int
	}{
		{"a", "a", 0},
		{"a", "a/x", -1},
		{"a/x", "a-b", -1},
		{"a-b", "a/x", 1},
		{"a/z", "a.b", -1},
		{"b", "a/x", 1},
		{"ab", "a", 1},
		{"", "a", -1},
	} {
		got := ComparePaths(tc.a, tc.b)
		if (got < 0 && tc.sign >= 0) || (got > 0 && tc.sign <= 0) || (got == 0 && tc.sign != 0) {
			t.Errorf("ComparePaths(%q, %q) = %d, want sign %d", tc.a, tc.b, got, tc.sign)
		}
	}
}

func TestCountAndSummary(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		es      []Effect
		counts  Counts
		summary string
	}{
		"nothing": {nil, Counts{}, "0 file changes: +0 ~0 -0"},
		"one":     {[]Effect{{Kind: Modify, Path: "a"}}, Counts{Changed: 1}, "1 file change: +0 ~1 -0"},
		"every kind": {
			[]Effect{{Kind: Add}, {Kind: Modify}, {Kind: Mode}, {Kind: Link}, {Kind: Type}, {Kind: Delete}, {Kind: Move}},
			Counts{Added: 1, Changed: 4, Deleted: 1, Moved: 1}, "7 file changes: +1 ~4 -1 »1",
		},
		"whole directories count their files": {
			[]Effect{
				{Kind: Add, Path: "new", Dir: true, Files: 12},
				{Kind: Delete, Path: "gone", Dir: true, Files: 3},
				{Kind: Move, Path: "to", From: "from", Dir: true, Files: 2},
				{Kind: Add, Path: "empty", Dir: true}, // an empty directory is one change
			},
			Counts{Added: 13, Deleted: 3, Moved: 2}, "18 file changes: +13 ~0 -3 »2",
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if d := cmp.Diff(tc.counts, Count(tc.es)); d != "" {
				t.Errorf("Count (-want +got):\n%s", d)
			}
			if got := Summary(tc.es); got != tc.summary {
				t.Errorf("Summary = %q, want %q", got, tc.summary)
			}
		})
	}
}

// The JSON a client reads names the kind and leaves out what is empty; the
// types and modes stay internal.
func TestJSON(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(Effect{Kind: Move, Path: "b", From: "a", Size: 3, OldType: TypeFile, NewMode: 0o644})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"kind":"move","path":"b","from":"a","size":3}`; got != want {
		t.Errorf("json = %s, want %s", got, want)
	}
}
