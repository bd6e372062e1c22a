package gitstate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A task's copy whose .git names another place must not make Kule read
// that place as the task's repository: each attack below is run as the
// engine runs a commit (CompareRepos, Apply, After) and an undo of it
// (RevertSet on the copy), against a folder repository and a sibling
// repository beside it, both real git.

// trustWorld is a world with a sibling repository beside the folder that
// has its own history and a branch of its own.
type trustWorld struct {
	*world
	sibling string
	base    *Base
}

func newTrustWorld(t *testing.T) *trustWorld {
	t.Helper()
	w := newWorld(t, func(folder string) {
		run(t, folder, "init", "-q", "-b", "main", "sub")
		write(t, filepath.Join(folder, "sub", "s.txt"), "sub\n")
		run(t, filepath.Join(folder, "sub"), "add", ".")
		run(t, filepath.Join(folder, "sub"), "commit", "-q", "-m", "sub first")
	})
	sib := filepath.Join(filepath.Dir(w.folder), "sibling")
	if err := os.Mkdir(sib, 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, sib, "init", "-q", "-b", "main")
	write(t, filepath.Join(sib, "secret.txt"), "the sibling's own work\n")
	run(t, sib, "add", ".")
	run(t, sib, "commit", "-q", "-m", "sibling first")
	run(t, sib, "branch", "sibling-only")
	write(t, filepath.Join(sib, "evil.cfg"), "[core]\n\tfsmonitor = touch /tmp/kule-pwned\n")
	b, err := TakeBase(w.copy)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Repos) != 2 {
		t.Fatalf("base repositories = %d, want the folder's and sub", len(b.Repos))
	}
	return &trustWorld{world: w, sibling: sib, base: b}
}

func (w *trustWorld) siblingGit() string { return filepath.Join(w.sibling, ".git") }

// commitAndUndo runs what a commit and then an undo do with the copy's
// repositories and returns the effects status showed.
func (w *trustWorld) commitAndUndo() []*Effects {
	w.t.Helper()
	effs, err := w.base.CompareRepos(w.copy)
	if err != nil {
		w.t.Fatalf("CompareRepos: %v", err)
	}
	set, _ := w.base.Apply(w.folder, w.copy, effs, ApplyOptions{Hooks: true, Config: true})
	if _, err := w.base.After(w.copy, ApplyOptions{Hooks: true, Config: true}); err != nil {
		w.t.Fatalf("After: %v", err)
	}
	if set != nil {
		_ = RevertSet(w.copy, set) // the undo follows the folder back in the copy
	}
	return effs
}

// same tells whether the repository at gitDir still means want.
func same(t *testing.T, want *Snapshot, gitDir string) bool {
	t.Helper()
	got, err := Take(gitDir)
	if err != nil {
		t.Fatal(err)
	}
	return cmp.Equal(want.Refs, got.Refs) && cmp.Equal(want.Config, got.Config) && cmp.Equal(want.Hooks, got.Hooks)
}

