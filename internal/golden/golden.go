// Package golden compares what a command prints or an API answers with a
// golden file under testdata/golden, after making it comparable from run to
// run. The CLI's and the API's golden tests share it: one normaliser, one
// compare, one way to refresh (go test -run TestX -update).
package golden

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Rule replaces every match of Re by what With makes of it.
type Rule struct {
	Re   *regexp.Regexp
	With func(match string) string
}

// Replace is the Rule that puts placeholder in place of every match of re.
func Replace(re, placeholder string) Rule {
	return Rule{Re: regexp.MustCompile(re), With: func(string) string { return placeholder }}
}

// The rules every output needs: times and git or sha256 hashes.
var (
	Time = Replace(`\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})?`, "<time>")
	Hash = Replace(`\b[0-9a-f]{40}([0-9a-f]{24})?\b`, "<hash>")
)

// Normalize makes out comparable: each known value (task ids, temp paths)
// becomes <its name>, longest first so a path inside another is not cut in
// two; then each rule runs, in order. Everything else stays as it was.
func Normalize(out string, known map[string]string, rules ...Rule) string {
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
	for _, r := range rules {
		out = r.Re.ReplaceAllStringFunc(out, r.With)
	}
	return out
}

// Mismatch compares got with the golden file path and returns the
// difference ("" when they agree); with update it writes got there first.
func Mismatch(path, got string, update bool) (string, error) {
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

// Check fails t when got differs from testdata/golden/name, saying how to
// refresh the file when the change is meant.
func Check(t testing.TB, name, got string, update bool) {
	t.Helper()
	d, err := Mismatch(filepath.Join("testdata", "golden", name), got, update)
	if err != nil {
		t.Fatalf("golden %s: %v (go test -run %s -update writes it)", name, err, t.Name())
	}
	if d != "" {
		t.Errorf("%s differs from testdata/golden/%s (-golden +now); if the change is meant, go test -run %s -update rewrites it:\n%s", name, name, t.Name(), d)
	}
}
