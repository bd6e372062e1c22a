package gitstate

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func (w *world) short(dir, rev string) string {
	w.t.Helper()
	return run(w.t, dir, "rev-parse", "--short=7", rev)
}

type scenario struct {
	setup  func(folder string) // in the folder before the copy is made
	task   func(w *world)      // in the copy
	person func(w *world)      // in the folder, meanwhile
	// lines returns the effect lines expected; it may read ids from w.
	lines   func(w *world) []string
	outcome string // applied, waits or conflict
	opts    ApplyOptions
	// after checks the folder once Apply ran.
	after func(w *world)
}

func commitIn(dir, file, content, msg string) func(w *world) {
	return func(w *world) {
		write(w.t, filepath.Join(dir, file), content)
		run(w.t, dir, "add", file)
		run(w.t, dir, "commit", "-q", "-m", msg)
	}
}

func TestScenarios(t *testing.T) {
	t.Parallel()
	taskCommit := func(w *world) {
		write(t, filepath.Join(w.copy, "a.txt"), "one\ntwo\nthree\n")
		run(t, w.copy, "commit", "-q", "-am", "third")
	}
	ffLines := func(w *world) []string {
		return []string{
			"git: 3 new object files",
			"git: main " + w.short(w.folder, "main") + " → " + w.short(w.copy, "main") + " · fast-forward · 1 commit",
			"git: index +0 ~1 -0 (a.txt)",
		}
	}
	logIs := func(want string) func(w *world) {
		return func(w *world) {
			if got := run(w.t, w.folder, "log", "--format=%s", "main"); got != want {
				w.t.Errorf("folder log main:\n%s\nwant:\n%s", got, want)
			}
		}
	}
	cases := map[string]scenario{
		"task commits, person runs git status": {
			task: taskCommit,
			person: func(w *world) {
				os.Chtimes(filepath.Join(w.folder, "b.txt"), clockTime(), clockTime())
				run(w.t, w.folder, "status", "--porcelain")
			},
			lines:   ffLines,
			outcome: "applied",
			after: func(w *world) {
				logIs("third\nsecond\nfirst")(w)
				w.syncFiles("a.txt")
				if st := run(w.t, w.folder, "status", "--porcelain"); st != "" {
					w.t.Errorf("folder status after commit and file sync = %q, want clean", st)
				}
			},
		},
		"person packs refs and runs gc": {
			task: taskCommit,
			person: func(w *world) {
				run(w.t, w.folder, "pack-refs", "--all")
				run(w.t, w.folder, "gc", "-q")
			},
			lines:   ffLines,
			outcome: "applied",
			after:   logIs("third\nsecond\nfirst"),
		},
		"person commits on another branch": {
			task: taskCommit,
			person: func(w *world) {
				run(w.t, w.folder, "checkout", "-q", "feature")
				commitIn(w.folder, "f.txt", "person\n", "person on feature")(w)
				run(w.t, w.folder, "checkout", "-q", "main")
			},
			lines:   ffLines,
			outcome: "applied",
			after: func(w *world) {
				logIs("third\nsecond\nfirst")(w)
				if got := run(w.t, w.folder, "log", "-1", "--format=%s", "feature"); got != "person on feature" {
					w.t.Errorf("feature lost the person's commit: %q", got)
				}
			},
		},
		"person switches branches and back": {
			task: taskCommit,
			person: func(w *world) {
				run(w.t, w.folder, "checkout", "-q", "feature")
				run(w.t, w.folder, "checkout", "-q", "main")
			},
			lines:   ffLines,
			outcome: "applied",
			after:   logIs("third\nsecond\nfirst"),
		},
		"person switches branch and stays": {
			task: taskCommit,
			person: func(w *world) {
				run(w.t, w.folder, "checkout", "-q", "feature")
			},
			lines:   ffLines,
			outcome: "conflict",
		},
		"person commits on the same branch": {
			task: taskCommit,
			person: func(w *world) {
				commitIn(w.folder, "b.txt", "person\n", "person on main")(w)
			},
			lines:   ffLines,
			outcome: "conflict",
		},
		"task makes a branch": {
			task: func(w *world) { run(w.t, w.copy, "branch", "topic", "HEAD~1") },
			lines: func(w *world) []string {
				return []string{"git: new branch topic at " + w.short(w.folder, "main~1")}
			},
			outcome: "applied",
			after: func(w *world) {
				if got := run(w.t, w.folder, "log", "--format=%s", "topic"); got != "first" {
					w.t.Errorf("topic log = %q", got)
				}
			},
		},
		"task rebases a branch": {
			setup: func(folder string) {
				r := func(args ...string) { run(t, folder, args...) }
				r("checkout", "-q", "feature")
				write(t, filepath.Join(folder, "f.txt"), "feature\n")
				r("add", "f.txt")
				r("commit", "-q", "-m", "on feature")
				r("checkout", "-q", "main")
			},
			task: func(w *world) {
				taskCommit(w)
				run(w.t, w.copy, "rebase", "-q", "main", "feature")
				run(w.t, w.copy, "checkout", "-q", "main")
			},
			lines: func(w *world) []string {
				return []string{
					"git: 5 new object files",
					"git: feature " + w.short(w.folder, "feature") + " → " + w.short(w.copy, "feature") + " · history rewrite (not a fast-forward)",
					"git: main " + w.short(w.folder, "main") + " → " + w.short(w.copy, "main") + " · fast-forward · 1 commit",
					"git: index +0 ~1 -0 (a.txt)",
				}
			},
			outcome: "waits",
			after: func(w *world) {
				if got := run(w.t, w.folder, "log", "--format=%s", "feature"); got != "on feature\nthird\nsecond\nfirst" {
					w.t.Errorf("feature log = %q", got)
				}
			},
		},
		"task stages then edits the file again": {
			task: func(w *world) {
				write(w.t, filepath.Join(w.copy, "c.txt"), "v1\n")
				run(w.t, w.copy, "add", "c.txt")
				write(w.t, filepath.Join(w.copy, "c.txt"), "v2\n")
			},
			lines: func(w *world) []string {
				return []string{
					"git: 1 new object file",
					"git: index +1 ~0 -0 (c.txt)",
					"git: staged content differs from the file (the next git commit would record it): c.txt",
				}
			},
			outcome: "waits",
		},
		"task untracks a file it keeps": {
			task: func(w *world) { run(w.t, w.copy, "rm", "-q", "--cached", "b.txt") },
			lines: func(w *world) []string {
				return []string{
					"git: index +0 ~0 -1 (b.txt)",
					"git: staged content differs from the file (the next git commit would record it): b.txt",
				}
			},
			outcome: "waits",
		},
		"task stages, person stages another path": {
			task: func(w *world) {
				write(w.t, filepath.Join(w.copy, "c.txt"), "task\n")
				run(w.t, w.copy, "add", "c.txt")
			},
			person: func(w *world) {
				write(w.t, filepath.Join(w.folder, "d.txt"), "person\n")
				run(w.t, w.folder, "add", "d.txt")
			},
			lines: func(w *world) []string {
				return []string{"git: 1 new object file", "git: index +1 ~0 -0 (c.txt)"}
			},
			outcome: "applied",
			after: func(w *world) {
				w.syncFiles("c.txt")
				if st := run(w.t, w.folder, "status", "--porcelain"); st != "A  c.txt\nA  d.txt" {
					w.t.Errorf("folder status = %q, want both staged", st)
				}
			},
		},
		"task and person stage the same path": {
			task: func(w *world) {
				write(w.t, filepath.Join(w.copy, "c.txt"), "task\n")
				run(w.t, w.copy, "add", "c.txt")
			},
			person: func(w *world) {
				write(w.t, filepath.Join(w.folder, "c.txt"), "person\n")
				run(w.t, w.folder, "add", "c.txt")
			},
			lines: func(w *world) []string {
				return []string{"git: 1 new object file", "git: index +1 ~0 -0 (c.txt)"}
			},
			outcome: "conflict",
		},
		"task adds a hook, not approved": {
			task: func(w *world) {
				p := filepath.Join(w.copyGit(), "hooks", "pre-commit")
				write(w.t, p, "#!/bin/sh\necho pwned\n")
				os.Chmod(p, 0o755)
			},
			lines: func(w *world) []string {
				return []string{"git: hook pre-commit added (it runs on the next matching git command)"}
			},
			outcome: "applied",
			after: func(w *world) {
				if _, err := os.Stat(filepath.Join(w.folderGit(), "hooks", "pre-commit")); err == nil {
					w.t.Error("an unapproved hook reached the folder")
				}
			},
		},
		"task adds a hook, approved": {
			task: func(w *world) {
				p := filepath.Join(w.copyGit(), "hooks", "pre-commit")
				write(w.t, p, "#!/bin/sh\nexit 0\n")
				os.Chmod(p, 0o755)
			},
			lines: func(w *world) []string {
				return []string{"git: hook pre-commit added (it runs on the next matching git command)"}
			},
			outcome: "applied",
			opts:    ApplyOptions{Hooks: true},
			after: func(w *world) {
				st, err := os.Stat(filepath.Join(w.folderGit(), "hooks", "pre-commit"))
				if err != nil || st.Mode()&0o111 == 0 {
					w.t.Errorf("approved hook not applied as executable: %v", err)
				}
			},
		},
		"task changes config, approved": {
			task: func(w *world) { run(w.t, w.copy, "config", "core.pager", "cat") },
			lines: func(w *world) []string {
				return []string{"git: config changed (it can make the next git command run code)"}
			},
			outcome: "applied",
			opts:    ApplyOptions{Config: true},
			after: func(w *world) {
				if got := run(w.t, w.folder, "config", "core.pager"); got != "cat" {
					w.t.Errorf("config core.pager = %q", got)
				}
			},
		},
		"task deletes a packed branch": {
			setup: func(folder string) { run(t, folder, "pack-refs", "--all") },
			task:  func(w *world) { run(w.t, w.copy, "branch", "-q", "-D", "feature") },
			lines: func(w *world) []string {
				return []string{"git: feature deleted (was " + w.short(w.folder, "feature") + ")"}
			},
			outcome: "applied",
			after: func(w *world) {
				if _, err := tryRun(w.folder, "rev-parse", "--verify", "-q", "refs/heads/feature"); err == nil {
					w.t.Error("feature still exists in the folder")
				}
			},
		},
		"task checks out another branch": {
			task: func(w *world) { run(w.t, w.copy, "checkout", "-q", "feature") },
			lines: func(w *world) []string {
				return []string{"git: HEAD main → feature"}
			},
			outcome: "applied",
			after: func(w *world) {
				if got := run(w.t, w.folder, "symbolic-ref", "HEAD"); got != "refs/heads/feature" {
					w.t.Errorf("folder HEAD = %q", got)
				}
			},
		},
		"only noise": {
			task: func(w *world) {
				os.Chtimes(filepath.Join(w.copy, "a.txt"), clockTime(), clockTime())
				run(w.t, w.copy, "status", "--porcelain")
				run(w.t, w.copy, "update-ref", "ORIG_HEAD", "HEAD~1")
				write(w.t, filepath.Join(w.copyGit(), "FETCH_HEAD"), "x\n")
				write(w.t, filepath.Join(w.copyGit(), "refs", "heads", "main.lock"), "junk\n")
				write(w.t, filepath.Join(w.copyGit(), "logs", "HEAD"), "junk\n")
				write(w.t, filepath.Join(w.copyGit(), "hooks", "pre-push.sample"), "#!/bin/sh\n")
				write(w.t, filepath.Join(w.copyGit(), "objects", "info", "commit-graph"), "junk")
			},
			lines:   func(w *world) []string { return nil },
			outcome: "applied",
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, c.setup)
			w.t = t
			if c.task != nil {
				c.task(w)
			}
			eff := w.compare()
			want := c.lines(w)
			if diff := cmp.Diff(want, eff.Lines()); diff != "" {
				t.Errorf("effect lines (-want +got):\n%s", diff)
			}
			if c.person != nil {
				c.person(w)
			}
			before, err := Take(w.folderGit())
			if err != nil {
				t.Fatal(err)
			}
			checkErr := Check(w.base, w.folderGit(), eff)
			if got := outcome(checkErr, eff); got != c.outcome {
				t.Fatalf("outcome = %s, want %s (check: %v)", got, c.outcome, checkErr)
			}
			if c.outcome == "conflict" {
				// Apply refuses too, and leaves the folder as it was.
				if _, err := Apply(w.base, w.folderGit(), w.copyGit(), eff, c.opts); !errors.Is(err, ErrConflict) {
					t.Fatalf("Apply after a conflict = %v, want ErrConflict", err)
				}
				assertSameMeaning(t, before, w.folderGit())
				w.fsck()
				return
			}
			// "waits" is the policy's verdict; once a person approves, the
			// commit applies the same way.
			undo, err := Apply(w.base, w.folderGit(), w.copyGit(), eff, c.opts)
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			w.fsck()
			after, err := Take(w.folderGit())
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range eff.Refs {
				if after.Refs[r.Name] != r.New {
					t.Errorf("after Apply %s = %q, want %q", r.Name, after.Refs[r.Name], r.New)
				}
			}
			if c.after != nil {
				c.after(w)
			}
			// Applying again finishes nothing more (roll-forward after a crash).
			if _, err := Apply(w.base, w.folderGit(), w.copyGit(), eff, c.opts); err != nil {
				t.Fatalf("Apply again: %v", err)
			}
			// The undo record survives JSON, as the engine stores it.
			undo = roundTripUndo(t, undo)
			if err := Revert(w.folderGit(), undo); err != nil {
				t.Fatalf("Revert: %v", err)
			}
			assertSameMeaning(t, before, w.folderGit())
			w.fsck()
		})
	}
}

