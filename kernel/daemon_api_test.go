package kernel_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kulehq/kule/kernel"
)

// TestEditTaskChangesOnlyWhatItEdits: an edit reads task.json afresh under
// the task's lock, so a change saved meanwhile by someone else stays, and
// the task as saved is returned.
func TestEditTaskChangesOnlyWhatItEdits(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{"a.txt": "a\n"})
	tk := f.newTask()
	other, err := f.k.LoadTask(tk.ID)
	must(t, err)
	other.Colour = "teal"
	must(t, f.k.SaveTask(other))

	got, err := f.k.EditTask(tk.ID, func(t *kernel.Task) { t.Name = "release notes" })
	must(t, err)
	back, err := f.k.LoadTask(tk.ID)
	must(t, err)
	for _, x := range []*kernel.Task{got, back} {
		if x.Name != "release notes" || x.Colour != "teal" || x.Folder != tk.Folder {
			t.Fatalf("after the edit: name %q colour %q folder %q; want the new name, teal kept, the folder unchanged", x.Name, x.Colour, x.Folder)
		}
	}
	if _, err := f.k.EditTask("0000abcd", func(*kernel.Task) {}); !errors.Is(err, kernel.ErrTaskNotFound) {
		t.Fatalf("editing a task that does not exist: %v, want ErrTaskNotFound", err)
	}
}

// TestOpenBeforeReadsTheBase: the file as the base holds it, not as the
// task changed it; a file over the limit is refused before it is read; a
// path the base never held has no earlier version.
func TestOpenBeforeReadsTheBase(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{"a.txt": "before\n"})
	tk := f.newTask()
	f.sh(tk, "echo after > a.txt; echo new > b.txt")

	rc, err := f.k.OpenBefore(tk, "a.txt", 1<<20)
	must(t, err)
	b, err := io.ReadAll(rc)
	rc.Close()
	must(t, err)
	if string(b) != "before\n" {
		t.Fatalf("before of a.txt = %q, want the base's %q", b, "before\n")
	}
	if _, err := f.k.OpenBefore(tk, "a.txt", 3); !errors.Is(err, kernel.ErrTooLarge) {
		t.Fatalf("a file over the limit: %v, want ErrTooLarge", err)
	}
	if _, err := f.k.OpenBefore(tk, "b.txt", 1<<20); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a file the task added: %v, want no earlier version", err)
	}
}

// TestRememberedHostIsThatFoldersOnly: a remembered connection lets that
// host and port pass for the task's folder only.
func TestRememberedHostIsThatFoldersOnly(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{"a.txt": "a\n"})
	tk := f.newTask()
	elsewhere := filepath.Join(t.TempDir(), "other")
	write(t, elsewhere, map[string]string{"b.txt": "b\n"})
	rep, err := f.k.NewTask(context.Background(), elsewhere)
	must(t, err)

	if f.k.HostRemembered(tk, "example.org:443") {
		t.Fatal("a host nobody approved counts as remembered")
	}
	must(t, f.k.RememberHost(tk, "example.org:443"))
	cases := []struct {
		name string
		task *kernel.Task
		host string
		want bool
	}{
		{"same folder, host and port", tk, "example.org:443", true},
		{"another port", tk, "example.org:80", false},
		{"another host", tk, "example.com:443", false},
		{"another folder", rep.Task, "example.org:443", false},
		{"not a host and port", tk, "example.org", false},
	}
	for _, c := range cases {
		if got := f.k.HostRemembered(c.task, c.host); got != c.want {
			t.Errorf("%s: HostRemembered(%s) = %v, want %v", c.name, c.host, got, c.want)
		}
	}
	rs, err := f.k.RememberedRules()
	must(t, err)
	if len(rs) != 1 || rs[0].Subject != "example.org:443" {
		t.Fatalf("rules = %+v, want the one connection", rs)
	}
}

// TestRememberPathsKeepsOnlyWhatWasApplied: of the paths given, only those
// the commit applied become rules; a path named but not applied does not.
func TestRememberPathsKeepsOnlyWhatWasApplied(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{"go.mod": "module a\n", "package.json": "{}\n"})
	tk := f.newTask()
	st := f.sh(tk, "echo 'module b' > go.mod; echo '{\"a\":1}' > package.json")
	pending := st.Pending(false)
	j, err := f.k.Judge(tk, pending, false)
	must(t, err)
	for _, v := range j.Ruling.Verdicts {
		if v.Outcome != kernel.OutcomeAsk {
			t.Fatalf("the built-in policy should ask about manifests: %v", v)
		}
	}
	var applied []kernel.Effect
	for _, e := range pending {
		if e.Path == "go.mod" {
			applied = append(applied, e)
		}
	}
	added, notKept, err := f.k.RememberPaths(tk, j, applied, []string{"go.mod", "package.json"})
	must(t, err)
	if len(added) != 1 || len(notKept) != 0 {
		t.Fatalf("added %v, not kept %v; want one rule, for go.mod", added, notKept)
	}
	rs, err := f.k.RememberedRules()
	must(t, err)
	var subjects []string
	for _, r := range rs {
		subjects = append(subjects, r.Subject)
	}
	if !slices.Contains(subjects, "go.mod") || slices.Contains(subjects, "package.json") {
		t.Fatalf("rules for %v, want go.mod and not package.json (never applied)", subjects)
	}
	if added, _, err := f.k.RememberPaths(tk, nil, applied, []string{"go.mod"}); err != nil || len(added) != 0 {
		t.Fatalf("without a ruling: added %v, %v; want nothing", added, err)
	}
}
