package apply

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kulehq/kule/kernel/internal/crashpoint"
	"github.com/kulehq/kule/kernel/internal/effects"
)

// what lists root as "path kind detail" lines: a file's content and mode, a
// link's target, a directory's mode.
func what(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		switch {
		case info.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out = append(out, rel+" -> "+target)
		case info.IsDir():
			out = append(out, fmt.Sprintf("%s/ %04o", rel, info.Mode().Perm()))
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out = append(out, fmt.Sprintf("%s %04o %q", rel, info.Mode().Perm(), b))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sum(s string) [32]byte { return sha256.Sum256([]byte(s)) }

var mtime = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC).UnixNano()

// Every kind of op, applied together: what the folder holds afterwards is
// what was planned, with modes and times, and nothing of Kule's is left.
func TestRunAppliesEveryKindOfChange(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"a.txt": "old a", "old.txt": "old", "mv.txt": "moving", "run.sh": "#!/bin/sh\n",
		"dir-to-file/x": "x", "file-to-dir": "f", "gone/deep/y": "y", "gone/z": "z",
	})
	journal := filepath.Join(t.TempDir(), "journal")
	src := opener(map[string]string{"a": "new a", "f": "now a file", "t1": "tree one", "t2": "tree two"})
	j := &Journal{Kind: "commit", Data: []byte(`{"note":"mine"}`), Ops: []Op{
		{Kind: Chmod, Path: "run.sh", Mode: 0o755},
		{Kind: Remove, Path: "old.txt"},
		{Kind: Remove, Path: "gone"},
		{Kind: Move, Path: "moved.txt", From: "mv.txt"},
		{Kind: Replace, Path: "a.txt", Type: effects.TypeFile, Src: "a", Mode: 0o600, MTime: mtime, UID: -1, Want: sum("new a")},
		{Kind: Replace, Path: "latest", Type: effects.TypeLink, Target: "a.txt", MTime: mtime, UID: -1},
		{Kind: Replace, Path: "dir-to-file", Type: effects.TypeFile, Src: "f", Mode: 0o644, UID: -1},
		{Kind: Replace, Path: "file-to-dir", Type: effects.TypeDir, Mode: 0o750, UID: -1, Tree: []TreeEntry{
			{Rel: "in.txt", Type: effects.TypeFile, Src: "t1", Mode: 0o644, UID: -1},
		}},
		{Kind: Replace, Path: "new", Type: effects.TypeDir, Mode: 0o755, MTime: mtime, UID: -1, Tree: []TreeEntry{
			{Rel: "sub/two.txt", Type: effects.TypeFile, Src: "t2", Mode: 0o640, MTime: mtime, UID: -1, Want: sum("tree two")},
			{Rel: "sub", Type: effects.TypeDir, Mode: 0o711, MTime: mtime, UID: -1},
			{Rel: "one.txt", Type: effects.TypeFile, Src: "t1", Mode: 0o644, UID: -1},
			{Rel: "sub/link", Type: effects.TypeLink, Target: "../one.txt", MTime: mtime, UID: -1},
			{Rel: "empty", Type: effects.TypeDir, Mode: 0o700, UID: -1},
		}},
	}}
	finished := 0
	err := Run(root, journal, j, src, func(got *Journal) error {
		finished++
		if string(got.Data) != `{"note":"mine"}` || got.Phase != PhaseStaged {
			t.Errorf("finish got data %s in phase %s", got.Data, got.Phase)
		}
		if _, err := os.Stat(journal); err != nil {
			t.Errorf("the journal is gone before finish: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if finished != 1 {
		t.Errorf("finish ran %d times", finished)
	}
	want := []string{
		`a.txt 0600 "new a"`,
		`dir-to-file 0644 "now a file"`,
		`file-to-dir/ 0750`,
		`file-to-dir/in.txt 0644 "tree one"`,
		`latest -> a.txt`,
		`moved.txt 0644 "moving"`,
		`new/ 0755`,
		`new/empty/ 0700`,
		`new/one.txt 0644 "tree one"`,
		`new/sub/ 0711`,
		`new/sub/link -> ../one.txt`,
		`new/sub/two.txt 0640 "tree two"`,
		`run.sh 0755 "#!/bin/sh\n"`,
	}
	if d := cmp.Diff(want, what(t, root)); d != "" {
		t.Errorf("folder (-want +got):\n%s", d)
	}
	for _, p := range []string{"a.txt", "new/sub", "new/sub/two.txt"} { // a staged tree's own root keeps the time of its making
		st, err := os.Lstat(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		if st.ModTime().UnixNano() != mtime {
			t.Errorf("%s: mtime %v, want the planned one", p, st.ModTime())
		}
	}
	if _, err := os.Stat(journal); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the journal stays: %v", err)
	}
	if l := leftovers(root); len(l) != 0 {
		t.Errorf("left behind: %v", l)
	}
}

// More files than are worth an fsync each are made durable with one syncfs.
func TestRunStagesAManyFileTree(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	var tree []TreeEntry
	files := map[string]string{}
	for i := range 100 {
		name := fmt.Sprintf("f%03d", i)
		files[name] = "content " + name
		tree = append(tree, TreeEntry{Rel: name, Type: effects.TypeFile, Src: name, Mode: 0o644, UID: -1})
	}
	j := &Journal{Kind: "commit", Ops: []Op{{Kind: Replace, Path: "many", Type: effects.TypeDir, Mode: 0o755, UID: -1, Tree: tree}}}
	if err := Run(root, filepath.Join(t.TempDir(), "journal"), j, opener(files), nil); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(filepath.Join(root, "many"))
	if err != nil || len(ents) != 100 {
		t.Fatalf("many/ holds %d entries, %v; want 100", len(ents), err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "many", "f042")); string(b) != "content f042" {
		t.Errorf("f042 = %q", b)
	}
}

// A refusal while staging leaves the folder as it was: no temporary name,
// no journal, and an error that says nothing changed.
func TestRunRefusesAndLeavesTheFolderAsItWas(t *testing.T) {
	t.Parallel()
	start := map[string]string{"a.txt": "a", "keep/k": "k"}
	for name, tc := range map[string]struct {
		ops  []Op
		want error  // the error, or
		says string // what it says
	}{
		"content changed after it was judged": {ops: []Op{
			{Kind: Replace, Path: "b.txt", Type: effects.TypeFile, Src: "b", Mode: 0o644, UID: -1},
			{Kind: Replace, Path: "a.txt", Type: effects.TypeFile, Src: "a2", Mode: 0o644, UID: -1, Want: sum("what was judged")},
		}, want: ErrSourceChanged},
		"a tree's content changed after it was judged": {ops: []Op{
			{Kind: Replace, Path: "t", Type: effects.TypeDir, Mode: 0o755, UID: -1, Tree: []TreeEntry{
				{Rel: "x", Type: effects.TypeFile, Src: "b", Mode: 0o644, UID: -1, Want: sum("what was judged")},
			}},
		}, want: ErrSourceChanged},
		"content that cannot be read": {ops: []Op{
			{Kind: Replace, Path: "a.txt", Type: effects.TypeFile, Src: "missing", Mode: 0o644, UID: -1},
		}, want: os.ErrNotExist},
		"a tree entry leaving the tree": {ops: []Op{
			{Kind: Replace, Path: "t", Type: effects.TypeDir, Mode: 0o755, UID: -1, Tree: []TreeEntry{
				{Rel: "../escape", Type: effects.TypeFile, Src: "b", Mode: 0o644, UID: -1},
			}},
		}, says: "stage t:"},
		"nothing to stage": {ops: []Op{
			{Kind: Replace, Path: "a.txt", Mode: 0o644, UID: -1},
		}, says: "nothing to stage for type none"},
		"staging into a file": {ops: []Op{
			{Kind: Replace, Path: "a.txt/b", Type: effects.TypeFile, Src: "b", Mode: 0o644, UID: -1},
		}, says: "stage a.txt/b:"},
		"a name staged twice": {ops: []Op{
			{Kind: Replace, Path: "t", Type: effects.TypeDir, Mode: 0o755, UID: -1, Tree: []TreeEntry{
				{Rel: "x", Type: effects.TypeFile, Src: "b", Mode: 0o644, UID: -1},
				{Rel: "x", Type: effects.TypeLink, Target: "y", UID: -1},
			}},
		}, says: "x: file exists"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			writeFiles(t, root, start)
			before := what(t, root)
			journal := filepath.Join(t.TempDir(), "journal")
			j := &Journal{Kind: "commit", Ops: tc.ops}
			err := Run(root, journal, j, opener(map[string]string{"a2": "a2", "b": "b"}), func(*Journal) error {
				t.Error("finish ran for a refused change")
				return nil
			})
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("Run = %v, want %v saying %q", err, tc.want, tc.says)
			}
			if !strings.HasSuffix(err.Error(), "(nothing in the folder changed)") {
				t.Errorf("the error does not say the folder is as it was: %v", err)
			}
			if d := cmp.Diff(before, what(t, root)); d != "" {
				t.Errorf("folder changed (-before +after):\n%s", d)
			}
			if _, err := os.Stat(journal); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the journal stays: %v", err)
			}
		})
	}
}

