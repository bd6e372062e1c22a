package homelayer

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A layer made path by path (what runs changed in an agent's kept home)
// lists each change against the home as it was when it was tracked,
// applies one only while the home still holds that, and undoes it.
func TestTrackedLayerReviewsAppliesAndUndoes(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "kept-home")
	mk := func(root, rel, c string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mk(home, "settings.json", `{"a":1}`)
	mk(home, "hooks/start.sh", "echo start")
	mk(home, "hooks/gone.sh", "echo gone")
	l := Layer{Dir: filepath.Join(dir, "task", "changes"), Record: filepath.Join(dir, "task", "changes.json")}
	// The run's versions: settings changed, a hook added, one removed, and
	// CLAUDE.md made where the kept home has none.
	mk(l.Dir, "settings.json", `{"a":2}`)
	mk(l.Dir, "hooks/start.sh", "echo start")
	mk(l.Dir, "hooks/new.sh", "curl evil")
	mk(l.Dir, "CLAUDE.md", "obey")
	for _, rel := range []string{"settings.json", "hooks", "CLAUDE.md"} {
		if err := Track(l, home, rel); err != nil {
			t.Fatal(err)
		}
	}
	ch, err := Changes(l)
	if err != nil {
		t.Fatal(err)
	}
	want := []Change{{Path: "CLAUDE.md", Kind: "add"}, {Path: "hooks/gone.sh", Kind: "delete"}, {Path: "hooks/new.sh", Kind: "add"}, {Path: "settings.json", Kind: "modify"}}
	if d := cmp.Diff(want, ch); d != "" {
		t.Fatalf("changes (-want +got):\n%s", d)
	}
	mine, theirs, err := Diff(l, "settings.json")
	if err != nil || string(mine) != `{"a":1}` || string(theirs) != `{"a":2}` {
		t.Fatalf("diff: %q %q %v", mine, theirs, err)
	}
	kept := filepath.Join(dir, "task", "kept")
	if err := Apply(l, kept, "settings.json"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(home, "settings.json")); string(b) != `{"a":2}` {
		t.Fatalf("applied settings hold %q", b)
	}
	// Nothing else reached the kept home.
	if _, err := os.Stat(filepath.Join(home, "hooks", "new.sh")); err == nil {
		t.Fatal("a change not applied reached the kept home")
	}
	if p, err := Undo(l, kept); err != nil || p != "settings.json" {
		t.Fatalf("undo: %q %v", p, err)
	}
	if b, _ := os.ReadFile(filepath.Join(home, "settings.json")); string(b) != `{"a":1}` {
		t.Fatalf("undone settings hold %q", b)
	}
	// The kept home changed since (by hand): no apply writes over that.
	mk(home, "CLAUDE.md", "mine")
	if err := Apply(l, kept, "CLAUDE.md"); !errors.Is(err, ErrPersonChanged) {
		t.Fatalf("apply over a changed kept home: %v", err)
	}
	// A later run's change to the same path is tracked anew, against the
	// kept home as it is then.
	if err := Track(l, home, "CLAUDE.md"); err != nil {
		t.Fatal(err)
	}
	if err := Apply(l, kept, "CLAUDE.md"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(home, "CLAUDE.md")); string(b) != "obey" {
		t.Fatalf("CLAUDE.md holds %q", b)
	}
}

// A damaged record is not written over by a later run's change.
func TestTrackKeepsADamagedRecord(t *testing.T) {
	dir := t.TempDir()
	l := Layer{Dir: filepath.Join(dir, "changes"), Record: filepath.Join(dir, "changes.json")}
	os.WriteFile(l.Record, []byte("{not json"), 0o600)
	if err := Track(l, filepath.Join(dir, "home"), "settings.json"); err == nil {
		t.Fatal("a damaged record was written over")
	}
	if b, _ := os.ReadFile(l.Record); string(b) != "{not json" {
		t.Fatalf("the record now holds %q", b)
	}
	if err := Track(l, filepath.Join(dir, "home"), "../x"); err == nil {
		t.Fatal("a path out of the home was tracked")
	}
}
