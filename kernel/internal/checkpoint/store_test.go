package checkpoint

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func newStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "checkpoints"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func readBlob(t *testing.T, s *Store, blob string) []byte {
	t.Helper()
	rc, err := s.Open(blob)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sha(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func TestRoundTripContent(t *testing.T) {
	t.Parallel()
	big := make([]byte, 5<<20)
	rand.Read(big)
	binary := []byte{0, 1, 2, 0xff, 0xfe, '\n', '\r', 0, 0x80}
	tests := map[string][]byte{
		"empty":      {},
		"text":       []byte("hello, Lonca\n"),
		"binary":     binary,
		"5 MiB":      big,
		"no newline": []byte("x"),
	}
	s := newStore(t)
	for name, content := range tests {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "f")
			if err := os.WriteFile(p, content, 0o644); err != nil {
				t.Fatal(err)
			}
			blob, sum, err := s.PutFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if sum != sha(content) {
				t.Errorf("PutFile sha256 = %s, want %s", sum, sha(content))
			}
			if got := readBlob(t, s, blob); !bytes.Equal(got, content) {
				t.Errorf("PutFile/Open round trip: got %d bytes, want %d", len(got), len(content))
			}
			b2, err := s.PutBytes(content)
			if err != nil || b2 != blob {
				t.Errorf("PutBytes = %s, %v; want the same blob %s", b2, err, blob)
			}
			// git itself agrees on the id and the content.
			out, err := exec.Command("git", "hash-object", p).Output()
			if err != nil {
				t.Skipf("git hash-object: %v", err)
			}
			if strings.TrimSpace(string(out)) != blob {
				t.Errorf("blob id %s, git hash-object says %s", blob, out)
			}
			cat, err := exec.Command("git", "--git-dir", s.git, "cat-file", "blob", blob).Output()
			if err != nil || !bytes.Equal(cat, content) {
				t.Errorf("git cat-file of the blob: %d bytes, %v", len(cat), err)
			}
		})
	}
}

func TestPutFileRefuses(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "real"), []byte("secret"), 0o600)
	os.Symlink(filepath.Join(dir, "real"), filepath.Join(dir, "link"))
	os.Mkdir(filepath.Join(dir, "dir"), 0o755)
	if err := exec.Command("mkfifo", filepath.Join(dir, "fifo")).Run(); err != nil {
		t.Logf("mkfifo: %v", err)
	}
	tests := map[string]struct {
		path string
		want error
	}{
		"symlink":   {"link", ErrNotRegular},
		"directory": {"dir", ErrNotRegular},
		"fifo":      {"fifo", ErrNotRegular},
		"missing":   {"nope", os.ErrNotExist},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, tc.path)
			if _, err := os.Lstat(p); err != nil && tc.want != os.ErrNotExist {
				t.Skipf("%s could not be made: %v", tc.path, err)
			}
			_, _, err := s.PutFile(p)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), p) {
				t.Fatalf("PutFile(%s) = %v, want %v naming the path", tc.path, err, tc.want)
			}
		})
	}
}

func fileItem(t *testing.T, s *Store, path string, content []byte) Item {
	t.Helper()
	blob, err := s.PutBytes(content)
	if err != nil {
		t.Fatal(err)
	}
	return Item{
		Path:   path,
		Before: State{Type: "file", Mode: 0o644, MTime: time.Unix(1700000000, 123).UTC(), Blob: blob, Hash: sha(content)},
		After:  State{Type: "none"},
	}
}

