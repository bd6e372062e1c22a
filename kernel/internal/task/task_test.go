package task

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kulehq/kule/kernel/internal/limits"
)

func newStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "home"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// save stores a task with this id the way kule new leaves it.
func save(t *testing.T, s *Store, tk *Task) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(s.TasksDir(), tk.ID), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(tk); err != nil {
		t.Fatal(err)
	}
}

func TestOpenMakesAPrivateHome(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	for _, d := range []string{s.Root, s.TasksDir(), s.KeysDir(), filepath.Join(s.Root, "locks")} {
		st, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if !st.IsDir() || st.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v, want a directory only its owner reads", d, st.Mode())
		}
	}
	// Opening again keeps what is there.
	if _, err := Open(s.Root); err != nil {
		t.Fatal(err)
	}
}

func TestOpenFailsWhereTheHomeCannotBe(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(file); err == nil || !strings.HasPrefix(err.Error(), "kule home: ") {
		t.Fatalf("Open over a file = %v, want a kule home error", err)
	}
}

func TestDefaultRoot(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("KULE_HOME", dir)
	if got, err := DefaultRoot(); err != nil || got != dir {
		t.Errorf("with KULE_HOME: %q, %v; want %q", got, err, dir)
	}
	t.Chdir(dir)
	t.Setenv("KULE_HOME", "rel")
	if got, err := DefaultRoot(); err != nil || got != filepath.Join(dir, "rel") {
		t.Errorf("with a relative KULE_HOME: %q, %v; want it made absolute", got, err)
	}
	t.Setenv("KULE_HOME", "")
	t.Setenv("HOME", "/home/someone")
	if got, err := DefaultRoot(); err != nil || got != "/home/someone/.kule" {
		t.Errorf("without KULE_HOME: %q, %v; want ~/.kule", got, err)
	}
	t.Setenv("HOME", "")
	if _, err := DefaultRoot(); err == nil || !strings.Contains(err.Error(), "set KULE_HOME or HOME") {
		t.Errorf("with neither set: %v, want an error saying what to set", err)
	}
}

func TestSaveAndLoad(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	want := &Task{
		ID: "0123abcd", Folder: "/work/project", Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Name: "tidy", Colour: "teal", Group: "g", Backend: "copy", Order: 2, DiskBase: 4096,
		EnvTracked: []string{".env"}, Limits: limits.Limits{},
	}
	save(t, s, want)
	st, err := os.Stat(filepath.Join(s.TasksDir(), want.ID, "task.json"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("task.json mode %v, want 0600", st.Mode().Perm())
	}
	got, err := s.Load(want.ID)
	if err != nil {
		t.Fatal(err)
	}
	want.Paths = LayoutOf(filepath.Join(s.TasksDir(), want.ID))
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Load (-saved +loaded):\n%s", d)
	}
	if got.Paths.Copy != filepath.Join(s.TasksDir(), "0123abcd", "copy") || got.Paths.Lock != filepath.Join(s.TasksDir(), "0123abcd", "lock") {
		t.Errorf("layout: %+v", got.Paths)
	}
}

func TestSaveFailsWithoutTheTaskDirectory(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	if err := s.Save(&Task{ID: "0123abcd"}); err == nil {
		t.Fatal("Save into a missing task directory succeeded")
	}
}

func TestLoadSaysWhatIsWrong(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	if _, err := s.Load("0123abcd"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing task: %v, want ErrNotFound", err)
	}
	dir := filepath.Join(s.TasksDir(), "deadbeef")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "task.json"), []byte(`{"id": "deadbeef",`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load("deadbeef"); err == nil || !strings.Contains(err.Error(), "task deadbeef: task.json is damaged") {
		t.Errorf("damaged task.json: %v", err)
	}
	if err := os.Mkdir(filepath.Join(s.TasksDir(), "cafef00d"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(s.TasksDir(), "cafef00d", "task.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load("cafef00d"); err == nil || errors.Is(err, ErrNotFound) {
		t.Errorf("unreadable task.json: %v, want a read error", err)
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	for _, id := range []string{"ab12cd34", "ab12ef56", "ff000000"} {
		save(t, s, &Task{ID: id})
	}
	for name, tc := range map[string]struct {
		prefix string
		id     string // the task found, or
		err    error  // the error
		says   string // and what it says
	}{
		"whole id":          {prefix: "ff000000", id: "ff000000"},
		"unique prefix":     {prefix: "ff", id: "ff000000"},
		"upper case, blank": {prefix: "  AB12C ", id: "ab12cd34"},
		"ambiguous":         {prefix: "ab12", err: ErrAmbiguous, says: "ab12 fits ab12cd34, ab12ef56; type more of it"},
		"unknown":           {prefix: "0", err: ErrNotFound, says: "`kule list` shows the tasks"},
		"empty":             {prefix: " ", err: ErrBadID, says: "task ids are 8 hex characters"},
		"not hex":           {prefix: "ab12zz", err: ErrBadID, says: `"ab12zz"`},
		"too long":          {prefix: "ab12cd345", err: ErrBadID},
		"a path":            {prefix: "../ab12cd34", err: ErrBadID},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := s.Resolve(tc.prefix)
			if tc.err != nil {
				if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.says) {
					t.Fatalf("Resolve(%q) = %v, want %v saying %q", tc.prefix, err, tc.err, tc.says)
				}
				return
			}
			if err != nil || got.ID != tc.id {
				t.Fatalf("Resolve(%q) = %+v, %v; want %s", tc.prefix, got, err, tc.id)
			}
		})
	}
}

