package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kulehq/kule/cmd/internal/pluginserve"
)

// TestMain lets the test binary stand in for the kule binary: with
// KULE_AS_CLI=1 it runs the CLI on its arguments. The crash tests kill such a
// process at every named step of commit and undo.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "__plugin" { // a built-in plugin, as kule-plugins serves it
		os.Exit(pluginserve.Main(os.Args[2:]))
	}
	// The built-ins are served by this test binary (above), not by a
	// kule-plugins beside it.
	if self, err := os.Executable(); err == nil {
		pluginsBinary = func() string { return self }
	}
	if os.Getenv("KULE_CHAT_PEER") != "" { // the chat test's scripted agent
		os.Exit(chatPeer())
	}
	if script := os.Getenv("KULE_TEST_ACP_AGENT"); script != "" { // a scripted ACP agent: resume_test.go
		os.Exit(resumeAgent(script))
	}
	if os.Getenv("KULE_AS_CLI") == "1" {
		rawOutput = os.Getenv("KULE_TEST_RAW_OUTPUT") == "1"     // the guard taken away: see termsafe_test.go
		keepRepeats = os.Getenv("KULE_TEST_KEEP_REPEATS") == "1" // see TestErrorPathsSayEachPrefixOnce
		if os.Getenv("KULE_TEST_PROGRESS_FLOOR") == "1" {        // see TestNewShowsProgressOnATerminal
			progressFloor.files, progressFloor.bytes = 1, 1
		}
		os.Exit(run(os.Args[1:]))
	}
	os.Exit(m.Run())
}

type cli struct {
	t    *testing.T
	home string
}

// kule runs the CLI in a child process; crashAt names a step to die at.
func (c cli) kule(crashAt string, args ...string) (string, error) {
	c.t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "KULE_AS_CLI=1", "KULE_HOME="+c.home, "KULE_CRASH_AT="+crashAt)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// stdout runs kule and returns what it printed on stdout alone: what a
// person pipes into jq, without the log lines stderr may carry.
func (c cli) stdout(args ...string) (string, error) {
	c.t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "KULE_AS_CLI=1", "KULE_HOME="+c.home)
	var errb strings.Builder
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		return string(out) + errb.String(), err
	}
	return string(out), nil
}

func (c cli) must(args ...string) string {
	c.t.Helper()
	out, err := c.kule("", args...)
	if err != nil {
		c.t.Fatalf("kule %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func killed(err error) bool {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return true
		}
	}
	return false
}

