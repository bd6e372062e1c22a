package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kulehq/kule/kernel/internal/effects"
	"github.com/kulehq/kule/kernel/internal/walk"
)

// big is a manifest of n files in directories of 100, as a status meets it.
func big(n int) *Manifest {
	m := &Manifest{Backend: "copy"}
	for i := range n {
		if i%100 == 0 {
			m.Entries = append(m.Entries, Entry{Item: walk.Item{Path: fmt.Sprintf("d%05d", i/100), Type: effects.TypeDir, Mode: 0o755, MTime: 1764000000123456789 + int64(i), Ino: uint64(i)}, Len: -1})
		}
		m.Entries = append(m.Entries, Entry{
			Item:   walk.Item{Path: fmt.Sprintf("d%05d/f%03d.txt", i/100, i%100), Type: effects.TypeFile, Mode: 0o644, Size: 12, MTime: 1764000000123456789 + int64(i), CTime: 1764000000987654321 + int64(i), Ino: 1000000 + uint64(i), Dev: 2049},
			Hash:   [32]byte{byte(i), byte(i >> 8), 7},
			Folder: Stat{Size: 12, MTime: 1764000000123456789 + int64(i), CTime: 1764000000987654321, Ino: 2000000 + uint64(i), Mode: 0o644},
			Off:    int64(i) * 12, Len: 12,
		})
	}
	m.Sort()
	return m
}

func BenchmarkLoad100k(b *testing.B) {
	p := filepath.Join(b.TempDir(), "manifest")
	if err := Save(p, big(100_000)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecode100k(b *testing.B) {
	var buf bytes.Buffer
	if err := big(100_000).Encode(&buf); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(buf.Bytes()); err != nil {
			b.Fatal(err)
		}
	}
}

// Load decodes the file through a window smaller than it: entries and
// strings that straddle the window's edge, and a path longer than the
// window, come back whole.
func TestLoadReadsPastTheWindow(t *testing.T) {
	t.Parallel()
	m := big(3000)
	long := strings.Repeat("x/", window) + "end"
	m.Set(Entry{Item: walk.Item{Path: long, Type: effects.TypeLink}, Target: strings.Repeat("t", window+17), Len: -1})
	p := filepath.Join(t.TempDir(), "manifest")
	if err := Save(p, m); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(p); err != nil || fi.Size() < 4*window {
		t.Fatalf("the file is %v bytes (%v): want several windows", fi.Size(), err)
	}
	back, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(m, back); d != "" {
		t.Fatalf("Load changed the manifest (-saved +loaded):\n%s", d)
	}
}

// Every cut and every flipped byte of a file of several windows is found:
// as a checksum that does not match, whatever the decoding met first.
func TestLoadFindsDamageAnywhere(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := big(3000).Encode(&buf); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		at := rng.IntN(len(good))
		cut := good[:at]
		if _, err := Decode(cut); !errors.Is(err, ErrDamaged) {
			t.Fatalf("cut at %d of %d: Decode = %v, want ErrDamaged", at, len(good), err)
		}
		flipped := bytes.Clone(good)
		flipped[at] ^= 1 << rng.IntN(8)
		_, err := Decode(flipped)
		if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "checksum") {
			t.Fatalf("byte %d of %d flipped: Decode = %v, want a checksum that does not match", at, len(good), err)
		}
	}
}