var trustAttacks = map[string]struct {
	setup   func(t *testing.T, w *trustWorld)
	finding string // what the refusal names
}{
	"commondir names the sibling": {
		setup: func(t *testing.T, w *trustWorld) {
			write(t, filepath.Join(w.copyGit(), "commondir"), w.siblingGit()+"\n")
		},
		finding: ".git/commondir names",
	},
	"alternates borrow the sibling's objects": {
		setup: func(t *testing.T, w *trustWorld) {
			write(t, filepath.Join(w.copyGit(), "objects", "info", "alternates"), filepath.Join(w.siblingGit(), "objects")+"\n")
			id := run(t, w.sibling, "rev-parse", "main")
			run(t, w.copy, "update-ref", "refs/heads/borrowed", id)
		},
		finding: "objects/info/alternates borrows objects",
	},
	"a nested .git file names the sibling": {
		setup: func(t *testing.T, w *trustWorld) {
			if err := os.RemoveAll(filepath.Join(w.copy, "sub", ".git")); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(w.copy, "sub", ".git"), "gitdir: "+w.siblingGit()+"\n")
		},
		finding: "", // an outside git directory: reported as outside
	},
	"packed-refs is a link to the sibling's": {
		setup: func(t *testing.T, w *trustWorld) {
			run(t, w.sibling, "pack-refs", "--all")
			p := filepath.Join(w.copyGit(), "packed-refs")
			os.Remove(p)
			if err := os.Symlink(filepath.Join(w.siblingGit(), "packed-refs"), p); err != nil {
				t.Fatal(err)
			}
		},
		finding: ".git/packed-refs is a symbolic link",
	},
	"the .git directory of sub is a link to the sibling's": {
		setup: func(t *testing.T, w *trustWorld) {
			if err := os.RemoveAll(filepath.Join(w.copy, "sub", ".git")); err != nil {
				t.Fatal(err)
			}
			// A linked worktree's gitdir inside the copy, through a link.
			if err := os.Symlink(w.siblingGit(), filepath.Join(w.copy, "sibling-link")); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(w.copy, "sub", ".git"), "gitdir: ../sibling-link\n")
		},
		finding: "sibling-link is a symbolic link",
	},
	"an object directory is a link to the sibling's": {
		setup: func(t *testing.T, w *trustWorld) {
			id := run(t, w.sibling, "rev-parse", "main")
			fan := filepath.Join(w.copyGit(), "objects", id[:2])
			if _, err := os.Lstat(fan); err == nil {
				t.Skip("the folder has objects in the sibling's commit's directory")
			}
			if err := os.Symlink(filepath.Join(w.siblingGit(), "objects", id[:2]), fan); err != nil {
				t.Fatal(err)
			}
			// The task's git now finds the sibling's commit (its tree and
			// blob lie elsewhere: a dangling branch is enough).
			write(t, filepath.Join(w.copyGit(), "refs", "heads", "borrowed"), id+"\n")
		},
		finding: "is a symbolic link",
	},
	"a branch written by hand names an object nobody holds": {
		setup: func(t *testing.T, w *trustWorld) {
			write(t, filepath.Join(w.copyGit(), "refs", "heads", "dangling"), strings.Repeat("ab", 20)+"\n")
		},
		finding: "refs/heads/dangling names object",
	},
	"config moves the working tree to the sibling": {
		setup: func(t *testing.T, w *trustWorld) {
			run(t, w.copy, "config", "core.worktree", w.sibling)
		},
		finding: "core.worktree = ",
	},
	"config includes the sibling's config": {
		setup: func(t *testing.T, w *trustWorld) {
			run(t, w.copy, "config", "include.path", filepath.Join(w.sibling, "evil.cfg"))
		},
		finding: ".git/config includes other config",
	},
}

func TestAttackGitPointersElsewhereAreRefused(t *testing.T) {
	for name, a := range trustAttacks {
		t.Run(name, func(t *testing.T) {
			w := newTrustWorld(t)
			folderBefore, _ := Take(w.folderGit())
			subBefore, _ := Take(filepath.Join(w.folder, "sub", ".git"))
			sibBefore, _ := Take(w.siblingGit())
			a.setup(t, w)
			effs := w.commitAndUndo()
			var lines []string
			for _, e := range effs {
				if !e.Outside {
					t.Errorf("repository %s was read and judged: %+v", e.Repo, e)
				}
				lines = append(lines, e.Lines()...)
			}
			if len(effs) == 0 {
				t.Fatal("status shows nothing: the refusal must be reported")
			}
			if a.finding != "" && !strings.Contains(strings.Join(lines, "\n"), a.finding) {
				t.Errorf("status lines do not name %q:\n%s", a.finding, strings.Join(lines, "\n"))
			}
			if !same(t, folderBefore, w.folderGit()) || !same(t, subBefore, filepath.Join(w.folder, "sub", ".git")) {
				t.Error("the folder's repositories changed")
			}
			if !same(t, sibBefore, w.siblingGit()) {
				t.Error("the sibling repository changed")
			}
			if out, err := tryRun(w.folder, "config", "--get", "core.fsmonitor"); err == nil {
				t.Errorf("the folder's git now reads core.fsmonitor = %s", out)
			}
			w.fsck()
			run(t, w.sibling, "fsck", "--strict", "--no-progress")
			// Still reported after the commit: the base kept the old state.
			again, err := w.base.CompareRepos(w.copy)
			if err != nil {
				t.Fatal(err)
			}
			if len(again) == 0 {
				t.Error("after a commit the refused repository is no longer reported")
			}
		})
	}
}

