package kernel_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/internal/effects"
	"github.com/kulehq/kule/kernel/internal/review"
	"github.com/kulehq/kule/kernel/internal/runner"
	"github.com/kulehq/kule/kernel/internal/task"
)

// fixture is a folder and a Kule home in temp dirs.
type fixture struct {
	t      *testing.T
	k      *kernel.Kernel
	folder string
}

func newFixture(t *testing.T, files map[string]string) *fixture {
	t.Helper()
	dir := t.TempDir()
	folder := filepath.Join(dir, "folder")
	write(t, folder, files)
	k, err := kernel.New(kernel.Config{Home: filepath.Join(dir, "home"), Backend: os.Getenv("KULE_TEST_BACKEND")})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, k: k, folder: folder}
}

func write(t *testing.T, root string, files map[string]string) {
	t.Helper()
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	for p, c := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(p, "/") {
			continue
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func (f *fixture) newTask() *task.Task {
	f.t.Helper()
	rep, err := f.k.NewTask(context.Background(), f.folder)
	if err != nil {
		f.t.Fatal(err)
	}
	return rep.Task
}

// sh runs a shell command in the task's copy, as kule exec does.
func (f *fixture) sh(tk *task.Task, script string) *kernel.Status {
	f.t.Helper()
	code, st, err := f.k.Exec(context.Background(), tk, kernel.ExecOptions{Args: []string{"sh", "-c", script}, Spec: runner.Spec{Stdout: os.Stderr, Stderr: os.Stderr}})
	if err != nil || code != 0 {
		f.t.Fatalf("exec %q: code %d, %v", script, code, err)
	}
	return st
}

func lines(es []effects.Effect) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.String())
	}
	return out
}

// tree lists a folder as "path type mode content" lines, what a person
// checks with ls -lR and cat.
func tree(t *testing.T, root string) []string {
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
		line := rel + " " + info.Mode().String()
		switch {
		case info.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			line += " -> " + target
		case info.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			line += " " + string(b)
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

func TestEffectsOfEachKind(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		files  map[string]string
		script string
		want   []string
	}{
		"edit":           {map[string]string{"a.md": "x"}, "echo y >> a.md", []string{"~ a.md"}},
		"add":            {map[string]string{"a.md": "x"}, "echo y > b.md", []string{"+ b.md"}},
		"delete":         {map[string]string{"a.md": "x", "b.md": "y"}, "rm b.md", []string{"- b.md"}},
		"move-file":      {map[string]string{"a/photo.jpg": "jpeg"}, "mkdir b && mv a/photo.jpg b/", []string{"+ b/", "» a/photo.jpg → b/photo.jpg"}},
		"rename":         {map[string]string{"old.txt": "same content"}, "mv old.txt new.txt", []string{"» old.txt → new.txt"}},
		"move-dir":       {map[string]string{"photos/a.jpg": "1", "photos/b.jpg": "2"}, "mv photos 2026", []string{"» photos/ → 2026/"}},
		"delete-dir":     {map[string]string{"src/a.go": "1", "src/b/c.go": "2", "keep": "k"}, "rm -rf src", []string{"- src/"}},
		"add-dir":        {map[string]string{"keep": "k"}, "mkdir -p n/m && echo 1 > n/m/x", []string{"+ n/"}},
		"mode":           {map[string]string{"run.sh": "echo"}, "chmod 755 run.sh", []string{"~ run.sh (mode 0644 → 0755)"}},
		"link-added":     {map[string]string{"a": "1"}, "ln -s a b", []string{"+ b → a (link)"}},
		"link-changed":   {map[string]string{"a": "1", "c": "2"}, "ln -s a b && true", nil},
		"type-file-dir":  {map[string]string{"x": "1"}, "rm x && mkdir x && echo 2 > x/y", []string{"~ x/ (file → dir)"}},
		"type-dir-link":  {map[string]string{"docs/a": "1"}, "rm -rf docs && ln -s /etc docs", []string{"~ docs/ (dir → link)"}},
		"touch-is-no-op": {map[string]string{"a": "1"}, "touch a", nil},
		"newline-name":   {map[string]string{"a": "1"}, "printf 2 > \"$(printf 'odd\\nname')\"", []string{`+ "odd\nname"`}},
		"not-utf8-name":  {map[string]string{"a": "1"}, "printf 2 > \"$(printf 'caf\\351')\"", []string{`+ "caf\xe9"`}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, tc.files)
			tk := f.newTask()
			if name == "link-changed" {
				f.sh(tk, tc.script)
				if _, err := f.k.Commit(context.Background(), tk, kernel.CommitOptions{}); err != nil {
					t.Fatal(err)
				}
				tc.want = []string{"~ b → c (link)"}
				tc.script = "ln -sfn c b"
			}
			st := f.sh(tk, tc.script)
			if d := cmp.Diff(tc.want, lines(st.Effects)); d != "" {
				t.Fatalf("effects (-want +got):\n%s", d)
			}
		})
	}
}

