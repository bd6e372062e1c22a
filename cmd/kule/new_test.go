package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// listJSON is what kule list --json says of each task, whole or broken.
type listedTask struct {
	ID     string `json:"id"`
	Folder string `json:"folder"`
	Broken bool   `json:"broken"`
	Reason string `json:"reason"`
	Dir    string `json:"dir"`
}

func listed(t *testing.T, c cli) []listedTask {
	t.Helper()
	out, err := c.stdout("list", "--json")
	if err != nil {
		t.Fatalf("kule list --json: %v\n%s", err, out)
	}
	var ts []listedTask
	if err := json.Unmarshal([]byte(out), &ts); err != nil {
		t.Fatalf("kule list --json: %v\n%s", err, out)
	}
	return ts
}

func tasksDirEmpty(t *testing.T, home string) {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(home, "tasks"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 0 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Fatalf("left in tasks/: %v", names)
	}
}

// kule new killed at each of its steps leaves either no task, a whole task,
// or a broken one that kule list shows (and --json marks) and kule delete
// removes whole, with the copy it held.
func TestInterruptedNewIsListedAndDeleted(t *testing.T) {
	dir := t.TempDir()
	folder := filepath.Join(dir, "folder")
	writeFile(t, filepath.Join(folder, "big.bin"), strings.Repeat("x", 1<<20))
	writeFile(t, filepath.Join(folder, "notes/a.md"), "# A\n")
	for _, step := range []string{"new.made", "new.copied", "new.saved", "new.renamed"} {
		t.Run(step, func(t *testing.T) {
			c := cli{t: t, home: filepath.Join(t.TempDir(), "home")}
			out, err := c.kule(step, "new", folder)
			if !killed(err) {
				t.Fatalf("kule new was not killed at %s: %v\n%s", step, err, out)
			}
			ts := listed(t, c)
			if len(ts) != 1 {
				t.Fatalf("after a kill at %s kule list shows %d tasks: %+v", step, len(ts), ts)
			}
			got := ts[0]
			if step == "new.renamed" {
				if got.Broken || got.Folder != folder {
					t.Fatalf("a new killed after its rename should be whole: %+v", got)
				}
				c.must("status", got.ID)
				c.must("delete", got.ID)
				tasksDirEmpty(t, c.home)
				return
			}
			if !got.Broken || !strings.Contains(got.Reason, "interrupted kule new") || len(got.ID) != 8 {
				t.Fatalf("a new killed at %s should be listed as broken: %+v", step, got)
			}
			if text := c.must("list"); !strings.Contains(text, got.ID+"  broken: an interrupted kule new") || !strings.Contains(text, "kule delete "+got.ID+" removes it") {
				t.Fatalf("kule list does not say the task is broken and how to remove it:\n%s", text)
			}
			if _, err := c.kule("", "status", got.ID); err == nil {
				t.Fatal("kule status works on a broken task")
			}
			if out := c.must("delete", got.ID[:4]); !strings.Contains(out, "deleted broken task "+got.ID) {
				t.Fatalf("kule delete of the broken task said:\n%s", out)
			}
			tasksDirEmpty(t, c.home)
			if ts := listed(t, c); len(ts) != 0 {
				t.Fatalf("after delete kule list shows %+v", ts)
			}
			if got := readFile(t, filepath.Join(folder, "notes/a.md")); got != "# A\n" {
				t.Fatalf("the folder changed: %q", got)
			}
		})
	}
}