func TestRunFailsBeforeWritingAnything(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"a.txt": "a"})
	op := Op{Kind: Replace, Path: "a.txt", Type: effects.TypeFile, Src: "a2", Mode: 0o644, UID: -1}
	src := opener(map[string]string{"a2": "a2"})

	err := Run(root, filepath.Join(root, "no", "such", "dir", "journal"), &Journal{Kind: "commit", Ops: []Op{op}}, src, nil)
	if err == nil || !strings.Contains(err.Error(), "commit: write journal: ") || !strings.Contains(err.Error(), "(nothing in the folder changed)") {
		t.Errorf("Run with an unwritable journal = %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(b) != "a" {
		t.Errorf("a.txt = %q", b)
	}

	missing := filepath.Join(t.TempDir(), "gone")
	if err := Run(missing, filepath.Join(t.TempDir(), "journal"), &Journal{Kind: "commit", Ops: []Op{op}}, src, nil); err == nil || !strings.Contains(err.Error(), "open folder "+missing) {
		t.Errorf("Run on a missing folder = %v", err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	if err := Run(link, filepath.Join(t.TempDir(), "journal"), &Journal{Kind: "commit", Ops: []Op{op}}, src, nil); err == nil {
		t.Error("Run through a folder that became a link succeeded")
	}
	if b, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(b) != "a" {
		t.Errorf("a.txt = %q after the refusals", b)
	}
}

// A step that fails once the change is staged keeps the journal, and says
// the next kule call finishes; a move already made before a crash is done.
func TestRollForwardKeepsTheJournalOnAConflict(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		files map[string]string
		says  string
	}{
		"both ends of a move exist": {map[string]string{"from": "f", "to": "t"}, "both from and to exist"},
		"a move's source is gone":   {map[string]string{}, "from is gone"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			writeFiles(t, root, tc.files)
			journal := filepath.Join(t.TempDir(), "journal")
			err := Run(root, journal, &Journal{Kind: "commit", Ops: []Op{{Kind: Move, Path: "to", From: "from"}}}, nil, nil)
			if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), "the journal "+journal+" keeps the change") {
				t.Fatalf("Run = %v", err)
			}
			j, err := ReadJournal(journal)
			if err != nil || j.Phase != PhaseStaged {
				t.Fatalf("journal: %+v, %v; want it kept, staged", j, err)
			}
		})
	}
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"to": "moved before the crash"})
	journal := filepath.Join(t.TempDir(), "journal")
	if err := writeJournal(journal, &Journal{ID: "0a", Kind: "commit", Phase: PhaseStaged, Ops: []Op{{Kind: Move, Path: "to", From: "from"}, {Kind: OpKind("rename"), Path: "x"}}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Recover(root, journal, nil); err == nil || !strings.Contains(err.Error(), `unknown op "rename"`) {
		t.Errorf("Recover of an unknown op = %v", err)
	}
}

// Recover with no journal does nothing; a journal still staging is rolled
// back (its temporary names removed); a staged one is rolled forward and
// finished.
func TestRecover(t *testing.T) {
	t.Parallel()
	t.Run("no journal", func(t *testing.T) {
		t.Parallel()
		j, fwd, err := Recover(t.TempDir(), filepath.Join(t.TempDir(), "journal"), nil)
		if j != nil || fwd || err != nil {
			t.Fatalf("Recover = %v, %v, %v", j, fwd, err)
		}
	})
	t.Run("staging rolls back", func(t *testing.T) {
		t.Parallel()
		root := t.TempDir()
		writeFiles(t, root, map[string]string{"a.txt": "a", "sub/.kule-0b-0.tmp": "staged", ".kule-0b-1.tmp/x": "staged tree"})
		journal := filepath.Join(t.TempDir(), "journal")
		if err := writeJournal(journal, &Journal{ID: "0b", Kind: "commit", Phase: PhaseStaging, Ops: []Op{
			{Kind: Replace, Path: "sub/b.txt", Tmp: ".kule-0b-0.tmp"},
			{Kind: Replace, Path: "t", Tmp: ".kule-0b-1.tmp"},
			{Kind: Replace, Path: "nodir/c.txt", Tmp: ".kule-0b-2.tmp"},
		}}); err != nil {
			t.Fatal(err)
		}
		j, fwd, err := Recover(root, journal, func(*Journal) error { t.Error("finish ran on a roll-back"); return nil })
		if err != nil || fwd || j == nil || j.ID != "0b" {
			t.Fatalf("Recover = %+v, %v, %v", j, fwd, err)
		}
		if d := cmp.Diff([]string{`a.txt 0644 "a"`, "sub/ 0755"}, what(t, root)); d != "" {
			t.Errorf("folder (-want +got):\n%s", d)
		}
		if _, err := os.Stat(journal); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the journal stays: %v", err)
		}
	})
	t.Run("a damaged journal is left as it is", func(t *testing.T) {
		t.Parallel()
		for name, op := range map[string]Op{
			"path":  {Kind: Remove, Path: "../x"},
			"from":  {Kind: Move, Path: "x", From: "/etc/passwd"},
			"tmp":   {Kind: Replace, Path: "x", Tmp: "../../x"},
			"trash": {Kind: Remove, Path: "x", Trash: ".."},
		} {
			root := t.TempDir()
			writeFiles(t, root, map[string]string{"x": "x"})
			journal := filepath.Join(t.TempDir(), "journal")
			if err := writeJournal(journal, &Journal{ID: "0c", Kind: "commit", Phase: PhaseStaged, Ops: []Op{op}}); err != nil {
				t.Fatal(err)
			}
			if _, _, err := Recover(root, journal, nil); !errors.Is(err, ErrJournalDamaged) {
				t.Errorf("%s: Recover = %v, want ErrJournalDamaged", name, err)
			}
			if _, err := os.Stat(journal); err != nil {
				t.Errorf("%s: the damaged journal is gone: %v", name, err)
			}
			if b, _ := os.ReadFile(filepath.Join(root, "x")); string(b) != "x" {
				t.Errorf("%s: x = %q", name, b)
			}
		}
		journal := filepath.Join(t.TempDir(), "journal")
		if err := os.WriteFile(journal, []byte(`{"id":`), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, err := Recover(t.TempDir(), journal, nil); !errors.Is(err, ErrJournalDamaged) || !strings.Contains(err.Error(), "keep a copy of it") {
			t.Errorf("unreadable journal: %v", err)
		}
	})
	t.Run("a missing folder", func(t *testing.T) {
		t.Parallel()
		journal := filepath.Join(t.TempDir(), "journal")
		if err := writeJournal(journal, &Journal{ID: "0d", Kind: "commit", Phase: PhaseStaged}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := Recover(filepath.Join(t.TempDir(), "gone"), journal, nil); err == nil || !strings.Contains(err.Error(), "open folder") {
			t.Errorf("Recover = %v", err)
		}
	})
}

// A finish that fails leaves the folder changed and the journal staged; the
// next call's Recover finishes it, and the change is not applied twice.
func TestAFailedFinishIsFinishedByRecover(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"a.txt": "a", "old/x": "x"})
	journal := filepath.Join(t.TempDir(), "journal")
	j := &Journal{Kind: "commit", Ops: []Op{
		{Kind: Replace, Path: "a.txt", Type: effects.TypeFile, Src: "a2", Mode: 0o644, UID: -1},
		{Kind: Remove, Path: "old"},
		{Kind: Chmod, Path: "a.txt", Mode: 0o600},
	}}
	err := Run(root, journal, j, opener(map[string]string{"a2": "a2"}), func(*Journal) error { return errors.New("history is full") })
	if err == nil || !strings.Contains(err.Error(), "the folder holds the change, but finishing failed: history is full") {
		t.Fatalf("Run = %v", err)
	}
	want := []string{`a.txt 0600 "a2"`}
	if d := cmp.Diff(want, what(t, root)); d != "" {
		t.Errorf("folder (-want +got):\n%s", d)
	}
	var got *Journal
	rj, fwd, err := Recover(root, journal, func(j *Journal) error { got = j; return nil })
	if err != nil || !fwd || got == nil || got.ID != rj.ID || rj.ID != j.ID {
		t.Fatalf("Recover = %+v, %v, %v (finish saw %+v)", rj, fwd, err, got)
	}
	if d := cmp.Diff(want, what(t, root)); d != "" {
		t.Errorf("folder after Recover (-want +got):\n%s", d)
	}
	if _, err := os.Stat(journal); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the journal stays: %v", err)
	}
}

