package atomicfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWriteReplacesWholeAndLeavesNoTemporaryFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "task.json")
	if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(p, []byte("new content"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	info, _ := os.Stat(p)
	if string(b) != "new content" || info.Mode().Perm() != 0o600 {
		t.Fatalf("got %q %v, want the new content at 0600", b, info.Mode().Perm())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("the directory holds %d entries; a temporary file was left", len(ents))
	}
	if err := Write(filepath.Join(dir, "missing", "x"), nil, 0o600); err == nil {
		t.Fatal("Write into a missing directory succeeded")
	}
}

func TestWriteWithOptions(t *testing.T) {
	t.Parallel()
	fail := errors.New("planted")
	for _, tc := range []struct {
		name      string
		old       string // "" for no file before
		o         Options
		fill      string
		fillErr   error
		wantErr   error
		want      string
		wantSyncs []string // base names passed to BeforeSync
	}{
		{name: "replace", old: "old", fill: "new", want: "new", wantSyncs: []string{"tmp", "dir"}},
		{name: "exclusive new", fill: "new", o: Options{Exclusive: true}, want: "new", wantSyncs: []string{"tmp", "dir"}},
		{name: "exclusive exists", old: "old", fill: "new", o: Options{Exclusive: true}, wantErr: fs.ErrExist, want: "old", wantSyncs: []string{"tmp"}},
		{name: "no sync", old: "old", fill: "new", o: Options{NoSync: true}, want: "new"},
		{name: "no dir sync", old: "old", fill: "new", o: Options{NoDirSync: true}, want: "new", wantSyncs: []string{"tmp"}},
		{name: "fill fails", old: "old", fill: "half", fillErr: fail, wantErr: fail, want: "old"},
		{name: "fsync fails", old: "old", fill: "new", o: Options{BeforeSync: func(p string) error {
			if strings.Contains(p, ".tmp-") {
				return fail
			}
			return nil
		}}, wantErr: fail, want: "old"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			p := filepath.Join(dir, "rec.json")
			if tc.old != "" {
				if err := os.WriteFile(p, []byte(tc.old), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var syncs []string
			o := tc.o
			o.Perm = 0o640
			if o.BeforeSync == nil && !o.NoSync {
				o.BeforeSync = func(path string) error {
					switch {
					case path == dir:
						syncs = append(syncs, "dir")
					case strings.HasPrefix(filepath.Base(path), ".rec.json.tmp-"):
						syncs = append(syncs, "tmp")
					default:
						syncs = append(syncs, path)
					}
					return nil
				}
			}
			err := WriteWith(p, o, func(w io.Writer) error {
				if _, err := io.WriteString(w, tc.fill); err != nil {
					return err
				}
				return tc.fillErr
			})
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("WriteWith = %v, want %v", err, tc.wantErr)
			}
			b, rerr := os.ReadFile(p)
			if rerr != nil || string(b) != tc.want {
				t.Fatalf("the file holds %q (%v), want %q", b, rerr, tc.want)
			}
			if tc.wantErr == nil {
				if info, _ := os.Stat(p); info.Mode().Perm() != 0o640 {
					t.Fatalf("mode %v, want 0640", info.Mode().Perm())
				}
			}
			if diff := cmp.Diff(tc.wantSyncs, syncs); tc.o.BeforeSync == nil && diff != "" {
				t.Fatalf("fsyncs (-want +got):\n%s", diff)
			}
			if ents, _ := os.ReadDir(dir); len(ents) > 1 {
				t.Fatalf("the directory holds %d entries; a temporary file was left", len(ents))
			}
		})
	}
}

func TestWriteWithTempPrefix(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var seen string
	o := Options{Perm: 0o444, TempPrefix: "tmp_obj_", BeforeSync: func(p string) error {
		if seen == "" {
			seen = filepath.Base(p)
		}
		return nil
	}}
	if err := WriteWith(filepath.Join(dir, "ab"), o, bytesFill([]byte("x"))); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(seen, "tmp_obj_") {
		t.Fatalf("the temporary file was %q, want a tmp_obj_ name", seen)
	}
}

func TestAppend(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "log.jsonl")
	for _, line := range []string{"one\n", "two\n"} {
		if err := Append(p, []byte(line), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "one\ntwo\n" {
		t.Fatalf("the log holds %q (%v), want both lines in order", b, err)
	}
	if info, _ := os.Stat(p); info.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", info.Mode().Perm())
	}
	if err := Append(filepath.Join(dir, "missing", "x"), []byte("x\n"), 0o600); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Append into a missing directory = %v, want ErrNotExist", err)
	}
}