// Each scenario is committed, checked against what the copy holds, undone,
// and checked against the original: the folder is exactly as before.
func TestCommitThenUndoRestoresTheFolder(t *testing.T) {
	t.Parallel()
	scripts := map[string]string{
		"edit-delete-move":  "echo more >> notes.md && rm src/main.go && mv photos 2026",
		"new-tree":          "mkdir -p a/b/c && echo deep > a/b/c/d.txt && ln -s ../notes.md a/link",
		"type-changes":      "rm notes.md && mkdir notes.md && echo x > notes.md/inner && rm -rf src && echo now-a-file > src",
		"modes":             "chmod 600 notes.md && chmod 700 photos",
		"odd-names":         "printf x > \"$(printf 'caf\\351')\" && printf y > \"$(printf 'two\\nlines')\" && mv photos/a.jpg \"photos/$(printf '\\377')\"",
		"dir-to-link":       "rm -rf photos && ln -s /etc photos",
		"edit-in-moved-dir": "echo x >> photos/a.jpg && mv photos 2026",
		"move-into-new-dir": "mkdir -p n/m && mv notes.md n/m/ && mv src/main.go n/",
		"empty-everything":  "find . -mindepth 1 -maxdepth 1 ! -name .git -exec rm -rf {} +",
	}
	for name, script := range scripts {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, map[string]string{"notes.md": "hello\n", "src/main.go": "package main\n", "photos/a.jpg": "A", "photos/b.jpg": "B", "empty/": ""})
			before := tree(t, f.folder)
			tk := f.newTask()
			f.sh(tk, script)
			rep, err := f.k.Commit(context.Background(), tk, kernel.CommitOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Applied) == 0 {
				t.Fatal("commit applied nothing")
			}
			if d := cmp.Diff(tree(t, tk.Paths.Copy), tree(t, f.folder)); d != "" {
				t.Fatalf("after commit the folder differs from the copy (-copy +folder):\n%s", d)
			}
			if st, err := f.k.Status(context.Background(), tk); err != nil || len(st.Effects) != 0 {
				t.Fatalf("after commit status = %v, %v; want no changes", lines(st.Effects), err)
			}
			if _, err := f.k.Undo(context.Background(), tk); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(before, tree(t, f.folder)); d != "" {
				t.Fatalf("undo did not restore the folder (-before +after):\n%s", d)
			}
			if st, err := f.k.Status(context.Background(), tk); err != nil || len(st.Effects) != 0 {
				t.Fatalf("after undo status = %v, %v; want no changes (the copy follows the folder back)", lines(st.Effects), err)
			}
			if _, err := f.k.Undo(context.Background(), tk); !errors.Is(err, kernel.ErrNothingToUndo) {
				t.Fatalf("second undo = %v, want ErrNothingToUndo", err)
			}
			if err := f.k.VerifyHistory(tk); err != nil {
				t.Fatalf("history does not verify: %v", err)
			}
		})
	}
}

func TestUndoWalksBackThroughCommits(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{"v": "0"})
	tk := f.newTask()
	for _, v := range []string{"1", "2", "3"} {
		f.sh(tk, "printf "+v+" > v")
		if _, err := f.k.Commit(context.Background(), tk, kernel.CommitOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"2", "1", "0"} {
		if _, err := f.k.Undo(context.Background(), tk); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(filepath.Join(f.folder, "v")); string(got) != want {
			t.Fatalf("after undo v = %q, want %q", got, want)
		}
	}
}