func TestSaveGetList(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	items := []Item{
		fileItem(t, s, "notes/a.txt", []byte("a")),
		fileItem(t, s, "caf\xe9/\xff\xfe.bin", []byte{0, 1}), // Latin-1 names, not UTF-8
		fileItem(t, s, "new\nline", nil),
		{Path: "docs", Before: State{Type: "dir", Mode: 0o755}, After: State{Type: "link", Target: "/etc"}},
		{Path: "l", Before: State{Type: "link", Target: "../\xe9t\xe9"}, After: State{Type: "file", Hash: sha([]byte("x"))}},
	}
	r := &Record{Commit: "c1", Items: items}
	if err := s.Save(r); err != nil {
		t.Fatal(err)
	}
	if r.ID != 1 || r.Time.IsZero() {
		t.Fatalf("Save assigned id %d time %v, want id 1 and a time", r.ID, r.Time)
	}
	got, err := s.Get(1)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r, got); diff != "" {
		t.Fatalf("Get after Save (-saved +read):\n%s", diff)
	}
	if got.Items[1].Path != "caf\xe9/\xff\xfe.bin" || got.Items[4].Before.Target != "../\xe9t\xe9" {
		t.Fatalf("non-UTF-8 names did not survive: %q %q", got.Items[1].Path, got.Items[4].Before.Target)
	}
	if c := readBlob(t, s, got.Items[1].Before.Blob); !bytes.Equal(c, []byte{0, 1}) {
		t.Fatalf("blob of item 2 = %v", c)
	}
	r2 := &Record{Commit: "c2", Items: items[:1]}
	if err := s.Save(r2); err != nil || r2.ID != 2 {
		t.Fatalf("second Save: id %d, %v", r2.ID, err)
	}
	all, err := s.List()
	if err != nil || len(all) != 2 || all[0].Commit != "c1" || all[1].Commit != "c2" {
		t.Fatalf("List = %v, %v", all, err)
	}
	if _, err := s.Get(3); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get(3) = %v, want ErrNotFound", err)
	}
	fi, _ := os.Stat(s.recordPath(1))
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("record mode %v, want 0600", fi.Mode())
	}
	ents, _ := os.ReadDir(s.dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Fatalf("temp file left behind: %s", e.Name())
		}
	}
}

func TestLatestSkipsUndone(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	if _, err := s.Latest(); !errors.Is(err, ErrNone) {
		t.Fatalf("Latest of an empty store = %v, want ErrNone", err)
	}
	for _, c := range []string{"c1", "c2", "c3"} {
		if err := s.Save(&Record{Commit: c, Items: []Item{fileItem(t, s, c, []byte(c))}}); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		undo int
		want string
	}{{0, "c3"}, {3, "c2"}, {2, "c1"}, {1, ""}}
	for _, st := range steps {
		if st.undo != 0 {
			if err := s.MarkUndone(st.undo); err != nil {
				t.Fatal(err)
			}
		}
		r, err := s.Latest()
		if st.want == "" {
			if !errors.Is(err, ErrNone) {
				t.Fatalf("Latest after undoing all = %v, want ErrNone", err)
			}
			continue
		}
		if err != nil || r.Commit != st.want {
			t.Fatalf("Latest after undoing %d = %v, %v; want %s", st.undo, r, err, st.want)
		}
	}
	r, _ := s.Get(2)
	if !r.Undone {
		t.Fatal("MarkUndone(2) did not last")
	}
	// A commit after undos gets a new id and is the latest.
	r4 := &Record{Commit: "c4"}
	if err := s.Save(r4); err != nil || r4.ID != 4 {
		t.Fatalf("Save after undos: id %d, %v", r4.ID, err)
	}
	if l, err := s.Latest(); err != nil || l.Commit != "c4" {
		t.Fatalf("Latest = %v, %v; want c4", l, err)
	}
}

