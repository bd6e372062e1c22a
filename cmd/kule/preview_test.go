package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kulehq/kule/kernel"
)

// TestPreviewCommand: kule preview prints a file of the task's copy as the
// built-in previewers (run out of process as `kule-plugins __plugin previewer/…`)
// read it — text with line numbers, a sheet from A1, a Markdown outline, a
// picture's size — refuses a link and a polyglot, and --json is the model.
func TestPreviewCommand(t *testing.T) {
	dir := t.TempDir()
	c := cli{t: t, home: filepath.Join(dir, "home")}
	folder := filepath.Join(dir, "folder")
	files := map[string]string{
		"main.go":    "package main\n\nfunc main() {}\n",
		"budget.csv": "item,cost\nrent,1200\n",
		"plan.md":    "# Plan\n\n## Later\n\n1. party <b>now</b>\n",
		"d.json":     `{"a":[1,2]}`,
	}
	for p, s := range files {
		writeFile(t, filepath.Join(folder, p), s)
	}
	out, err := c.kule("", "new", folder)
	if err != nil {
		t.Fatalf("kule new: %v\n%s", err, out)
	}
	id, _, _ := strings.Cut(strings.TrimPrefix(out, "task "), " ")
	if out, err := c.kule("", "exec", id, "--", "sh", "-c", "ln -s /etc/passwd passwd.txt && printf '\\211PNG\\r\\n\\032\\nPK' > poly.png"); err != nil {
		t.Fatalf("exec: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"main.go"}, []string{"main.go — text, go", "1  package main\n", "3  func main() {}\n"}},
		{[]string{"budget.csv"}, []string{"  │ A    │ B\n", "1 │ item │ cost\n", "2 │ rent │ 1200\n"}},
		{[]string{"plan.md"}, []string{"# Plan\n", "## Later\n", "1. party <b>now</b>\n"}},
		{[]string{"--format", "d.json"}, []string{"note: formatted JSON", "2    \"a\": [\n"}},
	} {
		out, err := c.kule("", append([]string{"preview", id}, tc.args...)...)
		if err != nil {
			t.Fatalf("preview %v: %v\n%s", tc.args, err, out)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("preview %v lacks %q:\n%s", tc.args, w, out)
			}
		}
	}
	for rel, says := range map[string]string{"passwd.txt": "never followed", "poly.png": "cannot preview poly.png"} {
		out, err := c.kule("", "preview", id, rel)
		if err == nil || !strings.Contains(out, says) || strings.Contains(out, "root:") {
			t.Errorf("preview %s = %v:\n%s\nwant a refusal saying %q", rel, err, out, says)
		}
	}
	out, err = c.stdout("preview", "--json", id, "budget.csv")
	if err != nil {
		t.Fatalf("preview --json: %v\n%s", err, out)
	}
	var p kernel.Preview
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("preview --json: %v\n%s", err, out)
	}
	if p.Kind != "sheet" || len(p.Blocks) != 2 || p.Blocks[1].Row.Cells[1] != "1200" || !strings.Contains(p.Previewer, "csv") {
		t.Errorf("preview --json = %+v", p)
	}
}

// TestPreviewPlaces: kule preview TASK PATH:PLACE says what kule run
// --about tells an agent of that place, read through the previewers.
func TestPreviewPlaces(t *testing.T) {
	dir := t.TempDir()
	c := cli{t: t, home: filepath.Join(dir, "home")}
	folder := filepath.Join(dir, "folder")
	writeFile(t, filepath.Join(folder, "plan.md"), "# Plan\n\nweek\n\n## Later\n\nparty\n\n## Pros/Cons\n\nboth\n")
	writeFile(t, filepath.Join(folder, "budget.csv"), "item,cost\nrent,1200\nfood,300\n")
	writeFile(t, filepath.Join(folder, "latin.txt"), "caf\xe9 au lait\nthé\n")
	writeFile(t, filepath.Join(folder, "utf16.txt"), "\xff\xfeo\x00n\x00e\x00\n\x00t\x00w\x00o\x00\n\x00")
	out, err := c.kule("", "new", folder)
	if err != nil {
		t.Fatalf("kule new: %v\n%s", err, out)
	}
	id, _, _ := strings.Cut(strings.TrimPrefix(out, "task "), " ")
	for place, want := range map[string]string{
		"plan.md:3":      "1. plan.md line 3:\n   3: week\n",
		"plan.md:#Later": "1. plan.md section Plan › Later\n",
		// A heading's own '/' reads as a separator, and still finds it.
		"plan.md:#Plan › Pros/Cons": "1. plan.md section Plan › Pros/Cons\n",
		"plan.md:#Pros/Cons":        "1. plan.md section Plan › Pros/Cons\n",
		"budget.csv:A2:B3":          "1. budget.csv A2:B3:\n   A2 = rent; B2 = 1200; A3 = food; B3 = 300\n",
		"budget.csv:B9":             "1. budget.csv B9:\n   (empty cells)\n",
		// Text that is not UTF-8 is quoted as the Preview shows and numbers it.
		"latin.txt:1-2": "1. latin.txt lines 1–2:\n   1: caf\uFFFD au lait\n   2: thé\n",
		"utf16.txt:2":   "1. utf16.txt line 2:\n   2: two\n",
	} {
		out, err := c.kule("", "preview", id, place)
		if err != nil || out != want {
			t.Errorf("preview %s = %v:\n%q\nwant %q", place, err, out, want)
		}
	}
	for place, says := range map[string]string{"plan.md:40-41": "has 11 lines", "plan.md:#Nope": "no such section"} {
		if out, err := c.kule("", "preview", id, place); err == nil || !strings.Contains(out, says) {
			t.Errorf("preview %s = %v:\n%s\nwant a refusal saying %q", place, err, out, says)
		}
	}
}
