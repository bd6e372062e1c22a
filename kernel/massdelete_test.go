package kernel_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/internal/effects"
)

func fortyFiles(t *testing.T) *fixture {
	files := map[string]string{}
	for i := range 40 {
		files[fmt.Sprintf("notes/n%02d.md", i)] = strings.Repeat("a line of notes\n", 8)
	}
	return newFixture(t, files)
}

func rmRange(from, to int) string {
	var s []string
	for i := from; i < to; i++ {
		s = append(s, fmt.Sprintf("notes/n%02d.md", i))
	}
	return "rm " + strings.Join(s, " ")
}

// Deletions add up over the task's commits: 15 and then 15 more ask as 30
// in one commit do (a folder that is not a repository asks above 20).
func TestMassDeleteCountsAcrossCommits(t *testing.T) {
	run := func(t *testing.T) (first, second []effects.Effect, f *fixture) {
		f = fortyFiles(t)
		tk := f.newTask()
		f.sh(tk, rmRange(0, 15))
		rep, err := f.k.Commit(context.Background(), tk, kernel.CommitOptions{Policy: true})
		if err != nil {
			t.Fatal(err)
		}
		first = rep.Applied
		f.sh(tk, rmRange(15, 30))
		rep, err = f.k.Commit(context.Background(), tk, kernel.CommitOptions{Policy: true})
		if err != nil {
			t.Fatal(err)
		}
		return first, rep.Applied, f
	}
	t.Run("counted per commit, the second 15 pass", func(t *testing.T) {
		kernel.SkipDeletedCount(t)
		first, second, _ := run(t)
		if len(first) != 15 || len(second) != 15 {
			t.Fatalf("without the count the commits applied %d and %d: the test shows nothing", len(first), len(second))
		}
	})
	first, second, f := run(t)
	if len(first) != 15 {
		t.Fatalf("the first 15 deletions applied %d", len(first))
	}
	if len(second) != 0 {
		t.Errorf("the second 15 deletions applied %d, want them to wait as a mass delete", len(second))
	}
	if _, err := os.Stat(filepath.Join(f.folder, "notes", "n20.md")); err != nil {
		t.Errorf("n20.md left the folder: %v", err)
	}
}

// Overwriting 30 files to (almost) nothing is a mass delete too.
func TestMassDeleteCountsTruncations(t *testing.T) {
	f := fortyFiles(t)
	tk := f.newTask()
	f.sh(tk, `for f in notes/n0*.md notes/n1*.md notes/n2*.md; do echo x > "$f"; done`)
	st, err := f.k.Status(context.Background(), tk)
	if err != nil {
		t.Fatal(err)
	}
	j, err := f.k.JudgeStatus(tk, st, false, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := j.Overall(); got != kernel.RulingWaits {
		t.Fatalf("30 files emptied: ruling %s, want waits", got)
	}
	for _, v := range j.Reasons() {
		if !strings.Contains(strings.Join(v.Rules, ","), "mass-deletes") {
			t.Errorf("%s waits for another reason", v)
		}
	}
	rep, err := f.k.Commit(context.Background(), tk, kernel.CommitOptions{Policy: true})
	if err != nil || len(rep.Applied) != 0 {
		t.Fatalf("commit applied %d (%v), want none", len(rep.Applied), err)
	}
	if b, _ := os.ReadFile(filepath.Join(f.folder, "notes", "n05.md")); len(b) < 100 {
		t.Errorf("n05.md in the folder holds %q", b)
	}
	// A person approves: the count starts over.
	if rep, err = f.k.Commit(context.Background(), tk, kernel.CommitOptions{Policy: true, Approve: true}); err != nil || len(rep.Applied) != 30 {
		t.Fatalf("commit --approve applied %d (%v), want 30", len(rep.Applied), err)
	}
	f.sh(tk, rmRange(30, 35))
	if rep, err = f.k.Commit(context.Background(), tk, kernel.CommitOptions{Policy: true}); err != nil || len(rep.Applied) != 5 {
		t.Errorf("after an approved mass delete, 5 deletions applied %d (%v), want 5", len(rep.Applied), err)
	}
}
