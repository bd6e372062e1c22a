package kernel_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kulehq/kule/internal/asnobody"
	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/internal/beneath"
	"github.com/kulehq/kule/kernel/internal/runner"
	"github.com/kulehq/kule/kernel/internal/sandbox"
	"github.com/kulehq/kule/kernel/internal/task"
)

// guarded runs attack twice: with kernel/internal/beneath's guard taken away (the
// attack must harm the victim, or the test proves nothing) and with it (the
// victim must be untouched). attack returns whether the victim was harmed
// and the error Kule gave.
func guarded(t *testing.T, attack func(t *testing.T) (harmed bool, err error), check func(t *testing.T, err error)) {
	guardedBy(t, func(t *testing.T) { beneath.FollowLinksForTest(t) }, attack, check)
}

// guardedBy is guarded with the guard taken away by off.
func guardedBy(t *testing.T, off func(t *testing.T), attack func(t *testing.T) (harmed bool, err error), check func(t *testing.T, err error)) {
	t.Run("guard-off", func(t *testing.T) {
		off(t)
		if harmed, err := attack(t); !harmed {
			t.Fatalf("with links followed the attack did no harm (err %v): the guarded run below proves nothing", err)
		}
	})
	t.Run("guard-on", func(t *testing.T) {
		harmed, err := attack(t)
		if harmed {
			t.Fatalf("the attack reached the victim (err %v)", err)
		}
		check(t, err)
	})
}