// Only directories named like an id and holding a task.json are tasks.
func TestIDsListsOnlyTasks(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	save(t, s, &Task{ID: "22222222"})
	save(t, s, &Task{ID: "11111111"})
	for _, d := range []string{"33333333", "notatask", ".new-44444444", "55555555.deleting", "ABCDEF12"} {
		if err := os.Mkdir(filepath.Join(s.TasksDir(), d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(s.TasksDir(), "66666666"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(s.TasksDir(), "11111111"), filepath.Join(s.TasksDir(), "77777777")); err != nil {
		t.Fatal(err)
	}
	ids, err := s.IDs()
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"11111111", "22222222"}, ids); d != "" {
		t.Errorf("IDs (-want +got):\n%s", d)
	}
}

func TestIDsFailsWithoutTheHome(t *testing.T) {
	t.Parallel()
	s := &Store{Root: filepath.Join(t.TempDir(), "none")}
	if _, err := s.IDs(); err == nil {
		t.Error("IDs of a missing home succeeded")
	}
	if _, err := s.List(); err == nil {
		t.Error("List of a missing home succeeded")
	}
	if _, err := s.Resolve("ab"); err == nil {
		t.Error("Resolve in a missing home succeeded")
	}
	if _, err := s.Broken(); err == nil {
		t.Error("Broken of a missing home succeeded")
	}
	if _, err := s.ResolveBroken("ab"); err == nil {
		t.Error("ResolveBroken in a missing home succeeded")
	}
}

// List follows the person's order, then creation time, and passes over a
// damaged task (Broken lists that one).
func TestListOrder(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	at := func(h int) time.Time { return time.Date(2026, 1, 1, h, 0, 0, 0, time.UTC) }
	save(t, s, &Task{ID: "aaaaaaaa", Created: at(3)})
	save(t, s, &Task{ID: "bbbbbbbb", Created: at(1)})
	save(t, s, &Task{ID: "cccccccc", Created: at(2), Order: 1})
	save(t, s, &Task{ID: "dddddddd", Created: at(0), Order: 2})
	if err := os.WriteFile(filepath.Join(s.TasksDir(), "aaaaaaaa", "task.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	save(t, s, &Task{ID: "eeeeeeee", Created: at(0)})
	ts, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tk := range ts {
		got = append(got, tk.ID)
	}
	if d := cmp.Diff([]string{"eeeeeeee", "bbbbbbbb", "cccccccc", "dddddddd"}, got); d != "" {
		t.Errorf("List (-want +got):\n%s", d)
	}
}

func TestNewIDIsFresh(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	seen := map[string]bool{}
	for range 50 {
		id, err := s.NewID()
		if err != nil {
			t.Fatal(err)
		}
		if !isID(id) {
			t.Fatalf("NewID = %q, want 8 hex characters", id)
		}
		if seen[id] {
			t.Fatalf("NewID gave %s twice", id)
		}
		seen[id] = true
		if err := os.Mkdir(filepath.Join(s.TasksDir(), id), 0o700); err != nil {
			t.Fatal(err)
		}
	}
}

// An id is taken by a task, by a task being made and by a task being
// deleted: none of them is handed out again.
func TestIDFree(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	for _, name := range []string{"11111111", ".new-22222222", "33333333.deleting"} {
		if err := os.Mkdir(filepath.Join(s.TasksDir(), name), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for id, free := range map[string]bool{"11111111": false, "22222222": false, "33333333": false, "44444444": true} {
		if got := s.idFree(id); got != free {
			t.Errorf("idFree(%s) = %v, want %v", id, got, free)
		}
	}
}

func TestFolderLockPath(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	a, b := s.FolderLockPath("/work/a"), s.FolderLockPath("/work/b")
	if a == b {
		t.Fatal("two folders share a lock")
	}
	if a != s.FolderLockPath("/work/a") {
		t.Fatal("one folder's lock moves between calls")
	}
	if filepath.Dir(a) != filepath.Join(s.Root, "locks") || !strings.HasSuffix(a, ".lock") || strings.Contains(a, "work") {
		t.Errorf("lock %s: want a hashed name in the home's locks directory, never in the folder", a)
	}
}

// Every kind of broken task says what left it; a link or a file under
// tasks/ is nothing Kule made and is left out.
func TestBrokenSaysWhatLeftEachOne(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	save(t, s, &Task{ID: "00000000"}) // whole: not broken
	mk := func(name string) string {
		t.Helper()
		dir := filepath.Join(s.TasksDir(), name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	mk(".new-11111111")
	mk("22222222.deleting")
	mk("33333333")
	if err := os.WriteFile(filepath.Join(mk("44444444"), "task.json"), []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	mk("55555555")
	mk("55555555/task.json")
	mk(".new-nothex!")
	mk("other")
	if err := os.Symlink(t.TempDir(), filepath.Join(s.TasksDir(), ".new-66666666")); err != nil {
		t.Fatal(err)
	}
	bs, err := s.Broken()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, b := range bs {
		got[b.ID] = b.Reason
		if b.Busy {
			t.Errorf("%s is busy with nothing holding its lock", b.ID)
		}
	}
	want := map[string]string{
		"11111111": "an interrupted kule new: the task was never finished",
		"22222222": "an interrupted kule delete",
		"33333333": "no task.json: an interrupted kule new",
		"44444444": "task.json is damaged",
	}
	reason55 := got["55555555"]
	delete(got, "55555555")
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Broken (-want +got):\n%s", d)
	}
	if !strings.HasPrefix(reason55, "task.json cannot be read: ") {
		t.Errorf("unreadable task.json: reason %q", reason55)
	}
	for i := 1; i < len(bs); i++ {
		if bs[i-1].ID >= bs[i].ID {
			t.Errorf("Broken is not sorted by id: %s before %s", bs[i-1].ID, bs[i].ID)
		}
	}
}

func TestResolveBroken(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	for _, name := range []string{"ab000000.deleting", ".new-ab111111"} {
		if err := os.Mkdir(filepath.Join(s.TasksDir(), name), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.ResolveBroken("ab"); !errors.Is(err, ErrAmbiguous) || !strings.Contains(err.Error(), "fits 2 broken tasks") {
		t.Errorf("ambiguous: %v", err)
	}
	if _, err := s.ResolveBroken("cd"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown: %v", err)
	}
	if _, err := s.ResolveBroken(""); !errors.Is(err, ErrNotFound) {
		t.Errorf("empty prefix: %v, want ErrNotFound (never every broken task)", err)
	}
	if b, err := s.ResolveBroken(" AB1 "); err != nil || b.Dir != s.NewDir("ab111111") {
		t.Errorf("ResolveBroken(AB1) = %+v, %v", b, err)
	}
}

// holdLockEnv names the file the helper process locks.
const holdLockEnv = "KULE_TASK_TEST_HOLD_LOCK"

// TestHelperProcess is not a test: run again as another process, it takes
// the lock on $KULE_TASK_TEST_HOLD_LOCK, says "locked" and holds the lock
// until its stdin closes.
func TestHelperProcess(t *testing.T) {
	path := os.Getenv(holdLockEnv)
	if os.Getenv("GO_WANT_HELPER_PROCESS") != "1" || path == "" {
		return
	}
	l, err := LockFile(path)
	if err != nil {
		os.Stdout.WriteString("error: " + err.Error() + "\n")
		os.Exit(1)
	}
	os.Stdout.WriteString("locked\n")
	if _, err := io.Copy(io.Discard, os.Stdin); err != nil {
		os.Exit(1)
	}
	if err := l.Unlock(); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

// wait returns what ch gives, or fails the test after 30 s saying what it
// waited for.
func wait[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("waited 30 s for %s", what)
	}
	panic("unreachable")
}

// A lock another kule process holds: TryLockFile says so without waiting,
// Broken calls that task busy, and LockFile waits until the holder lets go.
func TestALockHeldByAnotherProcess(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	dir := s.NewDir("0123abcd")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "lock")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), "GO_WANT_HELPER_PROCESS=1", holdLockEnv+"="+path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var exitErr error
	exited := make(chan struct{})
	defer func() {
		stdin.Close()
		<-exited
	}()
	said := make(chan string, 1)
	go func() {
		defer close(exited)
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		said <- line
		_, _ = io.Copy(io.Discard, stdout)
		exitErr = cmd.Wait()
	}()
	if line := wait(t, said, "the other process to take the lock"); line != "locked\n" {
		t.Fatalf("the other process said %q", line)
	}

	l, err := TryLockFile(path)
	if err != nil || l != nil {
		t.Fatalf("TryLockFile on a held lock = %v, %v; want nil, nil", l, err)
	}
	bs, err := s.Broken()
	if err != nil || len(bs) != 1 || !bs[0].Busy || bs[0].Reason != "a kule new is making it right now" {
		t.Fatalf("Broken while another process makes the task: %+v, %v", bs, err)
	}

	got := make(chan error, 1)
	var mine *Lock
	go func() {
		var err error
		mine, err = LockFile(path)
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("LockFile returned (%v) while another process held the lock", err)
	default:
	}
	if err := stdin.Close(); err != nil {
		t.Fatal(err)
	}
	if err := wait(t, got, "LockFile once the other process let go"); err != nil {
		t.Fatal(err)
	}
	wait(t, exited, "the other process to exit")
	if exitErr != nil {
		t.Fatalf("the other process: %v", exitErr)
	}
	if l, err := TryLockFile(path); err != nil || l != nil {
		t.Fatalf("TryLockFile while this process holds it = %v, %v; want nil, nil", l, err)
	}
	if err := mine.Unlock(); err != nil {
		t.Fatal(err)
	}
	l, err = TryLockFile(path)
	if err != nil || l == nil {
		t.Fatalf("TryLockFile on a free lock = %v, %v", l, err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatalf("a second Unlock: %v", err)
	}
	var none *Lock
	if err := none.Unlock(); err != nil {
		t.Fatalf("Unlock of no lock: %v", err)
	}
}

// TryLockFile never follows a link (a task could plant one), and neither
// lock call makes a file it cannot.
func TestLockRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "lock")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if l, err := TryLockFile(link); err == nil || l != nil {
		t.Errorf("TryLockFile through a link = %v, %v; want an error", l, err)
	}
	if _, err := TryLockFile(filepath.Join(dir, "missing")); err == nil {
		t.Error("TryLockFile of a missing file succeeded")
	}
	if _, err := os.Stat(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Error("TryLockFile made the file")
	}
	if _, err := LockFile(filepath.Join(dir, "no", "such", "dir")); err == nil || !strings.HasPrefix(err.Error(), "lock: ") {
		t.Errorf("LockFile in a missing directory = %v", err)
	}
}

// TestLoadRefusesATaskJSONNamingAnotherTask: task.json's id says where Save
// writes the task back, so one that is not its directory's (here a path out
// of Kule's home) is refused when read, and Save refuses an id that is not
// one; nothing is written outside the home.
func TestLoadRefusesATaskJSONNamingAnotherTask(t *testing.T) {
	t.Run("guard off: the write lands outside", func(t *testing.T) {
		idGuard = false
		defer func() { idGuard = true }()
		root := plantForeignID(t)
		s, _ := Open(filepath.Join(root, "home"))
		tk, err := s.Load("0123abcd")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(root, "evil"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := s.Save(tk); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(root, "evil", "task.json")); err != nil {
			t.Fatalf("without the guard the attack should land outside the home: %v", err)
		}
	})
	root := plantForeignID(t)
	s, err := Open(filepath.Join(root, "home"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load("0123abcd"); err == nil || !strings.Contains(err.Error(), `names task "../../evil"`) {
		t.Fatalf("Load = %v, want a refusal naming the id inside", err)
	}
	if err := s.Save(&Task{ID: "../../evil"}); !errors.Is(err, ErrBadID) {
		t.Fatalf("Save of a bad id = %v, want ErrBadID", err)
	}
	if _, err := os.Stat(filepath.Join(root, "evil")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("something was written outside Kule's home: %v", err)
	}
}

// plantForeignID makes a home whose task 0123abcd has a task.json naming
// "../../evil", and returns the folder that holds the home.
func plantForeignID(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	s, err := Open(filepath.Join(root, "home"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(s.TasksDir(), "0123abcd")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "task.json"), []byte(`{"id":"../../evil","folder":"/x"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return root
}
