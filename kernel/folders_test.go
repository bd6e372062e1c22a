package kernel_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/internal/task"
)

func TestCheckTaskFolderRefusesWhatHoldsKeys(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	home := filepath.Join(dir, "home", "me")
	kuleHome := filepath.Join(home, ".kule")
	elsewhereKule := filepath.Join(dir, "kulehome")
	for _, d := range []string{home, kuleHome, elsewhereKule} {
		must(t, os.MkdirAll(d, 0o700))
	}
	for name, c := range map[string]struct {
		folder, kule string
		why          string // "" passes
	}{
		"the root":                  {"/", elsewhereKule, "root of the file system"},
		"the root, unclean":         {"//", elsewhereKule, "root of the file system"},
		"the home":                  {home, elsewhereKule, "your home folder"},
		"the home, trailing slash":  {home + "/", elsewhereKule, "your home folder"},
		"what holds the home":       {filepath.Join(dir, "home"), elsewhereKule, "holds your home folder"},
		"~/.ssh":                    {filepath.Join(home, ".ssh"), elsewhereKule, "~/.ssh"},
		"inside ~/.ssh":             {filepath.Join(home, ".ssh", "keys"), elsewhereKule, "~/.ssh"},
		"~/.gnupg":                  {filepath.Join(home, ".gnupg"), elsewhereKule, "~/.gnupg"},
		"~/.aws":                    {filepath.Join(home, ".aws"), elsewhereKule, "~/.aws"},
		"~/.config (holds gh)":      {filepath.Join(home, ".config"), elsewhereKule, "~/.config/"},
		"~/.claude (holds a login)": {filepath.Join(home, ".claude"), elsewhereKule, "~/.claude/.credentials.json"},
		"~/.config/gh":              {filepath.Join(home, ".config", "gh"), elsewhereKule, "~/.config/gh"},
		"~/.kule":                   {filepath.Join(home, ".kule"), elsewhereKule, "~/.kule"},
		"KULE_HOME":                 {elsewhereKule, elsewhereKule, "Kule's home"},
		"inside KULE_HOME":          {filepath.Join(elsewhereKule, "tasks", "0123abcd", "copy"), elsewhereKule, "Kule's home"},
		"what holds KULE_HOME":      {dir, elsewhereKule, "Kule's home"},
		"relative":                  {"projects/app", elsewhereKule, "absolute"},
		"a project":                 {filepath.Join(home, "projects", "app"), elsewhereKule, ""},
		"a project named .sshx":     {filepath.Join(home, ".sshx"), elsewhereKule, ""},
		"outside the home":          {filepath.Join(dir, "srv", "app"), elsewhereKule, ""},
	} {
		err := kernel.CheckTaskFolder(c.folder, home, c.kule)
		switch {
		case c.why == "" && err != nil:
			t.Errorf("%s: CheckTaskFolder(%s) = %v, want it to pass", name, c.folder, err)
		case c.why != "" && !errors.Is(err, kernel.ErrFolderRefused):
			t.Errorf("%s: CheckTaskFolder(%s) = %v, want refused", name, c.folder, err)
		case c.why != "" && !strings.Contains(err.Error(), c.why):
			t.Errorf("%s: the refusal %q does not say %q", name, err, c.why)
		case c.why != "" && !strings.Contains(err.Error(), "nothing was made"):
			t.Errorf("%s: the refusal %q does not say what was kept safe", name, err)
		}
	}
	if err := kernel.CheckTaskFolder(elsewhereKule, home, elsewhereKule); !errors.Is(err, kernel.ErrInsideKuleHome) {
		t.Errorf("KULE_HOME: %v, want ErrInsideKuleHome too", err)
	}
	// A link to the home is the home.
	link := filepath.Join(dir, "homelink")
	must(t, os.Symlink(home, link))
	if err := kernel.CheckTaskFolder(filepath.Join(home, ".ssh"), link, elsewhereKule); !errors.Is(err, kernel.ErrFolderRefused) {
		t.Errorf("home given as a link: %v, want ~/.ssh refused", err)
	}
}

// `kule new ~/.ssh` hands the agent the person's private key: the copy holds
// it. With the guard the task is never made and nothing is copied.
// Not parallel: the person's home is $HOME, set for this test.
func TestNewRefusesCredentialFoldersAndTheHome(t *testing.T) {
	person := t.TempDir()
	t.Setenv("HOME", person)
	write(t, person, map[string]string{".ssh/id_ed25519": "PRIVATE KEY", "projects/app/a.txt": "a"})
	f := newFixture(t, map[string]string{"a.txt": "a"})
	ssh := filepath.Join(person, ".ssh")

	restore := kernel.SetFolderGuardForTest(false)
	rep, err := f.k.NewTask(context.Background(), ssh)
	restore()
	if err != nil {
		t.Fatalf("without the guard: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(rep.Task.Paths.Copy, "id_ed25519")); err != nil || string(b) != "PRIVATE KEY" {
		t.Fatalf("without the guard the copy should hold the key: %q, %v", b, err)
	}
	must(t, f.k.Delete(context.Background(), rep.Task))

	for _, folder := range []string{ssh, person, person + "/", filepath.Join(ssh, ".."), f.k.Store().Root} {
		if _, err := f.k.NewTask(context.Background(), folder); !errors.Is(err, kernel.ErrFolderRefused) {
			t.Errorf("NewTask(%s) = %v, want refused", folder, err)
		}
	}
	if ids, _ := f.k.Store().IDs(); len(ids) != 0 {
		t.Fatalf("refused folders left tasks: %v", ids)
	}
	ents, err := os.ReadDir(f.k.Store().TasksDir())
	must(t, err)
	if len(ents) != 0 {
		t.Fatalf("refused folders left directories in tasks/: %v", ents)
	}
	if _, err := f.k.NewTask(context.Background(), filepath.Join(person, "projects", "app")); err != nil {
		t.Fatalf("a project inside the home: %v", err)
	}
}

// kule delete never removes a task a kule new is still making.
func TestDeleteBrokenWaitsForNew(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{"a.txt": "a"})
	dir := f.k.Store().NewDir("0123abcd")
	must(t, os.MkdirAll(dir, 0o700))
	l, err := task.LockFile(filepath.Join(dir, "lock"))
	must(t, err)
	b, err := f.k.Store().ResolveBroken("0123abcd")
	must(t, err)
	if err := f.k.DeleteBroken(b); !errors.Is(err, task.ErrBusy) {
		t.Fatalf("DeleteBroken while a new holds it: %v", err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the task being made was removed: %v", err)
	}
	l.Unlock()
	must(t, f.k.DeleteBroken(b))
	if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("left: %v", err)
	}
}