func TestUndoRefusesWhenThePersonChangedTheFile(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{"a.txt": "one", "b.txt": "b"})
	tk := f.newTask()
	f.sh(tk, "echo two > a.txt")
	if _, err := f.k.Commit(context.Background(), tk, kernel.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	write(t, f.folder, map[string]string{"a.txt": "the person's own edit"})
	_, err := f.k.Undo(context.Background(), tk)
	var ub *kernel.UndoBlockedError
	if !errors.As(err, &ub) || len(ub.Paths) != 1 || ub.Paths[0] != "a.txt" {
		t.Fatalf("undo = %v, want UndoBlockedError naming a.txt", err)
	}
	if got, _ := os.ReadFile(filepath.Join(f.folder, "a.txt")); string(got) != "the person's own edit" {
		t.Fatalf("a refused undo changed a.txt to %q", got)
	}
}

func TestCommitRefusesWhenTheFolderChangedUnderneath(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		task, person string
		want         []string
	}{
		"same-file-edited":       {"echo task >> a.txt", "echo person >> a.txt", []string{"a.txt"}},
		"file-added-in-deleted":  {"rm -rf dir", "echo new > dir/new.txt", []string{"dir/new.txt"}},
		"same-path-added":        {"echo task > n.txt", "echo person > n.txt", []string{"n.txt"}},
		"move-source-edited":     {"mv a.txt b.txt", "echo person >> a.txt", []string{"a.txt"}},
		"deleted-file-edited":    {"rm a.txt", "echo person >> a.txt", []string{"a.txt"}},
		"parent-dir-gone":        {"echo x > dir/y.txt", "rm -rf dir", []string{"dir"}},
		"dir-replaced-with-link": {"echo t >> dir/x.txt", "rm -rf dir && ln -s /tmp dir", []string{"dir", "dir/x.txt"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, map[string]string{"a.txt": "a\n", "dir/x.txt": "x\n"})
			tk := f.newTask()
			f.sh(tk, tc.task)
			cmd := exec.Command("sh", "-c", tc.person)
			cmd.Dir = f.folder
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v", out, err)
			}
			before := tree(t, f.folder)
			_, err := f.k.Commit(context.Background(), tk, kernel.CommitOptions{})
			var ue *kernel.UnderneathError
			if !errors.As(err, &ue) {
				t.Fatalf("commit = %v, want changed underneath", err)
			}
			if d := cmp.Diff(tc.want, ue.Paths); d != "" {
				t.Fatalf("paths named (-want +got):\n%s", d)
			}
			if d := cmp.Diff(before, tree(t, f.folder)); d != "" {
				t.Fatalf("a refused commit changed the folder:\n%s", d)
			}
		})
	}
}

// A task that replaced a directory by a link out of the folder gets the link
// committed — never a write through it.
func TestCommitNeverWritesThroughALink(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	f := newFixture(t, map[string]string{"docs/readme": "r"})
	tk := f.newTask()
	f.sh(tk, "rm -rf docs && ln -s "+outside+" docs")
	if _, err := f.k.Commit(context.Background(), tk, kernel.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	if target, err := os.Readlink(filepath.Join(f.folder, "docs")); err != nil || target != outside {
		t.Fatalf("docs = %q, %v; want a link to %s", target, err, outside)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("commit wrote into the link's target: %v", ents)
	}
	// The next command writes through the link in the copy (it points
	// outside, so the file lands outside the copy); nothing of it reaches the
	// folder through the link either.
	f.sh(tk, "echo more > other.txt")
	if _, err := f.k.Commit(context.Background(), tk, kernel.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("commit wrote into the link's target: %v", ents)
	}
}

func TestIgnoredPathsStayUnlessIncluded(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{".gitignore": "*.log\nbuild/\n", "a.txt": "a"})
	tk := f.newTask()
	// The task also edits .gitignore in the copy: the rules still come from the folder.
	f.sh(tk, "echo x > debug.log && mkdir build && echo o > build/out && echo b >> a.txt && echo '' > .gitignore")
	rep, err := f.k.Commit(context.Background(), tk, kernel.CommitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"~ .gitignore", "~ a.txt"}, lines(rep.Applied)); d != "" {
		t.Fatalf("applied (-want +got):\n%s", d)
	}
	for _, p := range []string{"debug.log", "build"} {
		if _, err := os.Lstat(filepath.Join(f.folder, p)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("ignored %s reached the folder", p)
		}
	}
	if _, err := f.k.Commit(context.Background(), tk, kernel.CommitOptions{IncludeIgnored: true}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(f.folder, "build/out")); err != nil || string(b) != "o\n" {
		t.Fatalf("--include-ignored did not apply build/out: %q %v", b, err)
	}
}

