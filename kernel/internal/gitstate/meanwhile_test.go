package gitstate

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// What the person did in the folder while the task ran is named, one line
// each, and Check refuses before anything is written.
func TestCheckNamesWhatTheFolderDidMeanwhile(t *testing.T) {
	t.Parallel()
	w := newWorld(t, nil)
	// The task: a new branch, a deleted branch, a config and a hook.
	run(t, w.copy, "branch", "topic")
	run(t, w.copy, "branch", "-D", "feature")
	run(t, w.copy, "config", "user.name", "Task")
	write(t, filepath.Join(w.copyGit(), "hooks", "pre-push"), "#!/bin/sh\n")
	eff := w.compare()
	// The person, meanwhile: the same branch elsewhere, the deleted one
	// moved, their own config and hook.
	commitIn(w.folder, "p.txt", "p\n", "person")(w)
	run(t, w.folder, "branch", "topic")
	run(t, w.folder, "branch", "-f", "feature", "main")
	run(t, w.folder, "config", "user.name", "Person")
	write(t, filepath.Join(w.folderGit(), "hooks", "pre-push"), "#!/bin/sh\necho person\n")
	err := Check(w.base, w.folderGit(), eff)
	var ce *ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("Check = %v, want a ConflictError", err)
	}
	msg := strings.Join(ce.Items, "\n")
	for _, want := range []string{"topic: the folder made it at", "feature: the folder moved it", "config: changed in the folder meanwhile", "hook pre-push: changed in the folder meanwhile"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the conflicts do not say %q:\n%s", want, msg)
		}
	}
	_, err = Apply(w.base, w.folderGit(), w.copyGit(), eff, ApplyOptions{Config: true, Hooks: true})
	if !errors.As(err, &ce) {
		t.Fatalf("Apply = %v, want the same ConflictError", err)
	}
	if got := run(t, w.folder, "config", "user.name"); got != "Person" {
		t.Errorf("a refused Apply changed the config: user.name = %q", got)
	}
	// The person deletes the branch the task moved.
	w2 := newWorld(t, nil)
	commitIn(w2.copy, "t.txt", "t\n", "task on feature")(w2)
	run(t, w2.copy, "branch", "-f", "feature", "main")
	eff2 := w2.compare()
	run(t, w2.folder, "branch", "-D", "feature")
	if err := Check(w2.base, w2.folderGit(), eff2); err == nil || !strings.Contains(err.Error(), "feature: the folder deleted it meanwhile") {
		t.Fatalf("Check = %v, want feature deleted meanwhile", err)
	}
}

// A linked worktree's `.git` is a file naming its git directory; Find
// follows it, and a `.git` file git cannot read is a finding, not an error.
func TestGitFilesFound(t *testing.T) {
	t.Parallel()
	needGit(t)
	root := filepath.Join(t.TempDir(), "folder")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, root, "init", "-q", "-b", "main")
	write(t, filepath.Join(root, "a.txt"), "a\n")
	run(t, root, "add", ".")
	run(t, root, "commit", "-q", "-m", "one")
	run(t, root, "worktree", "add", "-q", "wt", "-b", "side")
	write(t, filepath.Join(root, "broken/.git"), "not a gitdir line\n")
	repos, err := Find(root)
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]Repo{}
	for _, r := range repos {
		byPath[r.Path] = r
	}
	wt, ok := byPath["wt"]
	if !ok || !wt.Linked || !strings.HasSuffix(wt.GitDir, filepath.Join(".git", "worktrees", "wt")) {
		t.Errorf("the linked worktree = %+v (found %v), want its gitdir under .git/worktrees", wt, ok)
	}
	broken, ok := byPath["broken"]
	if !ok || !broken.Outside || len(broken.Untrusted) == 0 || !strings.Contains(broken.Untrusted[0], "broken/.git is not a gitdir file") {
		t.Errorf("the broken .git file = %+v (found %v), want a finding naming broken/.git", broken, ok)
	}
}

// Staged content is judged against what the file holds: a staged change
// whose file now says something else (another link target, another mode,
// another type, no file) waits for a person.
func TestStagedDiffersFromTheFile(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		stage, after func(t *testing.T, dir string)
		differs      bool
	}{
		"a link as staged": {
			stage: func(t *testing.T, dir string) { symlink(t, "a.txt", filepath.Join(dir, "l")) },
		},
		"a link retargeted after staging": {
			stage:   func(t *testing.T, dir string) { symlink(t, "a.txt", filepath.Join(dir, "l")) },
			after:   func(t *testing.T, dir string) { relink(t, "b.txt", filepath.Join(dir, "l")) },
			differs: true,
		},
		"a staged link now a file": {
			stage: func(t *testing.T, dir string) { symlink(t, "a.txt", filepath.Join(dir, "l")) },
			after: func(t *testing.T, dir string) {
				if err := os.Remove(filepath.Join(dir, "l")); err != nil {
					t.Fatal(err)
				}
				write(t, filepath.Join(dir, "l"), "a.txt")
			},
			differs: true,
		},
		"a staged file made executable": {
			stage: func(t *testing.T, dir string) { write(t, filepath.Join(dir, "l"), "x\n") },
			after: func(t *testing.T, dir string) {
				if err := os.Chmod(filepath.Join(dir, "l"), 0o755); err != nil {
					t.Fatal(err)
				}
			},
			differs: true,
		},
		"a staged file removed": {
			stage: func(t *testing.T, dir string) { write(t, filepath.Join(dir, "l"), "x\n") },
			after: func(t *testing.T, dir string) {
				if err := os.Remove(filepath.Join(dir, "l")); err != nil {
					t.Fatal(err)
				}
			},
			differs: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, nil)
			tc.stage(t, w.copy)
			run(t, w.copy, "add", "l")
			if tc.after != nil {
				tc.after(t, w.copy)
			}
			eff := w.compare()
			got := len(eff.StagedDiffers) > 0
			if got != tc.differs {
				t.Fatalf("StagedDiffers = %v, want differs=%v", eff.StagedDiffers, tc.differs)
			}
		})
	}
}

func symlink(t *testing.T, target, p string) {
	t.Helper()
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

func relink(t *testing.T, target, p string) {
	t.Helper()
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	symlink(t, target, p)
}
