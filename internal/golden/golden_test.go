package golden

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestMismatchFails: the compare reports a changed output, and agrees with
// the unchanged one; update writes what it is given.
func TestMismatchFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "golden", "x.txt")
	if _, err := Mismatch(path, "a\n", false); err == nil {
		t.Fatal("a missing golden file compared without an error")
	}
	if d, err := Mismatch(path, "committed 3 files\n", true); err != nil || d != "" {
		t.Fatalf("update: %q, %v", d, err)
	}
	if d, err := Mismatch(path, "committed 3 files\n", false); err != nil || d != "" {
		t.Fatalf("same output: %q, %v", d, err)
	}
	d, err := Mismatch(path, "committed 4 files\n", false)
	if err != nil || !strings.Contains(d, "committed 3 files") || !strings.Contains(d, "committed 4 files") {
		t.Fatalf("changed output: diff %q, %v", d, err)
	}
}

// TestNormalizeKnownLongestFirst: a known path inside another becomes the
// longer one's name, and the rules run after the known values.
func TestNormalizeKnownLongestFirst(t *testing.T) {
	known := map[string]string{"/tmp/T/001": "tmp", "/tmp/T/001/home": "home", "": "nothing"}
	got := Normalize("/tmp/T/001/home/x and /tmp/T/001/y at 2026-12-01 23:12:56", known, Time)
	if want := "<home>/x and <tmp>/y at <time>"; got != want {
		t.Fatalf("Normalize = %q, want %q", got, want)
	}
}