func TestSaveRefuses(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	good := fileItem(t, s, "a", []byte("a"))
	missing := good
	missing.Before.Blob = strings.Repeat("ab", 20)
	tests := map[string]struct {
		items []Item
		want  error
	}{
		"blob not stored":   {[]Item{missing}, ErrBlobMissing},
		"path escapes":      {[]Item{{Path: "../x", Before: State{Type: "none"}, After: State{Type: "none"}}}, ErrInvalid},
		"absolute path":     {[]Item{{Path: "/etc/passwd", Before: State{Type: "none"}, After: State{Type: "none"}}}, ErrInvalid},
		"unclean path":      {[]Item{{Path: "a/../../b", Before: State{Type: "none"}, After: State{Type: "none"}}}, ErrInvalid},
		"file without blob": {[]Item{{Path: "a", Before: State{Type: "file", Hash: good.Before.Hash}, After: State{Type: "none"}}}, ErrInvalid},
		"unknown type":      {[]Item{{Path: "a", Before: State{Type: "socket"}, After: State{Type: "none"}}}, ErrInvalid},
		"twice":             {[]Item{good, good}, ErrInvalid},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := &Record{Items: tc.items}
			if err := s.Save(r); !errors.Is(err, tc.want) {
				t.Fatalf("Save = %v, want %v", err, tc.want)
			}
			if r.ID != 0 {
				t.Fatalf("a refused Save assigned id %d", r.ID)
			}
		})
	}
	if ids, _ := s.ids(); len(ids) != 0 {
		t.Fatalf("refused Saves wrote records %v", ids)
	}
}

func TestDamagedRecord(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"truncated":     `{"id":1,"time":"2026-11-29T19:00:00Z","commit":"c","items":[{"pa`,
		"not json":      "\x00\x01",
		"wrong id":      `{"id":7,"time":"2026-11-29T19:00:00Z","commit":"c","items":[]}`,
		"escaping path": `{"id":1,"time":"2026-11-29T19:00:00Z","commit":"c","items":[{"path":"../../etc/passwd","before":{"type":"none"},"after":{"type":"none"}}]}`,
		"empty":         "",
	}
	for name, content := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t)
			p := filepath.Join(s.dir, "1.json")
			os.WriteFile(p, []byte(content), 0o600)
			for op, f := range map[string]func() error{
				"Get":        func() error { _, err := s.Get(1); return err },
				"List":       func() error { _, err := s.List(); return err },
				"Latest":     func() error { _, err := s.Latest(); return err },
				"MarkUndone": func() error { return s.MarkUndone(1) },
			} {
				err := f()
				if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), p) {
					t.Errorf("%s on a damaged record = %v, want ErrDamaged naming %s", op, err, p)
				}
			}
			if b, _ := os.ReadFile(p); string(b) != content {
				t.Error("a damaged record was changed")
			}
		})
	}
}

// TestDamagedObject: an object file changed on disk is an error when read,
// and a damaged object (as a crash before fsync can leave it) is replaced
// the next time the same content is stored.
func TestDamagedObject(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	content := bytes.Repeat([]byte("photo "), 1000)
	blob, err := s.PutBytes(content)
	if err != nil {
		t.Fatal(err)
	}
	obj := s.objectPath(blob)
	os.Chmod(obj, 0o644)
	// A zlib stream of other content under this name, as a bit flip or a
	// torn write could leave it.
	other, err := s.PutBytes(bytes.Repeat([]byte("photo "), 999))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(s.objectPath(other))
	os.WriteFile(obj, b, 0o444)

	s2, err := Open(s.dir) // a fresh store: nothing cached
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	rc, err := s2.Open(blob)
	if err == nil {
		_, err = io.ReadAll(rc)
		rc.Close()
	}
	if !errors.Is(err, ErrDamaged) {
		t.Fatalf("reading a damaged object = %v, want ErrDamaged", err)
	}
	again, err := s2.PutBytes(content)
	if err != nil || again != blob {
		t.Fatalf("PutBytes over a damaged object = %s, %v", again, err)
	}
	s3, _ := Open(s.dir)
	defer s3.Close()
	if got := readBlob(t, s3, blob); !bytes.Equal(got, content) {
		t.Fatal("the damaged object was not replaced")
	}
	// A truncated object file (a crash before fsync) is also replaced.
	os.Chmod(obj, 0o644)
	os.Truncate(obj, 3)
	s4, _ := Open(s.dir)
	defer s4.Close()
	if _, err := s4.PutBytes(content); err != nil {
		t.Fatal(err)
	}
	if got := readBlob(t, s4, blob); !bytes.Equal(got, content) {
		t.Fatal("the truncated object was not replaced")
	}
}