// saysLink checks the error a person sees: it names the link, says nothing
// outside was touched, and what to do.
func saysLink(t *testing.T, err error, link string) {
	t.Helper()
	if !errors.Is(err, beneath.ErrLink) {
		t.Fatalf("got %v, want an error wrapping beneath.ErrLink", err)
	}
	for _, want := range []string{link, "nothing outside", "kule rollback"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
}

func fileIs(path, want string) bool {
	b, err := os.ReadFile(path)
	return err == nil && string(b) == want
}

// The folder has sub/; the task commits sub/important, then replaces sub by a
// link to a victim directory that holds an important/ of its own. Undo takes
// the commit back and makes the copy follow: without the guard it removes
// ~/victim/important recursively.
func TestUndoNeverRemovesThroughALinkInTheCopy(t *testing.T) {
	var (
		f      *fixture
		tk     *task.Task
		victim string
	)
	victimKept := func() bool { return fileIs(filepath.Join(victim, "important", "data"), "the person's") }
	guarded(t, func(t *testing.T) (bool, error) {
		victim = t.TempDir()
		write(t, victim, map[string]string{"important/data": "the person's", "important/more/x": "x"})
		f = newFixture(t, map[string]string{"sub/keep": "k"})
		tk = f.newTask()
		f.sh(tk, "echo new > sub/important")
		if _, err := f.k.Commit(context.Background(), tk, kernel.CommitOptions{}); err != nil {
			t.Fatal(err)
		}
		f.sh(tk, "rm -rf sub && ln -s "+victim+" sub")
		_, err := f.k.Undo(context.Background(), tk)
		return !victimKept(), err
	}, func(t *testing.T, err error) {
		saysLink(t, err, "sub")
		if !fileIs(filepath.Join(f.folder, "sub", "important"), "new\n") {
			t.Error("the refused undo changed the folder")
		}
		// What the error says to do works: rollback, then undo.
		if _, err := f.k.Rollback(context.Background(), tk); err != nil {
			t.Fatalf("rollback after the refused undo: %v", err)
		}
		if _, err := f.k.Undo(context.Background(), tk); err != nil {
			t.Fatalf("undo after rollback: %v", err)
		}
		if _, err := os.Lstat(filepath.Join(f.folder, "sub", "important")); !os.IsNotExist(err) || !fileIs(filepath.Join(f.folder, "sub", "keep"), "k") {
			t.Fatalf("undo after rollback did not take the commit back: %v", err)
		}
		if !victimKept() {
			t.Fatal("the rollback or the undo after it reached the victim")
		}
	})
}

// The folder holds tools/pre-commit; the task deletes it and commits, then
// replaces tools by a link to another repository's .git/hooks. Undo puts the
// file back in the folder and, without the guard, into that repository's
// hooks, where the next git commit runs it.
func TestUndoNeverPutsAHookIntoAnotherRepository(t *testing.T) {
	guarded(t, func(t *testing.T) (bool, error) {
		other := t.TempDir()
		git := func(args ...string) {
			t.Helper()
			cmd := exec.Command("git", append([]string{"-C", other, "-c", "user.name=p", "-c", "user.email=p@example.org"}, args...)...)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
		git("init", "-q")
		f := newFixture(t, map[string]string{"tools/pre-commit": "#!/bin/sh\necho ran > hook-ran\n", "tools/readme": "r"})
		must(t, os.Chmod(filepath.Join(f.folder, "tools", "pre-commit"), 0o755))
		tk := f.newTask()
		f.sh(tk, "rm tools/pre-commit")
		if _, err := f.k.Commit(context.Background(), tk, kernel.CommitOptions{}); err != nil {
			t.Fatal(err)
		}
		f.sh(tk, "rm -rf tools && ln -s "+filepath.Join(other, ".git", "hooks")+" tools")
		_, err := f.k.Undo(context.Background(), tk)
		git("commit", "-q", "--allow-empty", "-m", "next")
		_, ran := os.Stat(filepath.Join(other, "hook-ran"))
		_, planted := os.Stat(filepath.Join(other, ".git", "hooks", "pre-commit"))
		return ran == nil || planted == nil, err
	}, func(t *testing.T, err error) { saysLink(t, err, "tools") })
}

// Rollback makes the copy follow the folder; a command running beside it
// swaps sub for a link to the victim just as the copy is rewritten. Without
// the guard the folder's version lands in the victim.
func TestRollbackNeverWritesThroughALinkInTheCopy(t *testing.T) {
	guarded(t, func(t *testing.T) (bool, error) {
		victim := t.TempDir()
		write(t, victim, map[string]string{"important/data": "the person's"})
		f := newFixture(t, map[string]string{"sub/important/data": "folder"})
		tk := f.newTask()
		f.sh(tk, "echo changed > sub/important/data")
		defer kernel.SyncCopyStartsForTest(func(tk *task.Task) {
			must(t, os.RemoveAll(filepath.Join(tk.Paths.Copy, "sub")))
			must(t, os.Symlink(victim, filepath.Join(tk.Paths.Copy, "sub")))
		})()
		_, err := f.k.Rollback(context.Background(), tk)
		return !fileIs(filepath.Join(victim, "important", "data"), "the person's"), err
	}, func(t *testing.T, err error) {
		saysLink(t, err, "sub")
		if !strings.Contains(err.Error(), "the folder is untouched") {
			t.Errorf("rollback's error does not say the folder is untouched: %v", err)
		}
	})
}

// The folder has config/.env; the task replaces config by a link to a
// sibling project. The next command masks the copy's settings files first:
// without the guard it rewrites the sibling's .env, replacing its real
// secret with a placeholder.
func TestEnvMaskingNeverWritesThroughALinkInTheCopy(t *testing.T) {
	const siblingEnv = "STRIPE_KEY=sk_live_9xQ2mR7vT4wY8zB3nK6pL1dF\n"
	guarded(t, func(t *testing.T) (bool, error) {
		sibling := t.TempDir()
		write(t, sibling, map[string]string{".env": siblingEnv})
		f := newFixture(t, map[string]string{"config/.env": "STRIPE_KEY=" + stripeKey + "\n", "main.go": "package main\n"})
		tk := f.newTask()
		f.sh(tk, "rm -rf config && ln -s "+sibling+" config")
		f.sh(tk, "true") // the next command: masking runs before it
		return !fileIs(filepath.Join(sibling, ".env"), siblingEnv), nil
	}, func(t *testing.T, err error) {})
}

// sandboxed runs a shell command in the task's copy inside the sandbox, as
// kule exec does, and gives its output and error.
func (f *fixture) sandboxed(tk *task.Task, o kernel.SandboxOptions, script string) (string, error) {
	f.t.Helper()
	var spec runner.Spec
	var warn strings.Builder
	o.Warn = &warn
	r, err := kernel.SandboxRunner(f.k.Store().Root, tk, &spec, o)
	if err != nil {
		return "", err
	}
	kk := f.k.With(kernel.RunHooks{Runner: r})
	var out bytes.Buffer
	spec.Stdout, spec.Stderr = &out, &out
	code, _, err := kk.Exec(context.Background(), tk, kernel.ExecOptions{Args: []string{"sh", "-c", script}, Spec: spec})
	if err == nil && code != 0 {
		err = fmt.Errorf("exit code %d", code)
	}
	return warn.String() + out.String(), err
}

// forgeRecord is the command a hijacked agent runs, in the sandbox: it
// writes a record of the home layer naming another "home", both where the
// layer's record once lay (in the layer: $HOME/.kule-home.json) and where it
// lies now (the task's directory, which the sandbox never exposes: that
// write fails).
func forgeRecord(f *fixture, tk *task.Task, home string) {
	f.t.Helper()
	rec := `{"home":"` + home + `","files":{}}`
	real := filepath.Join(tk.Paths.Dir, "home.json")
	out, err := f.sandboxed(tk, kernel.SandboxOptions{}, "printf '%s' '"+rec+"' > \"$HOME/.kule-home.json\"; printf '%s' '"+rec+"' > "+real+"; true")
	if err != nil {
		f.t.Fatalf("forging the record: %v\n%s", err, out)
	}
	if b, err := os.ReadFile(real); err == nil && bytes.Contains(b, []byte(home)) {
		f.t.Fatalf("a sandboxed command reached the home layer's record in the task's directory: %s", out)
	}
}

// The task points its home layer's record at ~/.ssh; the person discards
// the task's home changes, which makes the layer anew from the home the
// record names: without the guard the next run reads $HOME/id_ed25519.
func TestHomeLayerRecordCannotBePointedAtTheKeys(t *testing.T) {
	guardedBy(t, func(t *testing.T) { kernel.HomeRecordInLayerForTest(t) }, func(t *testing.T) (bool, error) {
		home := t.TempDir()
		t.Setenv("HOME", home)
		write(t, home, map[string]string{".zshrc": "export A=1\n", ".ssh/id_ed25519": "PRIVATE KEY\n"})
		f := newFixture(t, map[string]string{"main.go": "package main\n"})
		tk := f.newTask()
		forgeRecord(f, tk, filepath.Join(home, ".ssh"))
		err := f.k.DiscardHome(tk)
		if err != nil {
			t.Fatalf("discard: %v", err)
		}
		out, rerr := f.sandboxed(tk, kernel.SandboxOptions{}, "cat \"$HOME/id_ed25519\" 2>/dev/null; cat \"$HOME/.zshrc\" 2>/dev/null; true")
		if rerr != nil {
			t.Fatalf("the next run: %v\n%s", rerr, out)
		}
		if !strings.Contains(out, "export A=1") && !strings.Contains(out, "PRIVATE KEY") {
			t.Fatalf("after discard the run sees neither the home nor the keys: %q", out)
		}
		return strings.Contains(out, "PRIVATE KEY"), err
	}, func(t *testing.T, err error) {})
}

// The task points its home layer's record at another repository's
// .git/hooks and writes $HOME/pre-commit; the person is shown ~/pre-commit
// and applies it: without the guard it lands in that repository's hooks.
func TestHomeLayerRecordCannotRedirectAnApply(t *testing.T) {
	guardedBy(t, func(t *testing.T) { kernel.HomeRecordInLayerForTest(t) }, func(t *testing.T) (bool, error) {
		home, other := t.TempDir(), t.TempDir()
		t.Setenv("HOME", home)
		write(t, home, map[string]string{".zshrc": "export A=1\n"})
		if out, err := exec.Command("git", "init", "-q", other).CombinedOutput(); err != nil {
			t.Fatalf("git init: %v\n%s", err, out)
		}
		f := newFixture(t, map[string]string{"main.go": "package main\n"})
		tk := f.newTask()
		forgeRecord(f, tk, filepath.Join(other, ".git", "hooks"))
		f.sh(tk, "printf '#!/bin/sh\\necho ran\\n' > \"$HOME/pre-commit\"")
		err := f.k.ApplyHome(tk, "pre-commit")
		_, planted := os.Stat(filepath.Join(other, ".git", "hooks", "pre-commit"))
		if planted != nil && err == nil && !fileIs(filepath.Join(home, "pre-commit"), "#!/bin/sh\necho ran\n") {
			t.Errorf("apply wrote neither ~/pre-commit nor the hook")
		}
		return planted == nil, err
	}, func(t *testing.T, err error) {
		if err != nil {
			t.Errorf("applying ~/pre-commit where the person was shown it: %v", err)
		}
	})
}

// An earlier command plants out -> ~/.config/autostart in the copy; the
// person then runs a command with --allow-write out. Without the guard the
// sandbox opens the link's target for writing and the command drops a
// .desktop file that runs at the person's next login.
func TestAllowWriteNeverFollowsALinkInTheCopy(t *testing.T) {
	guarded(t, func(t *testing.T) (bool, error) {
		autostart := t.TempDir()
		f := newFixture(t, map[string]string{"main.go": "package main\n"})
		tk := f.newTask()
		f.sh(tk, "ln -s "+autostart+" out")
		out, err := f.sandboxed(tk, kernel.SandboxOptions{AllowWrite: []string{"out"}}, "echo '[Desktop Entry]' > out/evil.desktop")
		_, planted := os.Stat(filepath.Join(autostart, "evil.desktop"))
		if planted != nil && err == nil {
			t.Fatalf("the command ran but wrote nothing: %s", out)
		}
		return planted == nil, err
	}, func(t *testing.T, err error) {
		if !errors.Is(err, beneath.ErrLink) || !errors.Is(err, sandbox.ErrBadSpec) {
			t.Fatalf("got %v, want a refusal wrapping ErrBadSpec and beneath.ErrLink", err)
		}
		for _, want := range []string{"--allow-write out", "not opened", "nothing ran"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the refusal does not say %q: %v", want, err)
			}
		}
	})
}

// TestLinkAttacksAsNobody runs the attacks above again as the nobody user,
// as a person without root runs kule (the sandbox through unprivileged user
// namespaces), guard off and on.
func TestLinkAttacksAsNobody(t *testing.T) {
	if asnobody.Inside(t) {
		return
	}
	asnobody.Rerun(t, "TestLinkAttacksAsNobody", []string{
		"TestUndoNeverRemovesThroughALinkInTheCopy", "TestUndoNeverPutsAHookIntoAnotherRepository",
		"TestRollbackNeverWritesThroughALinkInTheCopy", "TestEnvMaskingNeverWritesThroughALinkInTheCopy",
		"TestHomeLayerRecordCannotBePointedAtTheKeys", "TestHomeLayerRecordCannotRedirectAnApply",
		"TestAllowWriteNeverFollowsALinkInTheCopy",
	}, "KULE_SECRETS_KEYFILE=1")
}

// A link of the person's own, outside the task's trees, is theirs to
// follow: --allow-write through it opens its target, and the run says so.
func TestAllowWriteSaysWhatItOpened(t *testing.T) {
	mine := t.TempDir()
	must(t, os.Mkdir(filepath.Join(mine, "cache"), 0o755))
	must(t, os.Symlink(filepath.Join(mine, "cache"), filepath.Join(mine, "link")))
	f := newFixture(t, map[string]string{"main.go": "package main\n"})
	tk := f.newTask()
	out, err := f.sandboxed(tk, kernel.SandboxOptions{AllowWrite: []string{filepath.Join(mine, "link")}}, "echo built > "+filepath.Join(mine, "cache", "app"))
	if err != nil {
		t.Fatalf("--allow-write through the person's link: %v\n%s", err, out)
	}
	real, err := filepath.EvalSymlinks(filepath.Join(mine, "cache"))
	must(t, err)
	if want := "kule: --allow-write " + filepath.Join(mine, "link") + " opens " + real; !strings.Contains(out, want) {
		t.Errorf("the run does not say what it opened (want %q):\n%s", want, out)
	}
	if !fileIs(filepath.Join(mine, "cache", "app"), "built\n") {
		t.Error("the command could not write the directory it was allowed")
	}
}