// The stat cache: a file whose metadata did not move is not read. Proved by
// making the base's record of its content wrong: status still says nothing
// changed, until the file's metadata moves.
func TestStatusSkipsFilesWhoseMetadataDidNotMove(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{"a.txt": "content"})
	tk := f.newTask()
	// Rewrite the copy's file in place with other bytes of the same size,
	// then put its times back: size, mtime stay; ctime moves (the kernel
	// sets it), so the cache must notice.
	p := filepath.Join(tk.Paths.Copy, "a.txt")
	info, _ := os.Stat(p)
	if err := os.WriteFile(p, []byte("CONTENT"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, info.ModTime(), info.ModTime()); err != nil {
		t.Fatal(err)
	}
	// A walk (--full): on the overlay backend a status otherwise reads the
	// record of its folds, which no edit by hand in the copy is part of.
	st, err := f.k.StatusFull(context.Background(), tk)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"~ a.txt"}, lines(st.Effects)); d != "" {
		t.Fatalf("a same-size same-mtime rewrite was missed (-want +got):\n%s", d)
	}
}

func TestTwoTasksCommittingTheSameFileNeverLoseAnUpdate(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{"shared.txt": "base\n"})
	a, b := f.newTask(), f.newTask()
	f.sh(a, "echo from-a >> shared.txt")
	f.sh(b, "echo from-b >> shared.txt")
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, tk := range []*task.Task{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = f.k.Commit(context.Background(), tk, kernel.CommitOptions{})
		}()
	}
	wg.Wait()
	ok, refused := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, kernel.ErrChangedUnderneath):
			refused++
		default:
			t.Fatal(err)
		}
	}
	if ok != 1 || refused != 1 {
		t.Fatalf("commits: %d applied, %d refused; want one each (errors %v)", ok, refused, errs)
	}
	got, _ := os.ReadFile(filepath.Join(f.folder, "shared.txt"))
	if s := string(got); s != "base\nfrom-a\n" && s != "base\nfrom-b\n" {
		t.Fatalf("shared.txt = %q: an update was lost or mixed", s)
	}
}

func TestRollbackMakesTheCopyMatchTheFolder(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{"a": "1", "d/b": "2"})
	tk := f.newTask()
	f.sh(tk, "echo x > a && rm -rf d && echo n > new")
	if _, err := f.k.Rollback(context.Background(), tk); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(tree(t, f.folder), tree(t, tk.Paths.Copy)); d != "" {
		t.Fatalf("after rollback the copy differs from the folder:\n%s", d)
	}
	if st, _ := f.k.Status(context.Background(), tk); len(st.Effects) != 0 {
		t.Fatalf("after rollback status = %v", lines(st.Effects))
	}
}