// snapshot lists a folder as a person checks it: every path, its type,
// mode and exact content.
func snapshot(t *testing.T, root string) []string {
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
		line := fmt.Sprintf("%s %v", rel, info.Mode())
		if info.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			line += " " + string(b)
		}
		if info.Mode()&os.ModeSymlink != 0 {
			target, _ := os.Readlink(p)
			line += " -> " + target
		}
		out = append(out, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

var commitSteps = []string{
	"commit.judged", "commit.planned", "commit.checkpoint-saved", "commit.journal-written", "commit.staging", "commit.staged-files",
	"commit.staged", "commit.applying", "commit.renamed", "commit.applied",
	"commit.history-appended", "commit.finished",
}

var undoSteps = []string{
	"undo.journal-written", "undo.staging", "undo.staged-files", "undo.staged", "undo.applying",
	"undo.renamed", "undo.applied", "undo.history-appended", "undo.finished",
}

// setup makes a folder with some of everything, a task on it, and a change
// touching every kind of effect.
func setup(t *testing.T) (cli, string, string) {
	dir := t.TempDir()
	folder := filepath.Join(dir, "folder")
	for p, body := range map[string]string{
		"notes/plan.md": "# Plan\n", "notes/drafts.md": "draft\n", "photos/a.jpg": "AAAA",
		"photos/b.jpg": "BBBB", "src/main.go": "package main\n", "big.bin": strings.Repeat("x", 3<<20),
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(folder, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(folder, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := cli{t: t, home: filepath.Join(dir, "home")}
	c.must("new", folder)
	id := strings.Fields(c.must("list"))[0]
	c.must("exec", id, "--", "sh", "-c",
		"echo more >> notes/plan.md; rm notes/drafts.md; mv photos 2026; mkdir -p new/deep; echo n > new/deep/n.txt; "+
			"chmod 755 src/main.go; rm -rf src && echo file > src; head -c 2000000 /dev/zero > big.bin; ln -s notes/plan.md plan")
	return c, id, folder
}

func noLeftovers(t *testing.T, folder string) {
	t.Helper()
	_ = filepath.Walk(folder, func(p string, info os.FileInfo, err error) error {
		if err == nil && strings.HasPrefix(filepath.Base(p), ".kule-") {
			t.Errorf("left behind in the folder: %s", p)
		}
		return nil
	})
}

func TestCrashDuringCommitLeavesOldOrNewAsAWhole(t *testing.T) {
	for _, step := range commitSteps {
		t.Run(step, func(t *testing.T) {
			t.Parallel()
			c, id, folder := setup(t)
			before := snapshot(t, folder)
			copyDir := filepath.Join(c.home, "tasks", id, "copy")
			after := snapshot(t, copyDir)
			// --approve: the change makes a link, which the balanced
			// policy holds for approval.
			out, err := c.kule(step, "commit", id, "--approve")
			if !killed(err) {
				t.Fatalf("commit was not killed at %s: %v\n%s", step, err, out)
			}
			// The next call finishes or reverses the commit.
			c.must("status", id)
			got := snapshot(t, folder)
			switch {
			case cmp.Equal(got, before):
				// rolled back: the change is still in the copy, and commits.
				if strings.Contains(c.must("status", id), "0 file changes") {
					t.Fatal("rolled back, but the task's changes are gone from the copy")
				}
				c.must("commit", id, "--approve")
				if d := cmp.Diff(after, snapshot(t, folder)); d != "" {
					t.Fatalf("commit after recovery (-copy +folder):\n%s", d)
				}
			case cmp.Equal(got, after):
				if !strings.Contains(c.must("status", id), "0 file changes") {
					t.Fatalf("rolled forward, but status still lists changes:\n%s", c.must("status", id))
				}
			default:
				t.Fatalf("after a crash at %s the folder is neither old nor new:\n%s", step, cmp.Diff(before, got))
			}
			noLeftovers(t, folder)
			c.must("history", id, "--verify")
			c.must("undo", id)
			if d := cmp.Diff(before, snapshot(t, folder)); d != "" {
				t.Fatalf("undo after recovery did not restore the folder:\n%s", d)
			}
			c.must("history", id, "--verify")
		})
	}
}

func TestCrashDuringUndoLeavesOldOrNewAsAWhole(t *testing.T) {
	for _, step := range undoSteps {
		t.Run(step, func(t *testing.T) {
			t.Parallel()
			c, id, folder := setup(t)
			before := snapshot(t, folder)
			c.must("commit", id, "--approve") // the change makes a link, which waits for approval
			committed := snapshot(t, folder)
			out, err := c.kule(step, "undo", id)
			if !killed(err) {
				t.Fatalf("undo was not killed at %s: %v\n%s", step, err, out)
			}
			c.must("status", id)
			got := snapshot(t, folder)
			switch {
			case cmp.Equal(got, committed):
				c.must("undo", id) // the undo did not happen: it still can
				if d := cmp.Diff(before, snapshot(t, folder)); d != "" {
					t.Fatalf("undo after recovery:\n%s", d)
				}
			case cmp.Equal(got, before):
				if out, err := c.kule("", "undo", id); err == nil || !strings.Contains(out, "nothing to undo") {
					t.Fatalf("undo rolled forward, yet a second undo says: %v\n%s", err, out)
				}
			default:
				t.Fatalf("after a crash at %s the folder is neither committed nor undone:\n%s", step, cmp.Diff(committed, got))
			}
			noLeftovers(t, folder)
			c.must("history", id, "--verify")
			if out := c.must("status", id); !strings.Contains(out, "0 file changes") {
				t.Fatalf("after the undo the copy does not match the folder:\n%s", out)
			}
		})
	}
}

// gitState is what a person checks of a repository: its branches and where
// they point, HEAD, and the index by entries.
func gitState(t *testing.T, folder string) string {
	t.Helper()
	return git(t, folder, "for-each-ref", "--format=%(refname) %(objectname)") + "\n" +
		git(t, folder, "symbolic-ref", "HEAD") + "\n" + git(t, folder, "ls-files", "-s")
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=Ada", "-c", "user.email=ada@example.com"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+filepath.Dir(dir))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// gitSetup makes a folder that is a git repository, a task on it, and a
// change that edits, deletes and adds files and commits them with git, and
// makes a branch: the commit writes the folder's files and its repository.
func gitSetup(t *testing.T) (cli, string, string) {
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("git is not installed: %v", err)
		}
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	folder := filepath.Join(dir, "folder")
	for p, body := range map[string]string{"a.txt": "one\n", "notes/plan.md": "# Plan\n", "notes/old.md": "old\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(folder, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(folder, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, folder, "init", "-q", "-b", "main")
	git(t, folder, "add", ".")
	git(t, folder, "commit", "-q", "-m", "first")
	c := cli{t: t, home: filepath.Join(dir, "home")}
	c.must("new", folder)
	id := strings.Fields(c.must("list"))[0]
	c.must("exec", id, "--", "sh", "-c",
		"echo more >> notes/plan.md; rm notes/old.md; echo n > new.txt; git add -A && "+
			"git -c user.name=Ada -c user.email=ada@example.com commit -qm task && git branch topic")
	return c, id, folder
}

// filesOf is snapshot without .git: the repository is compared by meaning.
func filesOf(t *testing.T, folder string) []string {
	var out []string
	for _, l := range snapshot(t, folder) {
		if l != ".git" && !strings.HasPrefix(l, ".git ") && !strings.HasPrefix(l, ".git/") {
			out = append(out, l)
		}
	}
	return out
}

// gitHealthy checks what git itself says of the folder's repository: fsck
// passes, no lock file is left, and the work tree matches the index.
func gitHealthy(t *testing.T, folder string) {
	t.Helper()
	git(t, folder, "fsck", "--strict", "--no-progress", "--no-dangling")
	_ = filepath.Walk(filepath.Join(folder, ".git"), func(p string, info os.FileInfo, err error) error {
		if err == nil && (strings.HasSuffix(p, ".lock") || strings.HasPrefix(filepath.Base(p), ".kule-")) {
			t.Errorf("left behind in the repository: %s", p)
		}
		return nil
	})
	if st := git(t, folder, "status", "--porcelain"); st != "" {
		t.Errorf("git status in the folder is not clean:\n%s", st)
	}
}

var gitCommitSteps = append(append([]string(nil), commitSteps...), "commit.git-locked")
var gitUndoSteps = append(append([]string(nil), undoSteps...), "undo.git-locked")

// A SIGKILL at every step of a commit that writes files and the repository:
// after the next kule call the folder and its repository are both as before
// or both as committed, git fsck passes, and history verifies.
func TestCrashDuringGitCommitLeavesFilesAndRepositoryOldOrNew(t *testing.T) {
	for _, step := range gitCommitSteps {
		t.Run(step, func(t *testing.T) {
			t.Parallel()
			c, id, folder := gitSetup(t)
			beforeFiles, beforeGit := filesOf(t, folder), gitState(t, folder)
			copyDir := filepath.Join(c.home, "tasks", id, "copy")
			afterFiles, afterGit := filesOf(t, copyDir), gitState(t, copyDir)
			out, err := c.kule(step, "commit", id, "--approve")
			if !killed(err) {
				t.Fatalf("commit was not killed at %s: %v\n%s", step, err, out)
			}
			c.must("status", id)
			files, gs := filesOf(t, folder), gitState(t, folder)
			switch {
			case cmp.Equal(files, beforeFiles) && gs == beforeGit:
				gitHealthy(t, folder)
				c.must("commit", id, "--approve")
				if d := cmp.Diff(afterFiles, filesOf(t, folder)); d != "" {
					t.Fatalf("commit after recovery (-copy +folder):\n%s", d)
				}
				if d := cmp.Diff(afterGit, gitState(t, folder)); d != "" {
					t.Fatalf("commit after recovery, repository (-copy +folder):\n%s", d)
				}
			case cmp.Equal(files, afterFiles) && gs == afterGit:
				if out := c.must("status", id); !strings.Contains(out, "0 file changes") || strings.Contains(out, "git:") {
					t.Fatalf("rolled forward, but status still lists changes:\n%s", out)
				}
			default:
				t.Fatalf("after a crash at %s the folder and its repository are not old or new as a whole:\nfiles (-before +got):\n%s\nrepository before:\n%s\ngot:\n%s\nthe commit's:\n%s",
					step, cmp.Diff(beforeFiles, files), beforeGit, gs, afterGit)
			}
			gitHealthy(t, folder)
			noLeftovers(t, folder)
			c.must("history", id, "--verify")
			c.must("undo", id)
			if d := cmp.Diff(beforeFiles, filesOf(t, folder)); d != "" {
				t.Fatalf("undo after recovery did not restore the files:\n%s", d)
			}
			if gs := gitState(t, folder); gs != beforeGit {
				t.Fatalf("undo after recovery did not restore the repository:\n%s\nwant:\n%s", gs, beforeGit)
			}
			gitHealthy(t, folder)
			c.must("history", id, "--verify")
		})
	}
}

func TestCrashDuringGitUndoLeavesFilesAndRepositoryOldOrNew(t *testing.T) {
	for _, step := range gitUndoSteps {
		t.Run(step, func(t *testing.T) {
			t.Parallel()
			c, id, folder := gitSetup(t)
			beforeFiles, beforeGit := filesOf(t, folder), gitState(t, folder)
			c.must("commit", id, "--approve")
			committedFiles, committedGit := filesOf(t, folder), gitState(t, folder)
			out, err := c.kule(step, "undo", id)
			if !killed(err) {
				t.Fatalf("undo was not killed at %s: %v\n%s", step, err, out)
			}
			c.must("status", id)
			files, gs := filesOf(t, folder), gitState(t, folder)
			switch {
			case cmp.Equal(files, committedFiles) && gs == committedGit:
				gitHealthy(t, folder)
				c.must("undo", id)
				if d := cmp.Diff(beforeFiles, filesOf(t, folder)); d != "" || gitState(t, folder) != beforeGit {
					t.Fatalf("undo after recovery:\n%s\n%s", d, gitState(t, folder))
				}
			case cmp.Equal(files, beforeFiles) && gs == beforeGit:
				if out, err := c.kule("", "undo", id); err == nil || !strings.Contains(out, "nothing to undo") {
					t.Fatalf("undo rolled forward, yet a second undo says: %v\n%s", err, out)
				}
			default:
				t.Fatalf("after a crash at %s the folder and its repository are neither committed nor undone as a whole:\nfiles (-committed +got):\n%s\nrepository committed:\n%s\ngot:\n%s",
					step, cmp.Diff(committedFiles, files), committedGit, gs)
			}
			gitHealthy(t, folder)
			noLeftovers(t, folder)
			c.must("history", id, "--verify")
			if out := c.must("status", id); !strings.Contains(out, "0 file changes") || strings.Contains(out, "git:") {
				t.Fatalf("after the undo the copy does not match the folder:\n%s", out)
			}
		})
	}
}

// A SIGKILL at every step of committing an agent's edit to a masked .env:
// the folder's .env is its old bytes or the edit with the real values, never
// a placeholder, and the copy never shows the real value.
func TestCrashDuringCommitOfAMaskedEnv(t *testing.T) {
	const secret = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
	old := "STRIPE_KEY=" + secret + "\nDEBUG=true\n"
	for _, step := range commitSteps {
		t.Run(step, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			folder := filepath.Join(dir, "folder")
			if err := os.MkdirAll(folder, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(folder, ".env"), []byte(old), 0o600); err != nil {
				t.Fatal(err)
			}
			c := cli{t: t, home: filepath.Join(dir, "home")}
			c.must("new", folder)
			id := strings.Fields(c.must("list"))[0]
			copyEnv := filepath.Join(c.home, "tasks", id, "copy", ".env")
			c.must("exec", id, "--", "sh", "-c", "echo FEATURE=on >> .env")
			out, err := c.kule(step, "commit", id)
			if !killed(err) {
				t.Fatalf("commit was not killed at %s: %v\n%s", step, err, out)
			}
			c.must("status", id)
			got, _ := os.ReadFile(filepath.Join(folder, ".env"))
			switch string(got) {
			case old:
				c.must("commit", id)
			case old + "FEATURE=on\n":
			default:
				t.Fatalf("after a crash at %s the folder's .env is %q", step, got)
			}
			if got, _ := os.ReadFile(filepath.Join(folder, ".env")); string(got) != old+"FEATURE=on\n" {
				t.Fatalf("the folder's .env after the commit = %q", got)
			}
			if b, _ := os.ReadFile(copyEnv); strings.Contains(string(b), secret) || !strings.Contains(string(b), "FEATURE=on") {
				t.Fatalf("the copy's .env = %q", b)
			}
			if out := c.must("status", id); !strings.Contains(out, "0 file changes") {
				t.Fatalf("status after the commit:\n%s", out)
			}
			noLeftovers(t, folder)
			c.must("history", id, "--verify")
		})
	}
}

// refusalFaults make a commit fail at each point where it refuses after
// starting to write into the folder: the first staged file, one in the
// middle of staging (a whole new directory tree is staged by then), making
// the staged files durable, and marking the journal staged.
var refusalFaults = []string{"stage.write@1:ENOSPC", "stage.write@4:ENOSPC", "stage.sync:EIO", "journal.staged:EIO"}

// A commit refused at each of those points says nothing changed, and
// nothing changed: the folder is as it was with no .kule- name in it, no
// journal is left, the task works on, and the next commit applies it all.
func TestRefusedCommitLeavesNothingBehind(t *testing.T) {
	for _, fault := range refusalFaults {
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			c, id, folder := setup(t)
			before := snapshot(t, folder)
			copyDir := filepath.Join(c.home, "tasks", id, "copy")
			after := snapshot(t, copyDir)
			cmd := exec.Command(os.Args[0], "commit", id, "--approve")
			cmd.Env = append(os.Environ(), "KULE_AS_CLI=1", "KULE_HOME="+c.home, "KULE_FAULT="+fault)
			b, err := cmd.CombinedOutput()
			out := string(b)
			if err == nil || killed(err) || !strings.Contains(out, "nothing in the folder changed") {
				t.Fatalf("commit with %s: %v\n%s", fault, err, out)
			}
			if d := cmp.Diff(before, snapshot(t, folder)); d != "" {
				t.Fatalf("a refused commit changed the folder:\n%s", d)
			}
			noLeftovers(t, folder)
			if _, err := os.Stat(filepath.Join(c.home, "tasks", id, "journal")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a refused commit left its journal: %v", err)
			}
			c.must("status", id)
			c.must("commit", id, "--approve")
			if d := cmp.Diff(after, snapshot(t, folder)); d != "" {
				t.Fatalf("the commit after a refusal (-copy +folder):\n%s", d)
			}
			noLeftovers(t, folder)
			c.must("history", id, "--verify")
		})
	}
}

// A commit into a repository refused because a git command holds its lock
// (here: index.lock, as a running `git add` would) writes nothing into the
// folder or the repository and leaves no .kule- name and none of its locks;
// once the lock is gone the commit goes in.
func TestRefusedGitCommitLeavesNothingBehind(t *testing.T) {
	c, id, folder := gitSetup(t)
	beforeFiles, beforeGit := filesOf(t, folder), gitState(t, folder)
	copyDir := filepath.Join(c.home, "tasks", id, "copy")
	afterFiles, afterGit := filesOf(t, copyDir), gitState(t, copyDir)
	lock := filepath.Join(folder, ".git", "index.lock")
	if err := os.WriteFile(lock, []byte("a git command's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := c.kule("", "commit", id, "--approve")
	if err == nil || !strings.Contains(out, "nothing in the folder changed") {
		t.Fatalf("commit with a held lock: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(lock); string(b) != "a git command's\n" {
		t.Fatalf("the refused commit changed git's own lock: %q", b)
	}
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(beforeFiles, filesOf(t, folder)); d != "" || gitState(t, folder) != beforeGit {
		t.Fatalf("a refused commit changed the folder:\n%s\n%s", d, gitState(t, folder))
	}
	noLeftovers(t, folder)
	gitHealthy(t, folder)
	c.must("commit", id, "--approve")
	if d := cmp.Diff(afterFiles, filesOf(t, folder)); d != "" || gitState(t, folder) != afterGit {
		t.Fatalf("the commit after the refusal:\n%s\n%s", d, gitState(t, folder))
	}
	gitHealthy(t, folder)
	noLeftovers(t, folder)
}

// TestCommitOfAnUnreadableDirectoryAsNobody runs its inner half as the
// nobody user: a person without root whose folder holds a directory they
// cannot read. The task deletes the directory; the commit refuses before
// anything is written, names it and says what to do, and the folder, its
// journal and the task are as before: status works and what else changed
// commits once the directory is kept out.
func TestCommitOfAnUnreadableDirectoryAsNobody(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("already unprivileged: TestCommitOfAnUnreadableDirectoryInner runs as this user")
	}
	root, err := os.MkdirTemp("", "kule-cli-nobody")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "kule.test")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(root, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(work, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestCommitOfAnUnreadableDirectoryInner$", "-test.v")
	cmd.Env = []string{"KULE_TEST_ROOT=" + work, "KULE_CLI_INNER=1", "PATH=/usr/bin:/bin", "HOME=" + work}
	cmd.Dir = work
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil || !strings.Contains(string(out), "--- PASS: TestCommitOfAnUnreadableDirectoryInner") {
		t.Fatalf("as nobody: %v", err)
	}
}

func TestCommitOfAnUnreadableDirectoryInner(t *testing.T) {
	if os.Getenv("KULE_CLI_INNER") != "1" {
		t.Skip("runs as nobody inside TestCommitOfAnUnreadableDirectoryAsNobody")
	}
	work := os.Getenv("KULE_TEST_ROOT")
	folder := filepath.Join(work, "folder")
	for p, body := range map[string]string{"a.txt": "a\n", "gone/plan.md": "# Plan\n", "gone/private/diary.txt": "mine\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(folder, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(folder, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	private := filepath.Join(folder, "gone", "private")
	if err := os.Chmod(private, 0o000); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(private, 0o755)
	c := cli{t: t, home: filepath.Join(work, "home")}
	c.must("new", folder)
	id := strings.Fields(c.must("list"))[0]
	copyDir := filepath.Join(c.home, "tasks", id, "copy")
	// The task deletes the directory and changes a file (as a command in
	// the copy would; the copy is the task's own).
	if err := os.Chmod(filepath.Join(copyDir, "gone", "private"), 0o755); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(copyDir, "gone")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(copyDir, "a.txt"), []byte("b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := func() []string {
		os.Chmod(private, 0o755)
		defer os.Chmod(private, 0o000)
		return snapshot(t, folder)
	}
	was := before()
	out, err := c.kule("", "commit", id, "--approve")
	if err == nil || !strings.Contains(out, "gone") || !strings.Contains(out, "nothing") || !strings.Contains(out, "chmod") {
		t.Fatalf("commit of an unreadable directory's deletion: %v\n%s", err, out)
	}
	t.Logf("kule commit said:\n%s", out)
	if d := cmp.Diff(was, before()); d != "" {
		t.Fatalf("the refused commit changed the folder:\n%s", d)
	}
	os.Chmod(private, 0o755)
	noLeftovers(t, folder)
	os.Chmod(private, 0o000)
	if _, err := os.Stat(filepath.Join(c.home, "tasks", id, "journal")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused commit left its journal: %v", err)
	}
	c.must("status", id)
	c.must("history", id, "--verify")
}
