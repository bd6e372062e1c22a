package main

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden with what the code prints now")

// Unstable parts of an output, each with the placeholder that stands for it
// in a golden file.
var (
	goldenTime     = regexp.MustCompile(`\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})?`)
	goldenDuration = regexp.MustCompile(`\b(\d+h)?(\d+m)?\d+(\.\d+)?(ns|µs|ms|s)\b`)
	goldenHash     = regexp.MustCompile(`\b[0-9a-f]{40}([0-9a-f]{24})?\b`)
	goldenAsOf     = regexp.MustCompile(`as of (just now|\d+ \w+ ago|[^\n·]+ ago)`)
	goldenBackend  = regexp.MustCompile(`reflink copy: no extra space|plain copy: this file system has no reflinks|"backend": "(reflink|copy)"`)
)

// normalizeGolden is the one place that makes an output comparable from run
// to run: each known value (task ids, temp paths) becomes its name, longest
// first so a path inside another is not cut in two; then times, durations,
// hashes, "as of …" ages and the workspace backend (which the file system
// picks) become placeholders. Everything else is compared as printed.
func normalizeGolden(out string, known map[string]string) string {
	vals := make([]string, 0, len(known))
	for v := range known {
		if v != "" {
			vals = append(vals, v)
		}
	}
	sort.Slice(vals, func(i, j int) bool {
		if len(vals[i]) != len(vals[j]) {
			return len(vals[i]) > len(vals[j])
		}
		return vals[i] < vals[j]
	})
	for _, v := range vals {
		out = strings.ReplaceAll(out, v, "<"+known[v]+">")
	}
	out = goldenTime.ReplaceAllString(out, "<time>")
	out = goldenHash.ReplaceAllString(out, "<hash>")
	out = goldenDuration.ReplaceAllString(out, "<duration>")
	out = goldenAsOf.ReplaceAllString(out, "as of <when>")
	out = goldenBackend.ReplaceAllStringFunc(out, func(s string) string {
		if strings.HasPrefix(s, `"backend"`) {
			return `"backend": "<backend>"`
		}
		return "<backend>"
	})
	return out
}

// goldenMismatch compares got with the golden file path and returns the
// difference ("" when they agree); with -update it writes got there first.
func goldenMismatch(path, got string, update bool) (string, error) {
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			return "", err
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return cmp.Diff(string(want), got), nil
}

// checkGolden fails t when got differs from testdata/golden/name.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	d, err := goldenMismatch(filepath.Join("testdata", "golden", name), got, *update)
	if err != nil {
		t.Fatalf("golden %s: %v (go test -run %s -update writes it)", name, err, t.Name())
	}
	if d != "" {
		t.Errorf("output differs from testdata/golden/%s (-golden +now); if the change is meant, go test -run %s -update rewrites it:\n%s", name, t.Name(), d)
	}
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

// TestGoldenMismatchFails: the compare reports a changed output, and
// agrees with the unchanged one; -update writes what it is given.
func TestGoldenMismatchFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "golden", "x.txt")
	if _, err := goldenMismatch(path, "a\n", false); err == nil {
		t.Fatal("a missing golden file compared without an error")
	}
	if d, err := goldenMismatch(path, "committed 3 files\n", true); err != nil || d != "" {
		t.Fatalf("-update: %q, %v", d, err)
	}
	if d, err := goldenMismatch(path, "committed 3 files\n", false); err != nil || d != "" {
		t.Fatalf("same output: %q, %v", d, err)
	}
	d, err := goldenMismatch(path, "committed 4 files\n", false)
	if err != nil || !strings.Contains(d, "committed 3 files") || !strings.Contains(d, "committed 4 files") {
		t.Fatalf("changed output: diff %q, %v", d, err)
	}
}
