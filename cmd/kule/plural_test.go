package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// countBeforePlural finds a count put straight before a plural word in a
// format string ("%d files", "%d damaged lines"), which says "1 files" when
// the count is one.
var countBeforePlural = regexp.MustCompile(`%d (?:[a-z]+ )?[a-z]+s\b`)

// TestCountsAgreeInNumber: no format string of the CLI puts a count
// straight before a plural word; plural and count pick the word that
// agrees with it ("1 file", "2 files"). allowed holds the texts where the
// word after the count is a verb or the count is never one, each with why.
func TestCountsAgreeInNumber(t *testing.T) {
	allowed := map[string]string{
		"--pids %d is":     "a verb",
		"run %d is":        "a verb",
		"forget %d takes":  "a verb",
		"got %d arguments": "the case of two or more",
		"%d days ago":      "two days or more: a shorter age is said in hours",
		"%d×%d pixels":     "a picture's width and height",
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	used := map[string]bool{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			for _, m := range countBeforePlural.FindAllString(s, -1) {
				ok := false
				for text := range allowed {
					if strings.Contains(s, text) && strings.Contains(text, m) {
						ok, used[text] = true, true
					}
				}
				if !ok {
					t.Errorf("%s: %q puts a count before a plural (%q): say it with plural or count", fset.Position(lit.Pos()), s, m)
				}
			}
			return true
		})
	}
	for text := range allowed {
		if !used[text] {
			t.Errorf("allowed has %q, which no format string holds any more: remove it", text)
		}
	}
	for in, want := range map[string]bool{"(%d files, sha256 %s)": true, "%d damaged lines in": true, "%d is below zero": true, "%s in %s": false, "%d file": false} {
		if got := countBeforePlural.MatchString(in); got != want {
			t.Errorf("countBeforePlural on %q: %v, want %v", in, got, want)
		}
	}
}

// TestCountWords: plural and count say one and many as they agree.
func TestCountWords(t *testing.T) {
	for got, want := range map[string]string{
		plural(0, "file"):                         "0 files",
		plural(1, "file"):                         "1 file",
		plural(2, "file"):                         "2 files",
		count(1, "success", "successes"):          "1 success",
		count(3, "success", "successes"):          "3 successes",
		count(1, "more renewal", "more renewals"): "1 more renewal",
	} {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}

// TestStatusCountsIgnoredInNumber: kule status says one ignored change
// as one ("applies it") and more as more ("applies them").
func TestStatusCountsIgnoredInNumber(t *testing.T) {
	dir := t.TempDir()
	folder := filepath.Join(dir, "folder")
	writeFile(t, filepath.Join(folder, ".gitignore"), "*.log\n")
	writeFile(t, filepath.Join(folder, "a.txt"), "a\n")
	c := cli{t: t, home: filepath.Join(dir, "home")}
	c.must("new", folder)
	id := strings.Fields(c.must("list"))[0]
	c.must("exec", id, "--no-network", "--", "sh", "-c", "echo x > run.log")
	if out := c.must("status", id); !strings.Contains(out, "1 ignored by the folder's .gitignore (kept in the copy; kule commit --include-ignored applies it):") {
		t.Errorf("kule status with one ignored file:\n%s", out)
	}
	c.must("exec", id, "--no-network", "--", "sh", "-c", "echo y > other.log")
	if out := c.must("status", id); !strings.Contains(out, "2 ignored by the folder's .gitignore (kept in the copy; kule commit --include-ignored applies them):") {
		t.Errorf("kule status with two ignored files:\n%s", out)
	}
}
