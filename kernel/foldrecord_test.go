package kernel_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/internal/effects"
	"github.com/kulehq/kule/kernel/internal/task"
)

// effectLines is what a person reads of each effect, with the files a
// whole directory stands for.
func effectLines(st *kernel.Status) []string {
	out := []string{}
	for _, e := range st.Effects {
		s := e.String()
		if e.Dir {
			s += " [" + strconv.Itoa(e.Files) + " files]"
		}
		out = append(out, s)
	}
	return out
}

// statusOf is the task's status as kule status finds it, and whether it
// came from the record of folds.
func statusOf(t *testing.T, k *kernel.Kernel, tk *task.Task) ([]string, bool) {
	t.Helper()
	st, err := k.Status(context.Background(), tk)
	if err != nil {
		t.Fatal(err)
	}
	return effectLines(st), st.FromFolds()
}

func walked(t *testing.T, k *kernel.Kernel, tk *task.Task) []string {
	t.Helper()
	st, err := k.WalkStatus(tk)
	if err != nil {
		t.Fatal(err)
	}
	return effectLines(st)
}

// On the overlay backend a status after sandboxed commands is read from
// the record of what their folds moved, and finds what a walk of the
// whole copy finds, command after command.
func TestOverlayStatusFromFoldsFindsWhatAWalkFinds(t *testing.T) {
	needOverlay(t)
	t.Setenv("KULE_SECRETS_KEYFILE", "1")
	f := overlayFixture(t, map[string]string{
		".env":  "OPENAI_API_KEY=sk-proj-Zq8xW3vB7nM1kL5pR9tY2uI6oP4aS0dF\n",
		"a.txt": "a\n", "b.txt": "b\n", "gone/x": "x\n", "gone/y/z": "z\n", "docs/one.md": "1\n", "docs/two.md": "2\n",
		"deep/a/b/c.txt": "c\n", "redo/old": "o\n", "run.sh": "#!/bin/sh\n", ".gitignore": "*.log\n",
	})
	tk := f.newTask()
	// kule new begins the record: the copy is the base, its .env masked.
	if got, fromFolds := statusOf(t, f.k, tk); !fromFolds || len(got) != 0 {
		t.Fatalf("a new task's status: %v (from the record: %v)", got, fromFolds)
	}
	for _, script := range []string{
		"echo more >> a.txt",
		"echo FEATURE=on >> .env",
		"rm -r gone",
		"echo new > deep/a/b/new.txt && echo changed > deep/a/b/c.txt",
		"rm -r redo && mkdir redo && echo n > redo/new",
		"mv docs manual",
		"mv b.txt manual/b.txt",
		"chmod 755 run.sh && ln -s a.txt link && echo l > build.log",
		"echo again > a.txt",
		"rm -r manual",
	} {
		if out, err := f.sandboxed(tk, kernel.SandboxOptions{}, script); err != nil {
			t.Fatalf("%s: %v\n%s", script, err, out)
		}
		got, fromFolds := statusOf(t, f.k, tk)
		if !fromFolds {
			t.Fatalf("after %q the status walked the copy: no record of the folds was used", script)
		}
		if d := cmp.Diff(walked(t, f.k, tk), got); d != "" {
			t.Fatalf("after %q (-walk +record):\n%s", script, d)
		}
	}
}

// Whatever writes the copy with no fold to note it ends the record: the
// next status walks the copy and sees the write.
func TestOverlayRecordEndsWithEveryOtherWriter(t *testing.T) {
	needOverlay(t)
	for name, write := range map[string]func(t *testing.T, f *fixture, tk *task.Task){
		// --no-sandbox: the command writes the copy itself.
		"a command without the sandbox": func(t *testing.T, f *fixture, tk *task.Task) { f.sh(tk, "echo direct > direct.txt") },
		// A person's shell in the copy (the app's terminal).
		"a shell by hand": func(t *testing.T, f *fixture, tk *task.Task) {
			done, err := kernel.OpenByHand(tk)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(tk.Paths.Copy, "direct.txt"), []byte("by hand\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if got, fromFolds := statusOf(t, f.k, tk); fromFolds || !cmp.Equal(got, []string{"~ a.txt", "+ direct.txt"}) {
				t.Fatalf("while the shell is open: %v (from the record: %v)", got, fromFolds)
			}
			done()
		},
		// An agent run holds the task and writes its copy directly.
		"an agent run": func(t *testing.T, f *fixture, tk *task.Task) {
			if err := kernel.ForgetFolds(tk); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(tk.Paths.Copy, "direct.txt"), []byte("agent\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := overlayFixture(t, map[string]string{"a.txt": "a\n"})
			tk := f.newTask()
			if out, err := f.sandboxed(tk, kernel.SandboxOptions{}, "echo more >> a.txt"); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if _, fromFolds := statusOf(t, f.k, tk); !fromFolds {
				t.Fatal("no record of the folds after a sandboxed command")
			}
			write(t, f, tk)
			got, _ := statusOf(t, f.k, tk)
			if want := []string{"~ a.txt", "+ direct.txt"}; !cmp.Equal(got, want) {
				t.Fatalf("status %v, want %v", got, want)
			}
			// That walk, under the task's lock, began a record again.
			if got, fromFolds := statusOf(t, f.k, tk); !fromFolds || !cmp.Equal(got, []string{"~ a.txt", "+ direct.txt"}) {
				t.Fatalf("the next status: %v (from the record: %v)", got, fromFolds)
			}
		})
	}
}

