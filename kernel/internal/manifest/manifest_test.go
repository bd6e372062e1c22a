package manifest

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kulehq/kule/kernel/internal/effects"
	"github.com/kulehq/kule/kernel/internal/walk"
)

func sample() *Manifest {
	m := &Manifest{Backend: "copy"}
	m.Entries = []Entry{
		{Item: walk.Item{Path: "a", Type: effects.TypeDir, Mode: 0o755}},
		{Item: walk.Item{Path: "a/b.txt", Type: effects.TypeFile, Mode: 0o644, Size: 5, MTime: 1700000000123456789, CTime: -1, Ino: 42}, Hash: [32]byte{1, 2, 3}, Off: 0, Len: 5, Folder: Stat{Size: 5, Ino: 7}},
		{Item: walk.Item{Path: "caf\xe9\nname", Type: effects.TypeLink}, Target: "../elsewhere", Len: -1},
	}
	return m
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	t.Parallel()
	m := sample()
	var buf bytes.Buffer
	if err := m.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := Decode(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(m, back); d != "" {
		t.Fatalf("round trip changed the manifest (-want +got):\n%s", d)
	}
}

func TestDecodeFindsDamage(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := sample().Encode(&buf); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	for name, bad := range map[string][]byte{
		"empty":     nil,
		"truncated": good[:len(good)/2],
		"flipped":   append(append([]byte{}, good[:20]...), append([]byte{good[20] ^ 0xff}, good[21:]...)...),
		"no-magic":  append([]byte("XXXXXXXX"), good[8:]...),
	} {
		if _, err := Decode(bad); !errors.Is(err, ErrDamaged) {
			t.Errorf("%s: Decode = %v, want ErrDamaged", name, err)
		}
	}
}

func TestSetGetRemoveBelow(t *testing.T) {
	t.Parallel()
	m := sample()
	m.Set(Entry{Item: walk.Item{Path: "a/a.txt", Type: effects.TypeFile}})
	if _, ok := m.Get("a/a.txt"); !ok {
		t.Fatal("Get after Set found nothing")
	}
	if got := len(m.Below("a")); got != 2 {
		t.Fatalf("Below(a) = %d entries, want 2", got)
	}
	m.Remove("a")
	if _, ok := m.Get("a/b.txt"); ok {
		t.Fatal("Remove(a) left a/b.txt")
	}
	if _, ok := m.Get("caf\xe9\nname"); !ok {
		t.Fatal("Remove(a) removed an entry outside a")
	}
}

// Tasks made before the format's version 2 hold version 1 manifests
// (testdata/sample-v1.manifest is sample() as version 1 wrote it): they
// read as they did, and are written again as version 2.
func TestDecodesVersion1(t *testing.T) {
	t.Parallel()
	old, err := os.ReadFile("testdata/sample-v1.manifest")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(old, []byte(magicV1)) {
		t.Fatalf("the version 1 sample starts %q", old[:8])
	}
	m, err := Decode(old)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(sample(), m); d != "" {
		t.Fatalf("version 1 read differently (-want +got):\n%s", d)
	}
	var buf bytes.Buffer
	if err := m.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(buf.Bytes(), []byte(magic)) || magic == magicV1 {
		t.Fatalf("written again as %q", buf.Bytes()[:8])
	}
	if bytes.Equal(buf.Bytes(), old) {
		t.Fatal("version 2 wrote the same bytes as version 1")
	}
	damaged := bytes.Clone(old)
	damaged[len(damaged)/2] ^= 0x40
	if _, err := Decode(damaged); !errors.Is(err, ErrDamaged) {
		t.Fatalf("a damaged version 1 manifest: %v, want ErrDamaged", err)
	}
}

func FuzzDecode(f *testing.F) {
	var buf bytes.Buffer
	_ = sample().Encode(&buf)
	f.Add(buf.Bytes())
	f.Add([]byte(magic))
	f.Add([]byte(magicV1))
	if old, err := os.ReadFile("testdata/sample-v1.manifest"); err == nil {
		f.Add(old)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Decode(data)
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := m.Encode(&out); err != nil {
			t.Fatal(err)
		}
		if _, err := Decode(out.Bytes()); err != nil {
			t.Fatalf("re-encoded manifest does not decode: %v", err)
		}
	})
}

// A manifest a newer Kule wrote (its magic's version beyond this Kule's)
// is refused as too new, not as damaged: the person is told to use that
// Kule, and nothing reads on into a format this one does not know.
func TestRefusesANewerFormat(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := sample().Encode(&buf); err != nil {
		t.Fatal(err)
	}
	newer := bytes.Clone(buf.Bytes())
	newer[len(magic)-1] = '3'
	_, err := Decode(newer)
	if !errors.Is(err, ErrTooNew) || errors.Is(err, ErrDamaged) {
		t.Fatalf("Decode of a version 3 manifest = %v, want ErrTooNew and not ErrDamaged", err)
	}
	for _, want := range []string{"format 3", "up to format 2", "nothing was read or changed", "newer"} {
		if !bytes.Contains([]byte(err.Error()), []byte(want)) {
			t.Errorf("the error %q does not say %q", err, want)
		}
	}
	for _, v := range []byte{'1', '2'} {
		if got := newerFormat([]byte("KULEMAN" + string(v))); got != 0 {
			t.Errorf("newerFormat(KULEMAN%c) = %c, want 0: this Kule reads it", v, got)
		}
	}
	if got := newerFormat([]byte("KULEMANX")); got != 0 {
		t.Errorf("newerFormat(KULEMANX) = %c, want 0: not a version", got)
	}
}
