package kernel_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/internal/runner"
	"github.com/kulehq/kule/kernel/internal/task"
)

// One Kernel serves every goroutine of the daemon: two commits on a Kernel
// that has not yet read its signing key must not race for it (run with
// -race), and both land with a history that verifies.
func TestTwoGoroutinesCommitOnAFreshKernel(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	maker, err := kernel.New(kernel.Config{Home: home, Backend: os.Getenv("KULE_TEST_BACKEND")})
	must(t, err)
	f := &fixture{t: t, k: maker}
	var folders [2]string
	var tasks [2]*task.Task
	for i := range tasks {
		folders[i] = filepath.Join(dir, "folder"+string(rune('a'+i)))
		write(t, folders[i], map[string]string{"notes.md": "hello\n"})
		f.folder = folders[i]
		tasks[i] = f.newTask()
		f.sh(tasks[i], "echo more >> notes.md")
	}
	k, err := kernel.New(kernel.Config{Home: home, Backend: os.Getenv("KULE_TEST_BACKEND")})
	must(t, err)
	var wg sync.WaitGroup
	errs := make([]error, len(tasks))
	for i, tk := range tasks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = k.Commit(context.Background(), tk, kernel.CommitOptions{})
		}()
	}
	wg.Wait()
	for i, tk := range tasks {
		if errs[i] != nil {
			t.Fatalf("commit %d: %v", i, errs[i])
		}
		b, err := os.ReadFile(filepath.Join(folders[i], "notes.md"))
		must(t, err)
		if string(b) != "hello\nmore\n" {
			t.Errorf("folder %d holds %q after its commit, want %q", i, b, "hello\nmore\n")
		}
		if err := k.VerifyHistory(tk); err != nil {
			t.Errorf("history of task %d does not verify: %v", i, err)
		}
	}
}

// counting is a runner that counts the commands it starts.
type counting struct {
	runner.Direct
	n *atomic.Int32
}

func (c counting) Run(ctx context.Context, spec runner.Spec) (int, error) {
	c.n.Add(1)
	return c.Direct.Run(ctx, spec)
}

// With gives one run its own runner; the Kernel it came from keeps its own,
// so runs on other goroutines are not changed underneath.
func TestWithLeavesTheSharedKernelAlone(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{"a.txt": "a\n"})
	tk := f.newTask()
	var n atomic.Int32
	shared := f.k
	run := shared.With(kernel.RunHooks{Runner: counting{n: &n}})
	if run.Store() != shared.Store() {
		t.Fatal("With's Kernel opened a store of its own; it must share the home's")
	}
	f.sh(tk, "echo b > b.txt")
	if got := n.Load(); got != 0 {
		t.Fatalf("the shared Kernel ran %d command(s) with one run's runner", got)
	}
	f.k = run
	f.sh(tk, "echo c > c.txt")
	if got := n.Load(); got != 1 {
		t.Fatalf("the run's Kernel started %d command(s) with its runner, want 1", got)
	}
}

// A context that has ended stops the work before anything is written: the
// walk of a status, and a commit, undo, rollback or delete before its
// journal; the folder and the task stay as they were.
func TestAnEndedContextChangesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{"notes.md": "hello\n"})
	tk := f.newTask()
	f.sh(tk, "echo more >> notes.md")
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.k.Status(ended, tk); !errors.Is(err, context.Canceled) {
		t.Fatalf("status on an ended context = %v, want context.Canceled", err)
	}
	if _, err := f.k.Commit(ended, tk, kernel.CommitOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("commit on an ended context = %v, want context.Canceled", err)
	}
	if _, err := f.k.Rollback(ended, tk); !errors.Is(err, context.Canceled) {
		t.Fatalf("rollback on an ended context = %v, want context.Canceled", err)
	}
	if err := f.k.Delete(ended, tk); !errors.Is(err, context.Canceled) {
		t.Fatalf("delete on an ended context = %v, want context.Canceled", err)
	}
	if _, err := f.k.NewTask(ended, f.folder); !errors.Is(err, context.Canceled) {
		t.Fatalf("new on an ended context = %v, want context.Canceled", err)
	}
	b, err := os.ReadFile(filepath.Join(f.folder, "notes.md"))
	must(t, err)
	if string(b) != "hello\n" {
		t.Fatalf("the folder holds %q after a cancelled commit, want it untouched", b)
	}
	if ids, _ := f.k.Store().IDs(); len(ids) != 1 {
		t.Fatalf("tasks after a cancelled new and delete: %v, want the one task", ids)
	}
	// The same task still commits, then undo on an ended context keeps it.
	if _, err := f.k.Commit(context.Background(), tk, kernel.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.k.Undo(ended, tk); !errors.Is(err, context.Canceled) {
		t.Fatalf("undo on an ended context = %v, want context.Canceled", err)
	}
	b, err = os.ReadFile(filepath.Join(f.folder, "notes.md"))
	must(t, err)
	if string(b) != "hello\nmore\n" {
		t.Fatalf("the folder holds %q after a cancelled undo, want the commit kept", b)
	}
}
