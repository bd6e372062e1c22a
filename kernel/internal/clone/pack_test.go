package clone

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/kulehq/kule/kernel/internal/manifest"
)

// Many contents appended through one PackAppender land one after another
// at the pack's end, each read back whole from where Append said.
func TestPackAppenderAppendsAtTheEnd(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, PackName), []byte("earlier"), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := OpenPack(dir)
	if err != nil {
		t.Fatal(err)
	}
	contents := []string{"one", "", "three\n", "four"}
	var entries []manifest.Entry
	for _, c := range contents {
		off, n, err := a.Append([]byte(c))
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, manifest.Entry{Off: off, Len: n})
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if off, n, err := AppendPack(dir, []byte("five")); err != nil || off != int64(len("earlier")+len("onethree\nfour")) || n != 4 {
		t.Fatalf("AppendPack after the appender: %d, %d, %v", off, n, err)
	}
	b := Base{Dir: dir, Backend: Copy}
	for i, e := range entries {
		r, err := b.Open(&e)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil || string(got) != contents[i] {
			t.Fatalf("content %d reads %q (%v), want %q", i, got, err, contents[i])
		}
	}
}