func TestCopyKeepsModesTimesAndLinksAndSkipsSpecialFiles(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{"x.sh": "#!/bin/sh\n"})
	must(t, os.Chmod(filepath.Join(f.folder, "x.sh"), 0o751))
	must(t, os.Symlink("/etc/passwd", filepath.Join(f.folder, "outside")))
	must(t, syscall.Mkfifo(filepath.Join(f.folder, "pipe"), 0o600))
	rep, err := f.k.NewTask(context.Background(), f.folder)
	if err != nil {
		t.Fatal(err)
	}
	c := rep.Task.Paths.Copy
	fi, _ := os.Lstat(filepath.Join(c, "x.sh"))
	fo, _ := os.Lstat(filepath.Join(f.folder, "x.sh"))
	if fi.Mode() != fo.Mode() || !fi.ModTime().Equal(fo.ModTime()) {
		t.Fatalf("x.sh: copy %v %v, folder %v %v", fi.Mode(), fi.ModTime(), fo.Mode(), fo.ModTime())
	}
	if target, err := os.Readlink(filepath.Join(c, "outside")); err != nil || target != "/etc/passwd" {
		t.Fatalf("link copied as %q, %v; want the link itself", target, err)
	}
	if _, err := os.Lstat(filepath.Join(c, "pipe")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the fifo was copied")
	}
	if len(rep.Problems) != 1 || rep.Problems[0].Path != "pipe" {
		t.Fatalf("problems = %v, want the fifo said", rep.Problems)
	}
}

func TestNewRefusesWhatIsNotAFolder(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{"file.txt": "x"})
	for name, path := range map[string]string{
		"missing": filepath.Join(f.folder, "nope"),
		"file":    filepath.Join(f.folder, "file.txt"),
		"home":    f.k.Store().Root,
	} {
		if _, err := f.k.NewTask(context.Background(), path); err == nil {
			t.Errorf("%s: NewTask(%s) made a task", name, path)
		}
	}
	if ids, _ := f.k.Store().IDs(); len(ids) != 0 {
		t.Fatalf("failed NewTask calls left tasks behind: %v", ids)
	}
}

func TestInjectedDiskFullDuringCommitChangesNothing(t *testing.T) {
	// Runs the commit in a child process: KULE_FAULT is read at start.
	t.Parallel()
	f := newFixture(t, map[string]string{"a": "1", "b": "2"})
	tk := f.newTask()
	f.sh(tk, "echo new > a && echo n > c && rm b")
	before := tree(t, f.folder)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "KULE_FAULT=stage.write:ENOSPC", "KULE_TEST_HOME="+f.k.Store().Root, "KULE_TEST_TASK="+tk.ID)
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), "no space left on device") || !strings.Contains(string(out), "nothing in the folder changed") {
		t.Fatalf("commit under a full disk said:\n%s", out)
	}
	if d := cmp.Diff(before, tree(t, f.folder)); d != "" {
		t.Fatalf("a failed commit changed the folder:\n%s", d)
	}
	if _, err := os.Stat(tk.Paths.Journal); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the journal stayed after a rolled-back commit")
	}
	// The changes are still there to commit once there is room.
	if rep, err := f.k.Commit(context.Background(), tk, kernel.CommitOptions{}); err != nil || len(rep.Applied) != 3 {
		t.Fatalf("commit after the disk has room: %v, %v", rep, err)
	}
}

// TestMain doubles as a child process that runs one commit, for tests that
// need a fresh process (KULE_FAULT is read when the process starts).
func TestMain(m *testing.M) {
	if home := os.Getenv("KULE_TEST_HOME"); home != "" {
		k, err := kernel.New(kernel.Config{Home: home})
		if err == nil {
			var tk *task.Task
			if tk, err = k.Resolve(os.Getenv("KULE_TEST_TASK")); err == nil {
				_, err = k.Commit(context.Background(), tk, kernel.CommitOptions{})
			}
		}
		fmt.Println("commit:", err)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// Files that appear and vanish while a task is made are passed over and
// said; making the task never fails because of them.
func TestFilesVanishingWhileTheTaskIsMade(t *testing.T) {
	t.Parallel()
	files := map[string]string{}
	for i := range 300 {
		files[fmt.Sprintf("d%d/f%d", i%10, i)] = "x"
	}
	f := newFixture(t, files)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			p := filepath.Join(f.folder, fmt.Sprintf("d%d", n%10), fmt.Sprintf("churn%d", n%50))
			_ = os.WriteFile(p, []byte("y"), 0o644)
			_ = os.Remove(p)
		}
	}()
	for range 5 {
		rep, err := f.k.NewTask(context.Background(), f.folder)
		if err != nil {
			close(stop)
			t.Fatalf("NewTask while files churn: %v", err)
		}
		for _, p := range rep.Problems {
			if p.Kind != "vanished" {
				t.Errorf("problem %v, want only vanished files", p)
			}
		}
	}
	close(stop)
	<-done
}

