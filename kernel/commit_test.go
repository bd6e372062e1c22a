package kernel_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/internal/crashpoint"
	"github.com/kulehq/kule/kernel/internal/policy"
)

// atStep runs fn when the commit reaches step (in this process), once.
func atStep(t *testing.T, step string, fn func()) {
	t.Helper()
	done := false
	restore := crashpoint.SetHook(func(s string) {
		if s == step && !done {
			done = true
			fn()
		}
	})
	t.Cleanup(restore)
}

// The commit judges with the policy itself: what passes goes in, what asks
// stays in the copy until approved, and the report says which is which.
func TestCommitJudgesWithThePolicy(t *testing.T) {
	f := newFixture(t, map[string]string{"notes.md": "a\n", "app/main.go": "package main\n"})
	tk := f.newTask()
	f.sh(tk, "echo b >> notes.md; echo '{}' > package.json; ln -s notes.md latest")
	rep, err := f.k.Commit(context.Background(), tk, kernel.CommitOptions{Policy: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := lines(rep.Applied); !cmp.Equal(got, []string{"~ notes.md"}) {
		t.Fatalf("applied %v, want only notes.md", got)
	}
	waiting, denied := rep.Judgement.Held(rep.Applied)
	var held []string
	for _, v := range waiting {
		held = append(held, v.Request.Path)
	}
	if len(waiting) != 2 || len(denied) != 0 {
		t.Fatalf("held: waiting %v, denied %v; want package.json and latest waiting", held, denied)
	}
	if _, err := os.Lstat(filepath.Join(f.folder, "package.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("package.json reached the folder without approval")
	}
	rep, err = f.k.Commit(context.Background(), tk, kernel.CommitOptions{Policy: true, Approve: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := lines(rep.Applied); len(got) != 2 {
		t.Fatalf("approved commit applied %v, want package.json and latest", got)
	}
	for _, v := range rep.Judgement.Ruling.Verdicts {
		if v.Outcome == policy.Deny {
			t.Fatalf("denied: %v", v)
		}
	}
}

// Paths that appear in the copy after the commit judged it (a command still
// writing) are not applied: not beside the judged effects, not inside a new
// directory the policy saw. They stay in the copy for the next commit.
func TestCommitLeavesOutWhatAppearedAfterJudging(t *testing.T) {
	f := newFixture(t, map[string]string{"notes.md": "a\n"})
	tk := f.newTask()
	f.sh(tk, "echo b >> notes.md; mkdir new; echo n > new/a.txt")
	copyDir := tk.Paths.Copy
	atStep(t, "commit.judged", func() {
		write(t, copyDir, map[string]string{"late.txt": "late\n", "new/late.sh": "#!/bin/sh\n"})
	})
	rep, err := f.k.Commit(context.Background(), tk, kernel.CommitOptions{Policy: true})
	if err != nil {
		t.Fatal(err)
	}
	got := tree(t, f.folder)
	if b, _ := os.ReadFile(filepath.Join(f.folder, "new/a.txt")); string(b) != "n\n" || containsAny(got, "late") {
		t.Fatalf("folder after commit:\n%s\napplied %v", strings.Join(got, "\n"), lines(rep.Applied))
	}
	st, err := f.k.Status(context.Background(), tk)
	if err != nil {
		t.Fatal(err)
	}
	if got := lines(st.Effects); !cmp.Equal(got, []string{"+ late.txt", "+ new/late.sh"}) {
		t.Fatalf("after the commit, status = %v; want the late paths still pending", got)
	}
	// The commit's undo takes back exactly what it applied.
	if _, err := f.k.Undo(context.Background(), tk); err != nil {
		t.Fatal(err)
	}
}

// A file the policy judged that is replaced by a link before it is staged,
// or whose content changes after it was planned, makes the commit refuse
// with nothing applied.
func TestCommitRefusesACopyThatChangedAfterJudging(t *testing.T) {
	for _, tc := range []struct {
		step   string
		change func(copyDir string)
	}{
		{"commit.judged", func(c string) {
			os.Remove(filepath.Join(c, "notes.md"))
			os.Symlink("/etc/passwd", filepath.Join(c, "notes.md"))
		}},
		{"commit.planned", func(c string) { os.WriteFile(filepath.Join(c, "notes.md"), []byte("unjudged\n"), 0o644) }},
		{"commit.planned", func(c string) { os.WriteFile(filepath.Join(c, "new/a.txt"), []byte("unjudged\n"), 0o644) }},
	} {
		t.Run(tc.step, func(t *testing.T) {
			f := newFixture(t, map[string]string{"notes.md": "a\n"})
			tk := f.newTask()
			f.sh(tk, "echo b >> notes.md; mkdir new; echo n > new/a.txt")
			before := tree(t, f.folder)
			atStep(t, tc.step, func() { tc.change(tk.Paths.Copy) })
			_, err := f.k.Commit(context.Background(), tk, kernel.CommitOptions{Policy: true})
			if !errors.Is(err, kernel.ErrCopyChanged) {
				t.Fatalf("commit = %v, want ErrCopyChanged", err)
			}
			if d := cmp.Diff(before, tree(t, f.folder)); d != "" {
				t.Fatalf("the folder changed:\n%s", d)
			}
			noKuleFiles(t, f.folder)
			// Nothing is left for undo to take back.
			if _, err := f.k.Undo(context.Background(), tk); !errors.Is(err, kernel.ErrNothingToUndo) {
				t.Fatalf("undo after a refused commit = %v", err)
			}
		})
	}
}

func noKuleFiles(t *testing.T, folder string) {
	t.Helper()
	_ = filepath.Walk(folder, func(p string, info os.FileInfo, err error) error {
		if err == nil && strings.HasPrefix(filepath.Base(p), ".kule-") {
			t.Errorf("left behind in the folder: %s", p)
		}
		return nil
	})
}

func containsAny(got []string, sub string) bool {
	for _, g := range got {
		if strings.Contains(g, sub) {
			return true
		}
	}
	return false
}