// A crash right after the journal says "staged" (the temporary names are
// there, nothing is renamed yet) is rolled forward by Recover: every op,
// once, and nothing of Kule's stays.
func TestACrashOnceStagedRollsForward(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"a.txt": "a", "dir/x": "x", "mv": "m", "gone.txt": "g"})
	journal := filepath.Join(t.TempDir(), "journal")
	type crash struct{}
	restore := crashpoint.SetHook(func(step string) {
		if step == "crashtest.staged" {
			panic(crash{})
		}
	})
	defer restore()
	j := &Journal{Kind: "crashtest", Ops: []Op{
		{Kind: Replace, Path: "a.txt", Type: effects.TypeFile, Src: "a2", Mode: 0o644, UID: -1},
		{Kind: Replace, Path: "dir", Type: effects.TypeLink, Target: "a.txt", UID: -1},
		{Kind: Move, Path: "moved", From: "mv"},
		{Kind: Remove, Path: "gone.txt"},
	}}
	func() {
		defer func() {
			if r := recover(); r == nil {
				t.Fatal("Run did not reach its staged step")
			} else if _, ok := r.(crash); !ok {
				panic(r)
			}
		}()
		_ = Run(root, journal, j, opener(map[string]string{"a2": "a2"}), nil)
	}()
	restore()
	if l := leftovers(root); len(l) != 2 {
		t.Fatalf("staged names at the crash: %v, want two", l)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(b) != "a" {
		t.Fatalf("a.txt = %q before the roll-forward", b)
	}
	finished := 0
	if _, fwd, err := Recover(root, journal, func(*Journal) error { finished++; return nil }); err != nil || !fwd {
		t.Fatalf("Recover = %v, %v", fwd, err)
	}
	want := []string{`a.txt 0644 "a2"`, "dir -> a.txt", `moved 0644 "m"`}
	if d := cmp.Diff(want, what(t, root)); d != "" {
		t.Errorf("folder (-want +got):\n%s", d)
	}
	if l := leftovers(root); len(l) != 0 || finished != 1 {
		t.Errorf("left behind %v; finish ran %d times", l, finished)
	}
	// Recovering again finds no journal and changes nothing.
	if rj, _, err := Recover(root, journal, nil); rj != nil || err != nil {
		t.Errorf("a second Recover = %+v, %v", rj, err)
	}
}

func TestNewIDIsFresh(t *testing.T) {
	t.Parallel()
	a, b := NewID(), NewID()
	if len(a) != 12 || a == b || strings.Trim(a, "0123456789abcdef") != "" {
		t.Errorf("NewID = %q then %q", a, b)
	}
}

// A failing Opener's reader error reaches the caller.
func TestRunReportsAFailingRead(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	bad := func(string) (io.ReadCloser, error) { return io.NopCloser(errReader{}), nil }
	err := Run(root, filepath.Join(t.TempDir(), "journal"), &Journal{Kind: "undo", Ops: []Op{
		{Kind: Replace, Path: "a", Type: effects.TypeFile, Src: "a", Mode: 0o644, UID: -1},
	}}, bad, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "undo: stage a: read failed") {
		t.Fatalf("Run = %v", err)
	}
	if l := leftovers(root); len(l) != 0 {
		t.Errorf("left behind: %v", l)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("read failed") }
