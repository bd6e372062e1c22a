package manifest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/kulehq/kule/kernel/internal/effects"
	"github.com/kulehq/kule/kernel/internal/walk"
)

// bigManifest has entries across many blocks, in directories deep and
// shallow, with a few settings files among them.
func bigManifest(n int) *Manifest {
	m := &Manifest{Backend: "copy"}
	for i := range n {
		dir := fmt.Sprintf("d%02d/s%03d", i%7, i%97)
		name := fmt.Sprintf("f%05d.txt", i)
		switch i % 500 {
		case 3:
			name = ".env"
		case 4:
			name = ".gitignore"
		case 5:
			name = "prod.env"
		}
		m.Entries = append(m.Entries, Entry{Item: walk.Item{Path: dir + "/" + name, Type: effects.TypeFile, Size: int64(i), Ino: uint64(i)}, Len: -1})
	}
	for i := range 7 {
		m.Entries = append(m.Entries, Entry{Item: walk.Item{Path: fmt.Sprintf("d%02d", i), Type: effects.TypeDir}})
		for j := range 97 {
			m.Entries = append(m.Entries, Entry{Item: walk.Item{Path: fmt.Sprintf("d%02d/s%03d", i, j), Type: effects.TypeDir}})
		}
	}
	m.Sort()
	uniq := m.Entries[:0]
	for _, e := range m.Entries {
		if len(uniq) == 0 || uniq[len(uniq)-1].Path != e.Path {
			uniq = append(uniq, e)
		}
	}
	m.Entries = uniq
	return m
}

func TestIndexedFindsWhatTheWholeManifestHolds(t *testing.T) {
	m := bigManifest(20000)
	p := filepath.Join(t.TempDir(), "manifest")
	if err := Save(p, m); err != nil {
		t.Fatal(err)
	}
	x, err := OpenIndexed(p)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	for _, q := range []string{m.Entries[0].Path, m.Entries[len(m.Entries)-1].Path, m.Entries[blockEntries].Path, m.Entries[blockEntries-1].Path, "d03/s050/f00050.txt", "a", "zzz", "d03/s050/nothing", "d03/s05"} {
		want, wok := m.Get(q)
		got, gok, err := x.Get(q)
		if err != nil || gok != wok || (wok && !reflect.DeepEqual(*got, *want)) {
			t.Fatalf("Get(%q) = %v, %v, %v; the manifest has %v, %v", q, got, gok, err, want, wok)
		}
	}
	for _, d := range []string{"d00", "d06", "d03/s050", "d03/s05", "nothing", "d06/s096"} {
		got, err := x.Below(d)
		if err != nil {
			t.Fatal(err)
		}
		if want := m.Below(d); len(got) != len(want) || (len(want) > 0 && !reflect.DeepEqual(got, want)) {
			t.Fatalf("Below(%q): %d entries, the manifest has %d", d, len(got), len(want))
		}
	}
	var named []string
	for _, e := range m.Entries {
		if isNamed(e.Path) {
			named = append(named, e.Path)
		}
	}
	if len(named) == 0 || !reflect.DeepEqual(x.Named(), named) {
		t.Fatalf("Named: %d paths, the manifest has %d", len(x.Named()), len(named))
	}
}

// An index read beside a manifest it was not made from would answer for
// the wrong entries: it is refused, and the caller loads the manifest.
func TestIndexOfAnotherManifestIsRefused(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "manifest")
	m := bigManifest(3000)
	if err := Save(p, m); err != nil {
		t.Fatal(err)
	}
	old, err := os.ReadFile(IndexPath(p))
	if err != nil {
		t.Fatal(err)
	}
	m.Entries[10].Size++ // the same length, other content
	if err := Save(p, m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(IndexPath(p), old, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenIndexed(p); !errors.Is(err, ErrNoIndex) {
		t.Fatalf("an old index beside a new manifest: %v, want ErrNoIndex", err)
	}
	if err := os.Remove(IndexPath(p)); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenIndexed(p); !errors.Is(err, ErrNoIndex) {
		t.Fatalf("no index: %v, want ErrNoIndex", err)
	}
}

func TestIndexedFindsADamagedBlock(t *testing.T) {
	p := filepath.Join(t.TempDir(), "manifest")
	m := bigManifest(3000)
	if err := Save(p, m); err != nil {
		t.Fatal(err)
	}
	x, err := OpenIndexed(p)
	if err != nil {
		t.Fatal(err)
	}
	bl := x.ix.Blocks[3]
	x.Close()
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{0xff}, bl.Off+bl.Len/2); err != nil {
		t.Fatal(err)
	}
	f.Close()
	x, err = OpenIndexed(p)
	if err != nil {
		t.Fatal(err) // the whole's checksum is not read: the block's is
	}
	defer x.Close()
	if _, _, err := x.Get(bl.First); !errors.Is(err, ErrDamaged) {
		t.Fatalf("a damaged block: %v, want ErrDamaged", err)
	}
	if _, _, err := x.Get(m.Entries[0].Path); err != nil {
		t.Fatalf("an undamaged block: %v", err)
	}
}

func FuzzDecodeIndex(f *testing.F) {
	m := bigManifest(600)
	ix, err := m.encode(discard{})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(ix.encode())
	f.Add([]byte(indexMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		ix, err := decodeIndex(data)
		if err != nil {
			if !errors.Is(err, ErrNoIndex) {
				t.Fatalf("%v is not ErrNoIndex", err)
			}
			return
		}
		if again, err := decodeIndex(ix.encode()); err != nil || !reflect.DeepEqual(again, ix) {
			t.Fatalf("an index read back differs: %v", err)
		}
	})
}

type discard struct{}

func (discard) Write(b []byte) (int, error) { return len(b), nil }
