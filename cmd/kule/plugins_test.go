package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStatusNamesWhatChanged: kule status lists the paragraphs that changed
// inside a text file (the built-in text differ, run as `kule-plugins __plugin
// differ/text`), where two tasks meet, and the same in --json.
func TestStatusNamesWhatChanged(t *testing.T) {
	dir := t.TempDir()
	c := cli{t: t, home: filepath.Join(dir, "home")}
	folder := filepath.Join(dir, "folder")
	os.MkdirAll(folder, 0o755)
	os.WriteFile(filepath.Join(folder, "notes.txt"), []byte("Plan\nweek\n\nLater\nparty\n"), 0o644)
	newTask := func() string {
		out, err := c.kule("", "new", folder)
		if err != nil {
			t.Fatalf("kule new: %v\n%s", err, out)
		}
		id, _, _ := strings.Cut(strings.TrimPrefix(out, "task "), " ")
		return id
	}
	a, b := newTask(), newTask()
	if out, err := c.kule("", "exec", a, "--", "sh", "-c", `printf 'Plan\nmonth\n\nLater\nparty\n\nSunday\nrest\n' > notes.txt`); err != nil {
		t.Fatalf("exec: %v\n%s", err, out)
	}
	if out, err := c.kule("", "exec", b, "--", "sh", "-c", `printf 'Plan\nyear\n\nLater\nparty\n' > notes.txt`); err != nil {
		t.Fatalf("exec: %v\n%s", err, out)
	}
	out, err := c.kule("", "status", a)
	if err != nil {
		t.Fatalf("status: %v\n%s", err, out)
	}
	for _, want := range []string{
		"  ~ notes.txt\n      ~ paragraph Plan\n      + paragraph Sunday\n",
		"task " + b + " changes them too: notes.txt · paragraph Plan",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	out, err = c.stdout("status", "--json", a)
	if err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	var v struct {
		Names namesView `json:"names"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	if len(v.Names.Files) != 1 || v.Names.Files[0].Differ != "text" || len(v.Names.Files[0].Entities) != 2 || len(v.Names.Meets) != 1 || v.Names.Meets[0].Task != b {
		t.Errorf("status --json names = %+v", v.Names)
	}
}

func TestPluginsCommands(t *testing.T) {
	c := cli{t: t, home: t.TempDir()}
	out, err := c.kule("", "plugins", "list")
	if err != nil || !strings.Contains(out, "text") || !strings.Contains(out, "built-in") {
		t.Fatalf("plugins list = %v\n%s", err, out)
	}
	out, err = c.kule("", "plugins", "show", "text")
	if err != nil || !strings.Contains(out, "built-in differ") {
		t.Fatalf("plugins show text = %v\n%s", err, out)
	}
	out, err = c.kule("", "plugins", "approve", "nosuch")
	if err == nil || !strings.Contains(out, "not installed") {
		t.Fatalf("plugins approve nosuch = %v\n%s", err, out)
	}
	out, err = c.kule("", "__plugin", "differ/nosuch")
	if err == nil || !strings.Contains(out, `no built-in plugin "differ/nosuch"`) {
		t.Fatalf("__plugin differ/nosuch = %v\n%s", err, out)
	}
}
