package overlay

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestRecordReadsBackWhatWasAppended(t *testing.T) {
	p := filepath.Join(t.TempDir(), "folds")
	base := RecordBase{Size: 1234, CRC: 0xdeadbeef}
	first := []RecordEntry{{Path: "a.txt"}, {Path: "gone", Deep: true}}
	if err := os.WriteFile(p, EncodeRecord(base, first), 0o600); err != nil {
		t.Fatal(err)
	}
	more := []RecordEntry{{Path: "caf\xe9/new"}}
	if err := AppendRecord(p, more); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeRecord(data, base)
	if err != nil {
		t.Fatal(err)
	}
	if want := append(first, more...); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	// Another base, another boot, an entry cut short: none is used.
	if _, err := DecodeRecord(data, RecordBase{Size: 1234, CRC: 1}); !errors.Is(err, ErrNoRecord) {
		t.Fatalf("another base: %v", err)
	}
	if _, err := DecodeRecord(data[:len(data)-2], base); !errors.Is(err, ErrNoRecord) {
		t.Fatalf("cut short: %v", err)
	}
	was := bootID
	bootID = func() string { return "another boot" }
	defer func() { bootID = was }()
	if _, err := DecodeRecord(data, base); !errors.Is(err, ErrNoRecord) {
		t.Fatalf("another boot: %v", err)
	}
}

// A fold into a copy that no record follows does not begin one: a record
// begun there would lack what changed before it.
func TestAppendRecordBeginsNone(t *testing.T) {
	p := filepath.Join(t.TempDir(), "folds")
	if err := AppendRecord(p, []RecordEntry{{Path: "a"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a record was begun: %v", err)
	}
}

func TestRecordEntriesOfAFold(t *testing.T) {
	got := RecordEntries([]Change{{Path: "a", Kind: Written}, {Path: "b", Kind: Deleted}, {Path: "c", Kind: Replaced}, {Path: "d", Kind: Written, From: "e"}})
	want := []RecordEntry{{Path: "a"}, {Path: "b", Deep: true}, {Path: "c", Deep: true}, {Path: "d"}, {Path: "e", Deep: true}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func FuzzDecodeRecord(f *testing.F) {
	base := RecordBase{Size: 9, CRC: 7}
	f.Add(EncodeRecord(base, []RecordEntry{{Path: "a"}, {Path: "b/c", Deep: true}}))
	f.Add([]byte(recordMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		es, err := DecodeRecord(data, base)
		if err != nil {
			if !errors.Is(err, ErrNoRecord) {
				t.Fatalf("%v is not ErrNoRecord", err)
			}
			return
		}
		if again, err := DecodeRecord(EncodeRecord(base, es), base); err != nil || !reflect.DeepEqual(again, es) {
			t.Fatalf("read back: %v %v", again, err)
		}
	})
}