func TestTaskIDPrefixes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{"a": "1"})
	tk := f.newTask()
	for _, p := range []string{tk.ID, tk.ID[:4], strings.ToUpper(tk.ID[:3])} {
		if got, err := f.k.Resolve(p); err != nil || got.ID != tk.ID {
			t.Errorf("Resolve(%q) = %v, %v", p, got, err)
		}
	}
	for _, p := range []string{"", "zz", "123456789", "../x"} {
		if _, err := f.k.Resolve(p); err == nil {
			t.Errorf("Resolve(%q) found a task", p)
		}
	}
	// Make tasks until two share a first character: that prefix is ambiguous.
	seen := map[byte]string{tk.ID[0]: tk.ID}
	for {
		o := f.newTask()
		if prev, ok := seen[o.ID[0]]; ok {
			_, err := f.k.Resolve(o.ID[:1])
			if err == nil || !strings.Contains(err.Error(), prev) || !strings.Contains(err.Error(), o.ID) {
				t.Fatalf("ambiguous prefix %q: %v; want an error naming %s and %s", o.ID[:1], err, prev, o.ID)
			}
			return
		}
		seen[o.ID[0]] = o.ID
	}
}

// Two tasks change different functions of one file: the second commit merges
// three ways instead of refusing; the same function on both sides refuses.
func TestSecondCommitMergesDisjointChanges(t *testing.T) {
	t.Parallel()
	src := "package p\n\nfunc A() int {\n\treturn 1\n}\n\nfunc B() int {\n\treturn 2\n}\n"
	f := newFixture(t, map[string]string{"p.go": src})
	a, b := f.newTask(), f.newTask()
	f.sh(a, `sed -i 's/return 1/return 10/' p.go`)
	f.sh(b, `sed -i 's/return 2/return 20/' p.go`)
	lineMerge := func(path string, base, ours, theirs []byte) ([]byte, []string, []string) {
		r := review.Merge(context.Background(), nil, path, base, ours, theirs)
		return r.Merged, r.Conflicts, r.Notes
	}
	if _, err := f.k.Commit(context.Background(), a, kernel.CommitOptions{Merge: lineMerge}); err != nil {
		t.Fatal(err)
	}
	rep, err := f.k.Commit(context.Background(), b, kernel.CommitOptions{Merge: lineMerge})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Merged) != 1 {
		t.Fatalf("merged = %v, want p.go", rep.Merged)
	}
	got, _ := os.ReadFile(filepath.Join(f.folder, "p.go"))
	if !strings.Contains(string(got), "return 10") || !strings.Contains(string(got), "return 20") {
		t.Fatalf("p.go after both commits:\n%s", got)
	}
	// Undo of the merged commit gives back task a's version.
	if _, err := f.k.Undo(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	got, _ = os.ReadFile(filepath.Join(f.folder, "p.go"))
	if !strings.Contains(string(got), "return 10") || strings.Contains(string(got), "return 20") {
		t.Fatalf("p.go after undo:\n%s", got)
	}

	c := f.newTask()
	d := f.newTask()
	f.sh(c, `sed -i 's/return 10/return 100/' p.go`)
	f.sh(d, `sed -i 's/return 10/return 1000/' p.go`)
	if _, err := f.k.Commit(context.Background(), c, kernel.CommitOptions{Merge: lineMerge}); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(f.folder, "p.go"))
	_, err = f.k.Commit(context.Background(), d, kernel.CommitOptions{Merge: lineMerge})
	var ue *kernel.UnderneathError
	if !errors.As(err, &ue) || len(ue.Conflicts) == 0 {
		t.Fatalf("commit of a change to the same lines = %v, want a conflict", err)
	}
	if after, _ := os.ReadFile(filepath.Join(f.folder, "p.go")); string(after) != string(before) {
		t.Fatalf("a conflicting commit changed p.go")
	}
}