// The same attacks with the checks taken away harm the folder's repository
// or the sibling: the test above does not pass by accident.
func TestAttackGitPointersElsewhereWithoutTheGuard(t *testing.T) {
	trustPointers = false
	t.Cleanup(func() { trustPointers = true })
	for name, a := range trustAttacks {
		t.Run(name, func(t *testing.T) {
			w := newTrustWorld(t)
			folderBefore, _ := Take(w.folderGit())
			subBefore, _ := Take(filepath.Join(w.folder, "sub", ".git"))
			sibBefore, _ := Take(w.siblingGit())
			a.setup(t, w)
			effs, err := w.base.CompareRepos(w.copy)
			if err != nil {
				t.Logf("CompareRepos: %v", err)
			}
			var harm []string
			set, aerr := w.base.Apply(w.folder, w.copy, effs, ApplyOptions{Hooks: true, Config: true})
			t.Logf("apply: %v", aerr)
			if !same(t, folderBefore, w.folderGit()) || !same(t, subBefore, filepath.Join(w.folder, "sub", ".git")) {
				harm = append(harm, "the folder's repository took the sibling's refs or config")
			}
			if _, err := tryRun(w.folder, "fsck", "--strict", "--no-progress"); err != nil {
				harm = append(harm, "the folder's repository no longer passes git fsck")
			}
			if out, err := tryRun(w.folder, "config", "--get", "core.fsmonitor"); err == nil {
				harm = append(harm, "the folder's git runs core.fsmonitor = "+strings.TrimSpace(out))
			}
			if set != nil {
				_ = RevertSet(w.copy, set)
			}
			if !same(t, sibBefore, w.siblingGit()) {
				harm = append(harm, "the undo wrote into the sibling")
			}
			if len(harm) == 0 {
				t.Fatal("without the guard the attack harmed nothing: the test does not show it")
			}
			t.Logf("without the guard: %s", strings.Join(harm, "; "))
		})
	}
}

func TestIncludeSections(t *testing.T) {
	t.Parallel()
	cases := map[string][]string{
		"[core]\n\tbare = false\n":                      nil,
		"[include]\n\tpath = x\n":                       {"[include]"},
		"[IncludeIf \"gitdir:~/w/\"]\n path = y\n":      {`[IncludeIf "gitdir:~/w/"]`},
		"  [INCLUDE]path=z\n":                           {"[INCLUDE]"},
		"[includeif.gitdir:/x]\npath=z\n":               {"[includeif.gitdir:/x]"},
		"# [include]\n; [include]\n[includes]\n":        {"[includes]"},
		"[core]\n\tfsmonitor = x\n[include\n\tpath=z\n": {"[include"},
		"[core]\n\tWorkTree = /home/me/other\n":         {"core.worktree = /home/me/other"},
		"[core] worktree=../x\n[user]\nworktree = y\n":  {"core.worktree = ../x"},
	}
	for in, want := range cases {
		if got := IncludeSections([]byte(in)); !cmp.Equal(got, want) {
			t.Errorf("IncludeSections(%q) = %q, want %q", in, got, want)
		}
	}
}

// Whatever a config holds, a header git reads as an include is named.
func FuzzIncludeSections(f *testing.F) {
	for _, s := range []string{"[include]\npath=x\n", "[includeIf \"onbranch:m\"]\n", "[core]\nx=1\n", "[", "[]", "[\"include\"]"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got := IncludeSections(b)
		for _, line := range strings.Split(string(b), "\n") {
			l := strings.ToLower(strings.TrimSpace(line))
			if strings.HasPrefix(l, "[include") && len(got) == 0 {
				t.Fatalf("%q holds an include header, none named", b)
			}
		}
	})
}

// A worktree's gitdir the task adds, naming a place outside the folder, is
// refused by name. (Kule never reads nor applies worktrees/, so nothing is
// harmed without the check: it is refused so that nothing of .git names
// elsewhere.) The person's own worktrees, in the base, are no finding.
func TestWorktreeGitdirElsewhereIsRefused(t *testing.T) {
	w := newTrustWorld(t)
	write(t, filepath.Join(w.copyGit(), "worktrees", "evil", "gitdir"), filepath.Join(w.sibling, ".git")+"\n")
	effs, err := w.base.CompareRepos(w.copy)
	if err != nil {
		t.Fatal(err)
	}
	if len(effs) != 1 || !effs[0].Outside || !strings.Contains(strings.Join(effs[0].Lines(), "\n"), ".git/worktrees/evil/gitdir names") {
		t.Fatalf("effects = %+v, want the worktree gitdir refused by name", effs)
	}
	// Already in the base (the person's own worktree): no finding, also
	// once the base went through its stored form.
	tb, err := TakeBase(w.copy)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := tb.EncodeBase()
	if err != nil {
		t.Fatal(err)
	}
	b, err := DecodeBase(raw)
	if err != nil {
		t.Fatal(err)
	}
	if b.snapshot(".").Pointers["worktrees/evil/gitdir"] == "" {
		t.Fatal("the stored base lost the worktree's gitdir")
	}
	if effs, err := b.CompareRepos(w.copy); err != nil || len(effs) != 0 {
		t.Fatalf("with the worktree in the base: effects %+v, %v", effs, err)
	}
}
