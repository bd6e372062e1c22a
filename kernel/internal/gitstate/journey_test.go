package gitstate

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// What a person checks after a commit that carried a task's git work into
// their folder, and after its undo: git's own view of the repository.

// carryOut does the writes of a plan as the engine's journal does: each
// file still holds what the plan saw, then it is replaced or removed.
func carryOut(t *testing.T, root string, writes []Write) {
	t.Helper()
	for _, w := range writes {
		if _, err := w.Rel(root); err != nil {
			t.Fatalf("a planned write lies outside the folder: %v", err)
		}
		got, err := ExpectOf(w.Path)
		if err != nil {
			t.Fatal(err)
		}
		if got != w.Expect {
			t.Fatalf("%s changed since it was planned", w.Path)
		}
		if w.Remove {
			// A packed ref has no loose file to remove (Expect is "").
			if err := os.Remove(w.Path); err != nil && !(os.IsNotExist(err) && w.Expect == "") {
				t.Fatal(err)
			}
			continue
		}
		mode := w.Mode
		if mode == 0 {
			mode = 0o644
		}
		if err := os.MkdirAll(filepath.Dir(w.Path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(w.Path+".lock", w.Data, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(w.Path+".lock", w.Path); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPlannedCommitAndUndoAsGitSeesThem(t *testing.T) {
	t.Parallel()
	w := newWorld(t, func(folder string) {
		// feature lives in packed-refs only, as after git gc.
		run(t, folder, "pack-refs", "--all", "--prune")
	})
	base, err := TakeBase(w.copy)
	if err != nil {
		t.Fatal(err)
	}
	oldMain := run(t, w.folder, "rev-parse", "main")
	oldFeature := run(t, w.folder, "rev-parse", "feature")

	// The task commits, tags the commit, and deletes a packed branch.
	write(t, filepath.Join(w.copy, "c.txt"), "sea\n")
	run(t, w.copy, "add", "c.txt")
	run(t, w.copy, "commit", "-q", "-m", "task")
	run(t, w.copy, "tag", "-a", "v1", "-m", "release one")
	run(t, w.copy, "branch", "-D", "feature")
	run(t, w.copy, "config", "user.name", "Task")

	effs, err := base.Compare(w.copy)
	if err != nil {
		t.Fatal(err)
	}
	DescribeConfig(w.folder, w.copy, effs)
	var lines []string
	for _, e := range effs {
		lines = append(lines, e.Lines()...)
	}
	joined := strings.Join(lines, "\n")
	for _, want := range []string{"main", "v1", "feature", "user.name"} {
		if !strings.Contains(joined, want) {
			t.Errorf("the effects do not mention %s:\n%s", want, joined)
		}
	}
	var tagBrings []PathChange
	for _, e := range effs {
		for _, r := range e.Refs {
			if r.Name == "refs/tags/v1" {
				tagBrings = r.Brings
			}
		}
	}
	if len(tagBrings) != 1 || tagBrings[0] != (PathChange{Path: "c.txt", Kind: "add"}) {
		t.Errorf("the annotated tag brings %v, want c.txt added (the tag peeled to its commit)", tagBrings)
	}

	writes, set, err := base.PlanApply(w.folder, w.copy, effs, ApplyOptions{Config: true, Reflog: "kule: commit"})
	if err != nil {
		t.Fatalf("PlanApply: %v", err)
	}
	if got := run(t, w.folder, "rev-parse", "main"); got != oldMain {
		t.Fatalf("PlanApply moved main before its writes were carried out")
	}
	carryOut(t, w.folder, writes)
	w.syncFiles("c.txt")

	w.fsck()
	if got := run(t, w.folder, "log", "-1", "--format=%s", "main"); got != "task" {
		t.Errorf("folder's main is at %q, want the task's commit", got)
	}
	if got := run(t, w.folder, "cat-file", "-t", "v1"); got != "tag" {
		t.Errorf("v1 is a %s, want an annotated tag", got)
	}
	if out, err := tryRun(w.folder, "rev-parse", "-q", "--verify", "refs/heads/feature"); err == nil {
		t.Errorf("feature survived its deletion (packed-refs kept it): %s", out)
	}
	if got := run(t, w.folder, "status", "--porcelain"); got != "" {
		t.Errorf("git status after the commit:\n%s", got)
	}
	if got := run(t, w.folder, "config", "user.name"); got != "Task" {
		t.Errorf("approved config change: user.name = %q", got)
	}
	if got := run(t, w.folder, "reflog", "-1", "--format=%gs", "main"); got != "kule: commit" {
		t.Errorf("main's reflog says %q, want the commit's message", got)
	}

	sel := set.Selection()
	s := sel["."]
	if !s.Index || !slices.Contains(s.Refs, "refs/heads/main") || !slices.Contains(s.Refs, "refs/heads/feature") || !slices.Contains(s.Config, "config") {
		t.Errorf("the undo's selection = %+v, want the index, main, feature and config", s)
	}
	// The base after the commit holds what was applied: nothing is left
	// pending against the copy.
	after, err := base.AfterSelected(w.copy, sel)
	if err != nil {
		t.Fatal(err)
	}
	again, err := after.Compare(w.copy)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range again {
		if len(e.Refs)+len(e.Index)+len(e.Config) > 0 {
			t.Errorf("after the commit, still pending: %v", e.Lines())
		}
	}

	undo, err := PlanRevert(w.folder, set)
	if err != nil {
		t.Fatalf("PlanRevert: %v", err)
	}
	carryOut(t, w.folder, undo)
	if err := os.Remove(filepath.Join(w.folder, "c.txt")); err != nil {
		t.Fatal(err)
	}
	w.fsck()
	if got := run(t, w.folder, "rev-parse", "main"); got != oldMain {
		t.Errorf("after undo main = %s, want %s", got, oldMain)
	}
	if got := run(t, w.folder, "rev-parse", "feature"); got != oldFeature {
		t.Errorf("after undo feature = %s, want %s", got, oldFeature)
	}
	if out, err := tryRun(w.folder, "rev-parse", "-q", "--verify", "refs/tags/v1"); err == nil {
		t.Errorf("v1 survived the undo: %s", out)
	}
	if got := run(t, w.folder, "status", "--porcelain"); got != "" {
		t.Errorf("git status after the undo:\n%s", got)
	}
	if out, err := tryRun(w.folder, "config", "user.name"); err == nil {
		t.Errorf("the undo kept the task's config: user.name = %s", out)
	}
}

// A selection applies only what it names; the rest stays pending.
func TestOnlySelected(t *testing.T) {
	t.Parallel()
	w := newWorld(t, nil)
	write(t, filepath.Join(w.copy, "c.txt"), "sea\n")
	run(t, w.copy, "add", "c.txt")
	run(t, w.copy, "commit", "-q", "-m", "task")
	run(t, w.copy, "branch", "topic")
	eff := w.compare()
	if (Selection{}).Empty() != true || (Selection{Index: true}).Empty() {
		t.Fatal("Selection.Empty is wrong")
	}
	if got := eff.Only(Selection{}); got != nil {
		t.Fatalf("an empty selection keeps %v", got.Lines())
	}
	only := eff.Only(Selection{Refs: []string{"refs/heads/topic"}})
	if only == nil || len(only.Refs) != 1 || only.Refs[0].Name != "refs/heads/topic" || len(only.Index) != 0 {
		t.Fatalf("Only(topic) = %+v", only)
	}
	if len(only.Objects.Loose)+len(only.Objects.Packs) == 0 {
		t.Error("the new objects do not go with the selected ref")
	}
	if _, err := Apply(w.base, w.folderGit(), w.copyGit(), only, ApplyOptions{}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	w.fsck()
	if got := run(t, w.folder, "log", "-1", "--format=%s", "topic"); got != "task" {
		t.Errorf("topic = %q, want the task's commit", got)
	}
	if got := run(t, w.folder, "log", "-1", "--format=%s", "main"); got != "second" {
		t.Errorf("main moved though it was not selected: %q", got)
	}
}