// What older versions left (a task directory with no task.json), a damaged
// task.json and an interrupted delete are listed as broken too, kule list
// still lists the whole tasks beside them, and kule delete removes each.
func TestBrokenTasksOfEveryKind(t *testing.T) {
	dir := t.TempDir()
	folder := filepath.Join(dir, "folder")
	writeFile(t, filepath.Join(folder, "a.txt"), "a\n")
	c := cli{t: t, home: filepath.Join(dir, "home")}
	whole, _, _ := strings.Cut(strings.TrimPrefix(c.must("new", folder), "task "), " ")
	tasks := filepath.Join(c.home, "tasks")
	writeFile(t, filepath.Join(tasks, "0000aaaa", "copy", "a.txt"), "left\n")
	writeFile(t, filepath.Join(tasks, "0000bbbb", "task.json"), "{not json")
	writeFile(t, filepath.Join(tasks, "0000cccc.deleting", "copy", "a.txt"), "left\n")
	// A link that looks like a broken task is nothing Kule made: it is not
	// listed, and its target is never touched.
	victim := filepath.Join(dir, "victim")
	writeFile(t, filepath.Join(victim, "keep.txt"), "mine\n")
	if err := os.Symlink(victim, filepath.Join(tasks, ".new-0000dddd")); err != nil {
		t.Fatal(err)
	}
	reasons := map[string]string{}
	for _, l := range listed(t, c) {
		if l.Broken {
			reasons[l.ID] = l.Reason
		} else if l.ID != whole {
			t.Errorf("listed %+v", l)
		}
	}
	for id, want := range map[string]string{"0000aaaa": "no task.json", "0000bbbb": "damaged", "0000cccc": "interrupted kule delete"} {
		if !strings.Contains(reasons[id], want) {
			t.Errorf("%s: reason %q, want %q", id, reasons[id], want)
		}
		c.must("delete", id)
	}
	if len(reasons) != 3 {
		t.Errorf("broken: %v", reasons)
	}
	if _, err := c.kule("", "delete", "0000dddd"); err == nil {
		t.Error("kule delete removed a link it never made")
	}
	if readFile(t, filepath.Join(victim, "keep.txt")) != "mine\n" {
		t.Fatal("the link's target was touched")
	}
	os.Remove(filepath.Join(tasks, ".new-0000dddd"))
	c.must("delete", whole)
	tasksDirEmpty(t, c.home)
}

// kule new refuses the root, the home, a credential folder and Kule's own
// home, says why, and makes nothing.
func TestNewRefusesFoldersThatHoldKeys(t *testing.T) {
	dir := t.TempDir()
	person := filepath.Join(dir, "person")
	writeFile(t, filepath.Join(person, ".ssh", "id_ed25519"), "KEY")
	t.Setenv("HOME", person)
	c := cli{t: t, home: filepath.Join(dir, "kulehome")}
	for folder, why := range map[string]string{
		"/":                             "root of the file system",
		person:                          "your home folder",
		filepath.Join(person, ".ssh"):   "~/.ssh",
		filepath.Join(person, ".ssh/."): "~/.ssh",
		c.home:                          "Kule's home",
	} {
		out, err := c.kule("", "new", folder)
		if err == nil || !strings.Contains(out, why) || !strings.Contains(out, "nothing was made") {
			t.Errorf("kule new %s: %v\n%s", folder, err, out)
		}
	}
	tasksDirEmpty(t, c.home)
}

// kule exec of a command that does not exist says so and exits 127, as a
// shell does; kule status then gives no advice to weaken the sandbox.
func TestExecOfAMissingCommand(t *testing.T) {
	dir := t.TempDir()
	folder := filepath.Join(dir, "folder")
	writeFile(t, filepath.Join(folder, "a.txt"), "a\n")
	c := cli{t: t, home: filepath.Join(dir, "home")}
	id, _, _ := strings.Cut(strings.TrimPrefix(c.must("new", folder), "task "), " ")
	for _, argv := range [][]string{{"/nonexistent/cmd"}, {"nosuchcmd", "x"}} {
		out, err := c.kule("", append([]string{"exec", id, "--"}, argv...)...)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 127 {
			t.Fatalf("kule exec %s: %v, want exit 127\n%s", argv[0], err, out)
		}
		if !strings.Contains(out, "kule: command not found: "+argv[0]) || strings.Contains(out, "could not set up") {
			t.Fatalf("kule exec %s said:\n%s", argv[0], out)
		}
	}
	if st := c.must("status", id); strings.Contains(st, "accept-weaker") || strings.Contains(st, "could not be set up") {
		t.Fatalf("kule status advises weakening the sandbox for a missing command:\n%s", st)
	}
}