// An edit made in the copy by a program of the person's own is not seen
// while a record holds (the price of a status that costs the changes);
// --full walks the copy, sees it, and begins the record again.
func TestOverlayStatusFullSeesAnEditByHand(t *testing.T) {
	needOverlay(t)
	f := overlayFixture(t, map[string]string{"a.txt": "a\n"})
	tk := f.newTask()
	if out, err := f.sandboxed(tk, kernel.SandboxOptions{}, "echo more >> a.txt"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(tk.Paths.Copy, "editor.txt"), []byte("saved\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, fromFolds := statusOf(t, f.k, tk); !fromFolds || !cmp.Equal(got, []string{"~ a.txt"}) {
		t.Fatalf("status: %v (from the record: %v)", got, fromFolds)
	}
	st, err := f.k.StatusFull(context.Background(), tk)
	if err != nil {
		t.Fatal(err)
	}
	if got := effectLines(st); st.FromFolds() || !cmp.Equal(got, []string{"~ a.txt", "+ editor.txt"}) {
		t.Fatalf("--full: %v (from the record: %v)", got, st.FromFolds())
	}
	if got, fromFolds := statusOf(t, f.k, tk); !fromFolds || !cmp.Equal(got, []string{"~ a.txt", "+ editor.txt"}) {
		t.Fatalf("after --full: %v (from the record: %v)", got, fromFolds)
	}
}

// A commit re-syncs the base, and a record is only for the base it was
// begun on: the status after it walks, and finds what the commit kept back.
func TestOverlayRecordEndsWithACommit(t *testing.T) {
	needOverlay(t)
	f := overlayFixture(t, map[string]string{"a.txt": "a\n"})
	tk := f.newTask()
	if out, err := f.sandboxed(tk, kernel.SandboxOptions{}, "echo more >> a.txt && echo n > new.txt"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if _, err := f.k.Commit(context.Background(), tk, kernel.CommitOptions{Select: func(e effects.Effect) bool { return e.Path == "a.txt" }}); err != nil {
		t.Fatal(err)
	}
	got, fromFolds := statusOf(t, f.k, tk)
	if fromFolds || !cmp.Equal(got, []string{"+ new.txt"}) {
		t.Fatalf("after the commit: %v (from the record: %v)", got, fromFolds)
	}
}

// A folder that is a repository, and a repository a command makes: the
// record names their .git directories (the root's too), and a status from
// it finds the same git changes as a walk.
func TestOverlayStatusFromFoldsInARepository(t *testing.T) {
	needOverlay(t)
	f := overlayFixture(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	gitIn(t, f.folder, "init", "-q")
	gitIn(t, f.folder, "add", "-A")
	gitIn(t, f.folder, "commit", "-qm", "first")
	tk := f.newTask()
	for _, script := range []string{
		"echo more >> a.txt",
		"git -c user.email=k@k -c user.name=k commit -qam second",
		"mkdir sub && cd sub && git init -q && echo s > s.txt",
	} {
		if out, err := f.sandboxed(tk, kernel.SandboxOptions{}, script); err != nil {
			t.Fatalf("%s: %v\n%s", script, err, out)
		}
		st, err := f.k.Status(context.Background(), tk)
		if err != nil {
			t.Fatal(err)
		}
		if !st.FromFolds() {
			t.Fatalf("after %q the status walked the copy: no record of the folds was used", script)
		}
		whole, err := f.k.WalkStatus(tk)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(effectLines(whole), effectLines(st)); d != "" {
			t.Fatalf("after %q (-walk +record):\n%s", script, d)
		}
		if d := cmp.Diff(gitLines(whole), gitLines(st)); d != "" {
			t.Fatalf("git after %q (-walk +record):\n%s", script, d)
		}
	}
}

// The mark of a shell whose daemon ended without taking it away is not
// held forever: once its process is gone, the record is used again.
func TestOverlayMarkOfAGoneShellIsPassedOver(t *testing.T) {
	needOverlay(t)
	f := overlayFixture(t, map[string]string{"a.txt": "a\n"})
	tk := f.newTask()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	hands := filepath.Join(tk.Paths.Dir, "overlay", "hands")
	if err := os.MkdirAll(hands, 0o700); err != nil {
		t.Fatal(err)
	}
	mark := filepath.Join(hands, fmt.Sprintf("shell-%d-1", gone.Process.Pid))
	if err := os.WriteFile(mark, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := f.sandboxed(tk, kernel.SandboxOptions{}, "echo more >> a.txt"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got, fromFolds := statusOf(t, f.k, tk); !fromFolds || !cmp.Equal(got, []string{"~ a.txt"}) {
		t.Fatalf("status: %v (from the record: %v)", got, fromFolds)
	}
	if _, err := os.Lstat(mark); !os.IsNotExist(err) {
		t.Fatalf("the gone shell's mark is still there: %v", err)
	}
	// A live one (this process) keeps every status a walk.
	done, err := kernel.OpenByHand(tk)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	if _, fromFolds := statusOf(t, f.k, tk); fromFolds {
		t.Fatal("a status used the record while a shell had the copy open")
	}
}