// TestSaveMakesBlobsDurable exercises the durability path: Save fsyncs each
// loose object file a record names, then each object directory once, then
// the record's temp file, then the checkpoints directory; a failed fsync of
// a blob means no record is written.
func TestSaveMakesBlobsDurable(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	a := fileItem(t, s, "a", []byte("durable a"))
	b := fileItem(t, s, "b", []byte("durable b"))
	c := a
	c.Path = "c" // the same blob twice: fsynced once
	var mu sync.Mutex
	var synced []string
	s.onSync = func(p string) error {
		mu.Lock()
		defer mu.Unlock()
		synced = append(synced, p)
		return nil
	}
	if err := s.Save(&Record{Items: []Item{a, b, c}}); err != nil {
		t.Fatal(err)
	}
	objA, objB := s.objectPath(a.Before.Blob), s.objectPath(b.Before.Blob)
	rel := func(p string) string {
		r, _ := filepath.Rel(s.dir, p)
		if strings.Contains(r, ".tmp-") {
			return "record temp file"
		}
		return r
	}
	var got []string
	for _, p := range synced {
		got = append(got, rel(p))
	}
	// Within a phase the fsyncs run in parallel: compare phases as sets.
	objects := []string{rel(objA), rel(objB)}
	dirs := []string{rel(filepath.Dir(objA)), rel(filepath.Dir(objB)), filepath.Join(StoreDir, "objects")}
	slices.Sort(dirs)
	dirs = slices.Compact(dirs)
	if len(got) != len(objects)+len(dirs)+2 {
		t.Fatalf("fsynced %q, want objects %q, then dirs %q, then the record and its dir", got, objects, dirs)
	}
	phases := [][]string{objects, dirs, {"record temp file"}, {"."}}
	k := 0
	for _, want := range phases {
		phase := slices.Clone(got[k : k+len(want)])
		slices.Sort(phase)
		slices.Sort(want)
		if diff := cmp.Diff(want, phase); diff != "" {
			t.Fatalf("fsync order %q: phase (-want +got):\n%s", got, diff)
		}
		k += len(want)
	}

	s.onSync = func(p string) error {
		if p == objB {
			return syscall.EIO
		}
		return nil
	}
	r := &Record{Items: []Item{a, b}}
	err := s.Save(r)
	if !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), "no record was written") {
		t.Fatalf("Save with a failing fsync = %v, want EIO and no record", err)
	}
	if ids, _ := s.ids(); len(ids) != 1 || r.ID != 0 {
		t.Fatalf("Save with a failing blob fsync wrote a record: %v (id %d)", ids, r.ID)
	}
}

func TestOpenDamagedStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, StoreDir), []byte("not a repo"), 0o600)
	if _, err := Open(dir); !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), StoreDir) {
		t.Fatalf("Open with a file in place of store.git = %v, want ErrDamaged", err)
	}
}

func TestOpenMissingBlob(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	for _, b := range []string{strings.Repeat("0", 40), "xyz", ""} {
		if _, err := s.Open(b); !errors.Is(err, ErrBlobMissing) {
			t.Errorf("Open(%q) = %v, want ErrBlobMissing", b, err)
		}
	}
}

func TestConcurrentSave(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "checkpoints")
	var wg sync.WaitGroup
	stores := make([]*Store, 4)
	for i := range stores {
		s, err := Open(dir) // like separate processes: separate Stores
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		stores[i] = s
	}
	for i := range 20 {
		wg.Go(func() {
			if err := stores[i%4].Save(&Record{Commit: "c"}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	all, err := stores[0].List()
	if err != nil || len(all) != 20 {
		t.Fatalf("List after 20 concurrent saves: %d, %v", len(all), err)
	}
	for i, r := range all {
		if r.ID != i+1 {
			t.Fatalf("ids are not 1..20: %d at %d", r.ID, i)
		}
	}
}
