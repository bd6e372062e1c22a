package overlay

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/kulehq/kule/kernel/internal/relpath"
)

// A fold record lists the paths of a task's copy that can differ from its
// base: what a full walk found changed, and every path a fold moved since.
// While it holds, a status compares those paths only (scan.Paths), at the
// cost of the changes rather than of the tree. It holds only for the base it
// was begun on and within the boot it was written in: appends are not
// synced, so after a power loss the record is not trusted, and a status
// walks the whole copy again.
//
// The file: a header (recordMagic, the boot's id, the base's manifest size
// and checksum), then one entry per path: a flag byte (1: deep, everything
// below the path too) and the path, length first. Each fold appends its
// entries in one write before it moves anything, so the record never lacks
// a path the copy changed at; an entry cut short ends the record's use.

const recordMagic = "KULEFOLDS1\n"

// RecordBase names the base a record was begun on: its manifest's size
// and checksum (manifest.Indexed.Identity).
type RecordBase struct {
	Size int64
	CRC  uint32
}

// RecordEntry is one path of a record.
type RecordEntry struct {
	Path string
	Deep bool
}

// ErrNoRecord is a record that cannot be used: none, another base's or
// boot's, or one cut short. The caller walks the whole copy.
var ErrNoRecord = errors.New("no record of the folds that can be used")

// bootID tells this boot from the one before; a test sets it.
var bootID = func() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return string(bytes.TrimSpace(b))
}

func appendRecordEntries(b []byte, es []RecordEntry) []byte {
	for _, e := range es {
		flag := byte(0)
		if e.Deep {
			flag = 1
		}
		b = append(b, flag)
		b = binary.AppendUvarint(b, uint64(len(e.Path)))
		b = append(b, e.Path...)
	}
	return b
}

// EncodeRecord is a new record of base holding es.
func EncodeRecord(base RecordBase, es []RecordEntry) []byte {
	b := []byte(recordMagic)
	b = appendStr(b, bootID())
	b = binary.LittleEndian.AppendUint64(b, uint64(base.Size))
	b = binary.LittleEndian.AppendUint32(b, base.CRC)
	return appendRecordEntries(b, es)
}

func appendStr(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// DecodeRecord reads a record, and refuses it (ErrNoRecord) unless it was
// written in this boot for base.
func DecodeRecord(data []byte, base RecordBase) ([]RecordEntry, error) {
	if !bytes.HasPrefix(data, []byte(recordMagic)) {
		return nil, fmt.Errorf("%w: not a record", ErrNoRecord)
	}
	b := data[len(recordMagic):]
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, fmt.Errorf("%w: cut short", ErrNoRecord)
	}
	boot := string(b[k : k+int(n)])
	b = b[k+int(n):]
	if len(b) < 12 {
		return nil, fmt.Errorf("%w: cut short", ErrNoRecord)
	}
	if boot == "" || boot != bootID() {
		return nil, fmt.Errorf("%w: written before the machine last started", ErrNoRecord)
	}
	if got := (RecordBase{Size: int64(binary.LittleEndian.Uint64(b)), CRC: binary.LittleEndian.Uint32(b[8:])}); got != base {
		return nil, fmt.Errorf("%w: begun on another base", ErrNoRecord)
	}
	b = b[12:]
	var out []RecordEntry
	for len(b) > 0 {
		if b[0] > 1 {
			return nil, fmt.Errorf("%w: damaged", ErrNoRecord)
		}
		n, k := binary.Uvarint(b[1:])
		if k <= 0 || n == 0 || n > uint64(len(b)-1-k) {
			return nil, fmt.Errorf("%w: cut short", ErrNoRecord)
		}
		e := RecordEntry{Deep: b[0] == 1, Path: string(b[1+k : 1+k+int(n)])}
		if relpath.Check(e.Path) != nil {
			return nil, fmt.Errorf("%w: %q is no path inside the copy", ErrNoRecord, e.Path)
		}
		out = append(out, e)
		b = b[1+k+int(n):]
	}
	return out, nil
}

// AppendRecord adds es to the record at path in one write, if there is a
// record there: a fold into a copy no record follows need not start one.
func AppendRecord(path string, es []RecordEntry) error {
	if len(es) == 0 {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|unix.O_NOFOLLOW, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("the record of the folds: %w", err)
	}
	defer f.Close()
	if _, err := f.Write(appendRecordEntries(nil, es)); err != nil {
		return fmt.Errorf("the record of the folds: %w", err)
	}
	return f.Close()
}

// RecordEntries are the entries that stand for what a fold of changes
// moves: each path of the upper layer, and everything below one that is
// deleted or replaced.
func RecordEntries(changes []Change) []RecordEntry {
	out := make([]RecordEntry, 0, len(changes))
	for _, c := range changes {
		out = append(out, RecordEntry{Path: c.Path, Deep: c.Kind == Deleted || c.Kind == Replaced})
		if c.From != "" {
			out = append(out, RecordEntry{Path: c.From, Deep: true})
		}
	}
	return out
}
