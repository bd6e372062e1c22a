package gitstate

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sync"
)

// The split form of a base (Save): the file itself holds splitMagic, the
// name, size and checksum of its entries file, the JSON header, and per
// repository the count, place and length of its index entries in the
// entries file and its loose object ids, then a CRC-32 of all of it. The
// entries file holds every repository's entries one after another, then
// a CRC-32 of them.
const splitMagic = "KULEGITB2\n"

// entriesPrefix starts an entries file's name; the checksum of its
// entries ends it.
const entriesPrefix = "git-index-"

// entriesName names the entries file of entries (trailing checksum and
// all): by the checksum it ends with, which the CRC of the whole file
// would not tell apart (a CRC over data and its own CRC is a constant).
func entriesName(entries []byte) string {
	return fmt.Sprintf("%s%08x.bin", entriesPrefix, binary.LittleEndian.Uint32(entries[len(entries)-4:]))
}

func (b *Base) encodeSplit() (entries, raw []byte, err error) {
	head := Base{Repos: make([]BaseRepo, len(b.Repos))}
	type section struct{ count, off, n int }
	secs := make([]section, len(b.Repos))
	for i, r := range b.Repos {
		s := *r.Snapshot
		s.Index, s.Objects.Loose, s.lazy = nil, nil, nil
		head.Repos[i] = BaseRepo{Path: r.Path, Nested: r.Nested, Snapshot: &s}
		var es []byte
		var count int
		if lz := r.Snapshot.lazy; lz != nil {
			raw, err := lz.bytes()
			if err != nil {
				return nil, nil, err
			}
			es, count = raw, lz.count
		} else {
			es, count = encodeEntries(r.Snapshot.Index), len(r.Snapshot.Index)
		}
		secs[i] = section{count, len(entries), len(es)}
		entries = append(entries, es...)
	}
	entries = binary.LittleEndian.AppendUint32(entries, crc32.ChecksumIEEE(entries))
	hj, err := json.Marshal(head)
	if err != nil {
		return nil, nil, err
	}
	name := entriesName(entries)
	raw = append([]byte(splitMagic), binary.AppendUvarint(nil, uint64(len(name)))...)
	raw = append(raw, name...)
	raw = binary.AppendUvarint(raw, uint64(len(entries)))
	raw = binary.AppendUvarint(raw, uint64(len(hj)))
	raw = append(raw, hj...)
	for i, r := range b.Repos {
		raw = binary.AppendUvarint(raw, uint64(secs[i].count))
		raw = binary.AppendUvarint(raw, uint64(secs[i].off))
		raw = binary.AppendUvarint(raw, uint64(secs[i].n))
		raw = binary.AppendUvarint(raw, uint64(len(r.Snapshot.Objects.Loose)))
		for _, id := range r.Snapshot.Objects.Loose {
			raw = append(raw, id[:]...)
		}
	}
	return entries, binary.LittleEndian.AppendUint32(raw, crc32.ChecksumIEEE(raw)), nil
}

// entriesFile reads a base's entries file once, when a snapshot first needs
// its index, and checks it is the one the base names.
type entriesFile struct {
	path string
	size uint64
	once sync.Once
	body []byte
	err  error
}

func (f *entriesFile) read() ([]byte, error) {
	f.once.Do(func() {
		raw, err := os.ReadFile(f.path)
		switch {
		case err != nil:
			f.err = fmt.Errorf("%w: the index entries: %v", ErrSnapshot, err)
		case uint64(len(raw)) != f.size || len(raw) < 4 || entriesName(raw) != filepath.Base(f.path):
			f.err = fmt.Errorf("%w: the index entries in %s are not the ones the base names", ErrSnapshot, f.path)
		case crc32.ChecksumIEEE(raw[:len(raw)-4]) != binary.LittleEndian.Uint32(raw[len(raw)-4:]):
			f.err = fmt.Errorf("%w: the index entries' checksum does not match", ErrSnapshot)
		default:
			f.body = raw[:len(raw)-4]
		}
	})
	return f.body, f.err
}

// decodeSplit reads the split form; dir holds its entries file.
func decodeSplit(raw []byte, dir string) (*Base, error) {
	if len(raw) < len(splitMagic)+4 {
		return nil, fmt.Errorf("%w: base too short", ErrSnapshot)
	}
	body, sum := raw[:len(raw)-4], raw[len(raw)-4:]
	if crc32.ChecksumIEEE(body) != binary.LittleEndian.Uint32(sum) {
		return nil, fmt.Errorf("%w: base checksum does not match", ErrSnapshot)
	}
	r := &splitReader{b: body[len(splitMagic):]}
	name := string(r.take())
	size := r.num()
	hj := r.take()
	if r.bad || !bytes.HasPrefix([]byte(name), []byte(entriesPrefix)) || filepath.Base(name) != name {
		return nil, fmt.Errorf("%w: base header truncated", ErrSnapshot)
	}
	b, err := decodeBaseJSON(hj)
	if err != nil {
		return nil, err
	}
	ef := &entriesFile{path: filepath.Join(dir, name), size: size}
	for _, br := range b.Repos {
		count, off, n := r.num(), r.num(), r.num()
		if r.bad || off+n < off || off+n > size || count > n/22+1 {
			return nil, fmt.Errorf("%w: repository %s: index section", ErrSnapshot, br.Path)
		}
		br.Snapshot.Index, br.Snapshot.lazy = nil, &lazyIndex{file: ef, off: int(off), n: int(n), count: int(count)}
		loose := r.num()
		if r.bad || loose > uint64(len(r.b)/20) {
			return nil, fmt.Errorf("%w: repository %s: object ids truncated", ErrSnapshot, br.Path)
		}
		ids := make(idList, loose)
		for i := range ids {
			copy(ids[i][:], r.b[20*i:])
			if i > 0 && bytes.Compare(ids[i-1][:], ids[i][:]) >= 0 {
				return nil, fmt.Errorf("%w: repository %s: object ids not sorted", ErrSnapshot, br.Path)
			}
		}
		r.b = r.b[20*loose:]
		br.Snapshot.Objects.Loose = ids
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the last repository", ErrSnapshot, len(r.b))
	}
	return b, nil
}

// splitReader reads uvarints and length-prefixed fields; bad once one
// does not fit.
type splitReader struct {
	b   []byte
	bad bool
}

func (r *splitReader) num() uint64 {
	n, k := binary.Uvarint(r.b)
	if k <= 0 {
		r.bad = true
		return 0
	}
	r.b = r.b[k:]
	return n
}

func (r *splitReader) take() []byte {
	n := r.num()
	if r.bad || n > uint64(len(r.b)) {
		r.bad = true
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}
