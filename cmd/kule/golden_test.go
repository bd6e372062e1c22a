package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kulehq/kule/internal/golden"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden with what the code prints now")

// Unstable parts of an output beyond times and hashes, each with the
// placeholder that stands for it in a golden file: durations, "as of …"
// ages and the workspace backend (which the file system picks).
var goldenRules = []golden.Rule{
	golden.Time,
	golden.Hash,
	golden.Replace(`\b(\d+h)?(\d+m)?\d+(\.\d+)?(ns|µs|ms|s)\b`, "<duration>"),
	golden.Replace(`as of (just now|\d+ \w+ ago|[^\n·]+ ago)`, "as of <when>"),
	golden.Replace(`reflink copy: no extra space|plain copy: this file system has no reflinks|plain copy, each command over an overlay of it`, "<backend>"),
	golden.Replace(`"backend": "(reflink|copy|overlay)"`, `"backend": "<backend>"`),
}

// normalizeGolden makes an output comparable from run to run (see
// golden.Normalize): known values by name, then goldenRules.
func normalizeGolden(out string, known map[string]string) string {
	return golden.Normalize(out, known, goldenRules...)
}

// checkGolden fails t when got differs from testdata/golden/name.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	golden.Check(t, name, got, *update)
}

// TestGoldenCLI: what a person reads from kule new, status, status --json,
// list, commit, history and undo on a scripted folder stays as the golden
// files under testdata/golden have it.
func TestGoldenCLI(t *testing.T) {
	dir := t.TempDir()
	folder := filepath.Join(dir, "folder")
	for p, body := range map[string]string{
		"notes/plan.md":   "# Plan\n\nweek\n",
		"notes/drafts.md": "draft\n",
		"main.go":         "package main\n\nfunc main() {}\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(folder, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(folder, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		// Modes are in status --json: the same whatever the caller's umask.
		if err := os.Chmod(filepath.Join(folder, p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := cli{t: t, home: filepath.Join(dir, "home")}
	run := func(args ...string) string {
		t.Helper()
		out, err := c.stdout(args...)
		if err != nil {
			t.Fatalf("kule %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	created := run("new", folder)
	id := strings.Fields(c.must("list"))[0]
	known := map[string]string{id: "id", folder: "folder", c.home: "home", dir: "tmp"}
	golden := func(name string, args ...string) {
		t.Helper()
		checkGolden(t, name, normalizeGolden(run(args...), known))
	}
	checkGolden(t, "new.txt", normalizeGolden(created, known))
	// umask: the new file's mode is in status --json, whatever the
	// caller's umask.
	run("exec", id, "--", "sh", "-c",
		`umask 022; printf '# Plan\n\nmonth\n' > notes/plan.md; rm notes/drafts.md; echo new > todo.txt; `+
			`printf 'package main\n\nfunc main() {}\n\nfunc helper() {}\n' > main.go`)
	golden("status.txt", "status", id)
	golden("status.json", "status", id, "--json")
	golden("list.txt", "list")
	golden("commit.txt", "commit", id)
	golden("history-commit.txt", "history", id)
	golden("list-commit.txt", "list")
	golden("undo.txt", "undo", id)
	golden("history-undo.txt", "history", id)
	golden("list-undo.txt", "list")
}

// TestGoldenNormalizer: each unstable part becomes its placeholder and
// nothing else is touched, so a golden file can neither pass by hiding a
// real change nor fail by a time.
func TestGoldenNormalizer(t *testing.T) {
	known := map[string]string{"5acf8d46": "id", "/tmp/T1/001/folder": "folder", "/tmp/T1/001/home": "home", "/tmp/T1/001": "tmp"}
	tests := map[string]struct{ in, want string }{
		"id and paths": {
			"task 5acf8d46 · copy at /tmp/T1/001/home/tasks/5acf8d46/copy\n",
			"task <id> · copy at <home>/tasks/<id>/copy\n",
		},
		"a path inside another": {"/tmp/T1/001/folder and /tmp/T1/001/other", "<folder> and <tmp>/other"},
		"backend and duration": {
			"  3 files from /tmp/T1/001/folder (plain copy: this file system has no reflinks, 232ms)\n",
			"  3 files from <folder> (<backend>, <duration>)\n",
		},
		"reflink":      {"(reflink copy: no extra space, 1.5s)", "(<backend>, <duration>)"},
		"history time": {"  1  2026-12-01 23:12:56  commit  checkpoint 1  +1 ~2 -1\n", "  1  <time>  commit  checkpoint 1  +1 ~2 -1\n"},
		"json time":    {`"created": "2026-12-01T23:12:54.181875952Z",`, `"created": "<time>",`},
		"json backend": {`"backend": "copy",`, `"backend": "<backend>",`},
		"as of":        {"0 file changes: +0 ~0 -0 · as of just now\n", "0 file changes: +0 ~0 -0 · as of <when>\n"},
		"as of ago":    {"· as of 3 minutes ago", "· as of <when>"},
		"hash":         {"sha256 " + strings.Repeat("ab", 32) + " git " + strings.Repeat("0f", 20), "sha256 <hash> git <hash>"},
		"counts stay":  {"4 file changes: +1 ~2 -1\n  ~ main.go\n      + func helper\ncheckpoint 1 kept", "4 file changes: +1 ~2 -1\n  ~ main.go\n      + func helper\ncheckpoint 1 kept"},
		"sizes stay":   {`"size": 47, "mode": "0644"`, `"size": 47, "mode": "0644"`},
		"short hex":    {"deadbeef is not a task id here", "deadbeef is not a task id here"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := normalizeGolden(tt.in, known); got != tt.want {
				t.Errorf("normalizeGolden(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}