// assertSameMeaning checks that the folder's refs, index entries, hooks and
// config are what they were.
func assertSameMeaning(t *testing.T, want *Snapshot, gitDir string) {
	t.Helper()
	got, err := Take(gitDir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.Refs, got.Refs); diff != "" {
		t.Errorf("refs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want.Index, got.Index); diff != "" {
		t.Errorf("index (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want.Hooks, got.Hooks); diff != "" {
		t.Errorf("hooks (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want.Config, got.Config); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
}

func roundTripUndo(t *testing.T, u *Undo) *Undo {
	t.Helper()
	b, err := jsonMarshal(u)
	if err != nil {
		t.Fatal(err)
	}
	var out Undo
	if err := jsonUnmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

func TestRevertRefusesWhenFolderMoved(t *testing.T) {
	t.Parallel()
	w := newWorld(t, nil)
	write(t, filepath.Join(w.copy, "a.txt"), "changed\n")
	run(t, w.copy, "commit", "-q", "-am", "task")
	eff := w.compare()
	undo, err := Apply(w.base, w.folderGit(), w.copyGit(), eff, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.syncFiles("a.txt")
	commitIn(w.folder, "b.txt", "after\n", "person after the commit")(w)
	err = Revert(w.folderGit(), undo)
	if !errors.Is(err, ErrMoved) || !strings.Contains(err.Error(), "main: moved to") {
		t.Fatalf("Revert = %v, want ErrMoved naming main", err)
	}
	if got := run(t, w.folder, "log", "-1", "--format=%s"); got != "person after the commit" {
		t.Errorf("Revert changed the folder: main at %q", got)
	}
}

func TestConflictNamesTheBranch(t *testing.T) {
	t.Parallel()
	w := newWorld(t, nil)
	commitIn(w.copy, "a.txt", "task\n", "task")(w)
	eff := w.compare()
	commitIn(w.folder, "b.txt", "person\n", "person")(w)
	err := Check(w.base, w.folderGit(), eff)
	var ce *ConflictError
	if !errors.As(err, &ce) || len(ce.Items) != 1 || !strings.HasPrefix(ce.Items[0], "main: the folder moved it") {
		t.Fatalf("Check = %v, want a conflict naming main", err)
	}
}
