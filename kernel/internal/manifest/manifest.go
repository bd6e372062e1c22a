// Package manifest is the record of a folder at the task's last sync: every
// entry's metadata in the copy (the stat cache that lets a status skip files
// nobody touched), its metadata in the real folder (so a commit can tell
// whether the person changed it underneath), its content hash where known,
// and where the base keeps its content. It is stored in one binary file that
// loads in milliseconds for 100,000 entries.
package manifest

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"sort"
	"unsafe"

	"github.com/kulehq/kule/kernel/internal/atomicfile"
	"github.com/kulehq/kule/kernel/internal/bigalloc"
	"github.com/kulehq/kule/kernel/internal/effects"
	"github.com/kulehq/kule/kernel/internal/walk"
)

// Errors a caller can test for.
var (
	ErrDamaged = errors.New("manifest is damaged")
	// ErrTooNew is a manifest in a format a newer Kule writes: it is not
	// damaged, and this Kule must not read (or rewrite) it.
	ErrTooNew = errors.New("manifest was written by a newer Kule")
)

// Stat is the metadata of one entry in the real folder at the last sync.
type Stat struct {
	Size  int64
	MTime int64
	CTime int64
	Ino   uint64
	Mode  uint32
}

// StatOf takes the Stat part of a walked item.
func StatOf(it walk.Item) Stat {
	return Stat{Size: it.Size, MTime: it.MTime, CTime: it.CTime, Ino: it.Ino, Mode: it.Mode}
}

// Entry is one path as it was at the last sync.
type Entry struct {
	walk.Item          // the copy's metadata right after the sync: the stat cache
	Hash      [32]byte // sha256 of a file's content; zero when not known
	Target    string   // a link's target
	Folder    Stat     // the real folder's metadata at the sync
	Off, Len  int64    // where base/content.pack holds the content; Len < 0: not kept
}

// HasHash reports whether the content hash is known.
func (e *Entry) HasHash() bool { return e.Hash != [32]byte{} }

// Manifest is every entry of a folder, sorted by path.
type Manifest struct {
	Backend string
	Entries []Entry
}

// Sort orders the entries by path; Get needs it.
func (m *Manifest) Sort() {
	sort.Slice(m.Entries, func(i, j int) bool { return m.Entries[i].Path < m.Entries[j].Path })
}

// Get finds the entry at path.
func (m *Manifest) Get(path string) (*Entry, bool) {
	i := sort.Search(len(m.Entries), func(i int) bool { return m.Entries[i].Path >= path })
	if i < len(m.Entries) && m.Entries[i].Path == path {
		return &m.Entries[i], true
	}
	return nil, false
}

// Below returns the entries strictly below dir, in path order.
func (m *Manifest) Below(dir string) []Entry {
	prefix := dir + "/"
	i := sort.Search(len(m.Entries), func(i int) bool { return m.Entries[i].Path >= prefix })
	j := i
	for j < len(m.Entries) && len(m.Entries[j].Path) >= len(prefix) && m.Entries[j].Path[:len(prefix)] == prefix {
		j++
	}
	return m.Entries[i:j]
}

// Set puts e in the manifest, replacing the entry at its path.
func (m *Manifest) Set(e Entry) {
	i := sort.Search(len(m.Entries), func(i int) bool { return m.Entries[i].Path >= e.Path })
	if i < len(m.Entries) && m.Entries[i].Path == e.Path {
		m.Entries[i] = e
		return
	}
	m.Entries = append(m.Entries, Entry{})
	copy(m.Entries[i+1:], m.Entries[i:])
	m.Entries[i] = e
}

// Remove drops the entry at path and everything below it.
func (m *Manifest) Remove(path string) {
	out := m.Entries[:0]
	for _, e := range m.Entries {
		if e.Path == path || (len(e.Path) > len(path) && e.Path[:len(path)+1] == path+"/") {
			continue
		}
		out = append(out, e)
	}
	m.Entries = out
}

// Replace drops the entry at each of tops and everything below it, then puts
// in every entry of add (the last one wins where two share a path), in one
// pass over the manifest: O(entries + changes·log), where a Remove and a Set
// per changed path cost O(entries) each.
func (m *Manifest) Replace(tops []string, add []Entry) {
	type span struct{ lo, hi int }
	spans := make([]span, 0, 2*len(tops))
	for _, p := range tops {
		i := sort.Search(len(m.Entries), func(i int) bool { return m.Entries[i].Path >= p })
		if i < len(m.Entries) && m.Entries[i].Path == p {
			spans = append(spans, span{i, i + 1})
		}
		prefix := p + "/"
		lo := sort.Search(len(m.Entries), func(i int) bool { return m.Entries[i].Path >= prefix })
		hi := lo + sort.Search(len(m.Entries)-lo, func(k int) bool {
			q := m.Entries[lo+k].Path
			return len(q) < len(prefix) || q[:len(prefix)] != prefix
		})
		if hi > lo {
			spans = append(spans, span{lo, hi})
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].lo < spans[j].lo })
	adds := append([]Entry(nil), add...)
	sort.SliceStable(adds, func(i, j int) bool { return adds[i].Path < adds[j].Path })
	uniq := adds[:0]
	for _, e := range adds {
		if len(uniq) > 0 && uniq[len(uniq)-1].Path == e.Path {
			uniq[len(uniq)-1] = e
			continue
		}
		uniq = append(uniq, e)
	}
	out := make([]Entry, 0, len(m.Entries)+len(uniq))
	si, ai := 0, 0
	for i := 0; i < len(m.Entries); i++ {
		for si < len(spans) && spans[si].hi <= i {
			si++
		}
		if si < len(spans) && spans[si].lo <= i {
			// covered: a later span may reach further, so skip to its end
			end := spans[si].hi
			for sj := si + 1; sj < len(spans) && spans[sj].lo < end; sj++ {
				end = max(end, spans[sj].hi)
			}
			i = end - 1
			continue
		}
		e := m.Entries[i]
		for ai < len(uniq) && uniq[ai].Path < e.Path {
			out = append(out, uniq[ai])
			ai++
		}
		if ai < len(uniq) && uniq[ai].Path == e.Path {
			out = append(out, uniq[ai])
			ai++
			continue
		}
		out = append(out, e)
	}
	out = append(out, uniq[ai:]...)
	m.Entries = out
}

// The format's versions. Version 2 keeps the four timestamps of an entry
// in 8 fixed bytes each (a nanosecond time is 9 bytes as a varint, and its
// decoding was a third of a load); version 1 files, which tasks made
// before it still hold, are read as they were.
const (
	magicV1 = "KULEMAN1"
	magic   = "KULEMAN2"
)

// Encode writes m in its binary form.
func (m *Manifest) Encode(w io.Writer) error {
	_, err := m.encode(w)
	return err
}

// encode writes m and returns the index of what it wrote (index.go).
func (m *Manifest) encode(w io.Writer) (*Index, error) {
	crc := crc32.NewIEEE()
	bw := bufio.NewWriterSize(io.MultiWriter(w, crc), 1<<16)
	head := append([]byte(magic), appendStr(nil, m.Backend)...)
	head = binary.AppendUvarint(head, uint64(len(m.Entries)))
	bw.Write(head)
	ix := &Index{Backend: m.Backend, Count: len(m.Entries)}
	off := int64(len(head))
	var b []byte
	for i := range m.Entries {
		e := &m.Entries[i]
		if i%blockEntries == 0 {
			ix.Blocks = append(ix.Blocks, block{First: e.Path, Off: off})
		}
		if isNamed(e.Path) {
			ix.Named = append(ix.Named, e.Path)
		}
		b = appendEntry(b[:0], e)
		bw.Write(b)
		bl := &ix.Blocks[len(ix.Blocks)-1]
		bl.Len += int64(len(b))
		bl.Count++
		bl.CRC = crc32.Update(bl.CRC, crc32.IEEETable, b)
		off += int64(len(b))
	}
	if err := bw.Flush(); err != nil {
		return nil, err
	}
	var sum [4]byte
	binary.LittleEndian.PutUint32(sum[:], crc.Sum32())
	if _, err := w.Write(sum[:]); err != nil {
		return nil, err
	}
	ix.Size, ix.CRC = off+4, crc.Sum32()
	return ix, nil
}

func appendStr(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendTime(b []byte, v int64) []byte { return binary.LittleEndian.AppendUint64(b, uint64(v)) }

// appendEntry appends e's binary form: every entry stands alone, so a
// block of them decodes without what comes before it.
func appendEntry(b []byte, e *Entry) []byte {
	b = appendStr(b, e.Path)
	b = append(b, byte(e.Type))
	b = binary.AppendUvarint(b, uint64(e.Mode))
	b = binary.AppendVarint(b, e.Size)
	b = appendTime(b, e.MTime)
	b = appendTime(b, e.CTime)
	b = binary.AppendUvarint(b, e.Ino)
	b = binary.AppendUvarint(b, e.Dev)
	b = binary.AppendUvarint(b, uint64(e.UID))
	b = binary.AppendUvarint(b, uint64(e.GID))
	if e.HasHash() {
		b = append(b, 1)
		b = append(b, e.Hash[:]...)
	} else {
		b = append(b, 0)
	}
	b = appendStr(b, e.Target)
	b = binary.AppendVarint(b, e.Folder.Size)
	b = appendTime(b, e.Folder.MTime)
	b = appendTime(b, e.Folder.CTime)
	b = binary.AppendUvarint(b, e.Folder.Ino)
	b = binary.AppendUvarint(b, uint64(e.Folder.Mode))
	b = binary.AppendVarint(b, e.Off)
	b = binary.AppendVarint(b, e.Len)
	return b
}

// Decode reads what Encode wrote. Damage anywhere is ErrDamaged.
func Decode(data []byte) (*Manifest, error) {
	return decodeFrom(bytes.NewReader(data), int64(len(data)))
}

// Load reads the manifest file at path.
func Load(path string) (*Manifest, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	m, err := decodeFrom(f, fi.Size())
	if err != nil {
		return nil, fmt.Errorf("manifest %s: %w", path, err)
	}
	return m, nil
}

// window is how much of the file is held at once while it is decoded: the
// entries are decoded as the file is read, and the paths copied out, so
// the file itself (110 bytes an entry) is never held whole.
const window = 64 << 10

// decodeFrom decodes the size bytes of r: the body, then its checksum.
// The checksum is known only once the body has passed, so a body that
// fails to decode is read to its end all the same: a checksum that does
// not match is the error then, as it would be were it checked first.
func decodeFrom(r io.Reader, size int64) (*Manifest, error) {
	if size < int64(len(magic))+4 {
		return nil, fmt.Errorf("%w: too short", ErrDamaged)
	}
	d := &decoder{src: io.LimitReader(r, size-4), left: size - 4, crc: crc32.NewIEEE(), buf: make([]byte, 0, min(window, size))}
	m, derr := d.manifest()
	if errors.Is(derr, ErrTooNew) {
		return nil, derr // its checksum, too, is a newer Kule's to check
	}
	if _, err := io.Copy(d.crc, d.src); err != nil && derr == nil {
		derr = err
	}
	var sum [4]byte
	if _, err := io.ReadFull(r, sum[:]); err != nil {
		return nil, fmt.Errorf("%w: too short", ErrDamaged)
	}
	if d.crc.Sum32() != binary.LittleEndian.Uint32(sum[:]) {
		return nil, fmt.Errorf("%w: checksum does not match", ErrDamaged)
	}
	if derr != nil {
		return nil, derr
	}
	return m, nil
}

func (d *decoder) manifest() (*Manifest, error) {
	d.fill(entryMax)
	head := d.take(len(magic))
	switch string(head) {
	case magic:
	case magicV1:
		d.v1 = true
	default:
		if v := newerFormat(head); v != 0 {
			return nil, fmt.Errorf("%w (format %c; this Kule reads up to format %c): nothing was read or changed; use that Kule, or a newer one, with this task", ErrTooNew, v, magic[len(magic)-1])
		}
		return nil, fmt.Errorf("%w: not a manifest", ErrDamaged)
	}
	m := &Manifest{Backend: d.str()}
	d.fill(entryMax)
	n := d.uv()
	if n > uint64(d.left)+uint64(len(d.b)) { // every entry takes at least one byte
		return nil, fmt.Errorf("%w: %d entries cannot fit", ErrDamaged, n)
	}
	m.Entries = make([]Entry, 0, n)
	bigalloc.Advise(m.Entries)
	for i := range int(n) {
		m.Entries = m.Entries[:i+1]
		if err := d.entry(&m.Entries[i]); err != nil { // decoded in place: an Entry is 176 bytes
			return nil, err
		}
	}
	if d.fill(1); len(d.b) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the last entry", ErrDamaged, int64(len(d.b))+d.left)
	}
	for i := 1; i < len(m.Entries); i++ {
		if m.Entries[i-1].Path >= m.Entries[i].Path {
			return nil, fmt.Errorf("%w: entries out of order at %q", ErrDamaged, m.Entries[i].Path)
		}
	}
	return m, nil
}

// entry decodes one entry into e.
func (d *decoder) entry(e *Entry) error {
	e.Path = d.str()
	d.fill(entryMax)
	e.Type = effects.EntryType(d.byte())
	e.Mode = uint32(d.uv())
	e.Size = d.sv()
	e.MTime = d.ts()
	e.CTime = d.ts()
	e.Ino = d.uv()
	e.Dev = d.uv()
	e.UID = uint32(d.uv())
	e.GID = uint32(d.uv())
	if d.byte() == 1 {
		copy(e.Hash[:], d.take(32))
	}
	e.Target = d.str()
	d.fill(entryMax)
	e.Folder.Size = d.sv()
	e.Folder.MTime = d.ts()
	e.Folder.CTime = d.ts()
	e.Folder.Ino = d.uv()
	e.Folder.Mode = uint32(d.uv())
	e.Off = d.sv()
	e.Len = d.sv()
	if d.err != nil {
		return fmt.Errorf("%w: %v", ErrDamaged, d.err)
	}
	if e.Type > effects.TypeLink {
		return fmt.Errorf("%w: entry %q has unknown type %d", ErrDamaged, e.Path, e.Type)
	}
	d.fill(entryMax) // the next entry's path length
	return nil
}

// decoder reads the body through a window of buf; b is the unread part of
// the window and left what the source has not given yet.
type decoder struct {
	src   io.Reader
	left  int64
	crc   hash.Hash32
	buf   []byte
	b     []byte
	err   error
	arena []byte // the strings decoded so far are cut from here
	v1    bool   // timestamps are varints (format version 1)
}

// newerFormat returns the version digit of a manifest magic newer than
// this Kule's ("KULEMAN3" and on), or 0.
func newerFormat(head []byte) byte {
	if len(head) != len(magic) || string(head[:len(magic)-1]) != magic[:len(magic)-1] {
		return 0
	}
	if v := head[len(magic)-1]; v > magic[len(magic)-1] && v <= '9' {
		return v
	}
	return 0
}

// entryMax is more than the numbers between two strings of an entry take
// (17 numbers and a hash in all): the window is filled to it after each
// string (which str reads past the window), and the numbers are then read
// from the window alone.
const entryMax = 17*binary.MaxVarintLen64 + 40

// fill makes the window hold at least n bytes where the body has them.
func (d *decoder) fill(n int) {
	if len(d.b) >= n || d.left == 0 || d.err != nil {
		return
	}
	k := copy(d.buf[:cap(d.buf)], d.b)
	for k < n && d.left > 0 {
		got, err := d.src.Read(d.buf[k:cap(d.buf)])
		d.crc.Write(d.buf[k : k+got])
		k += got
		d.left -= int64(got)
		if err != nil {
			if err != io.EOF {
				d.err = err
			}
			d.left = 0
		}
	}
	d.b = d.buf[:k]
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("truncated %s", what)
	}
	d.b, d.left = nil, 0
}

func (d *decoder) uv() uint64 {
	if len(d.b) > 0 && d.b[0] < 0x80 { // most numbers take one byte
		v := d.b[0]
		d.b = d.b[1:]
		return uint64(v)
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("number")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) sv() int64 {
	u := d.uv()
	return int64(u>>1) ^ -int64(u&1) // binary.PutVarint's zig-zag
}

// ts reads a timestamp: 8 bytes, or a varint in version 1.
func (d *decoder) ts() int64 {
	if d.v1 {
		return d.sv()
	}
	if len(d.b) < 8 {
		d.fail("time")
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b)
	d.b = d.b[8:]
	return int64(v)
}

func (d *decoder) byte() byte {
	if len(d.b) < 1 {
		d.fail("byte")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

// take returns the next n bytes of the window, valid until the next fill.
func (d *decoder) take(n int) []byte {
	if len(d.b) < n {
		d.fail("field")
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

// str reads a string into the arena: 100,000 paths are a few blocks, not
// an allocation each, and nothing else of the file is kept.
func (d *decoder) str() string {
	n := d.uv()
	if n == 0 || d.err != nil {
		return ""
	}
	if n > uint64(len(d.b))+uint64(d.left) {
		d.fail("field")
		return ""
	}
	if int(n) > cap(d.arena)-len(d.arena) {
		d.arena = make([]byte, 0, max(int(n), min(window, int(d.left)+len(d.b))))
	}
	at := len(d.arena)
	k := copy(d.arena[at:at+int(n)], d.b)
	d.b = d.b[k:]
	if k < int(n) { // longer than the window: read the rest straight in
		rest := d.arena[at+k : at+int(n)]
		got, err := io.ReadFull(d.src, rest)
		d.crc.Write(rest[:got])
		d.left -= int64(got)
		if err != nil {
			d.fail("field")
			return ""
		}
	}
	d.arena = d.arena[:at+int(n)]
	return unsafe.String(&d.arena[at], int(n)) // never written again
}

// Save writes the manifest atomically: temp file, fsync, rename, directory
// fsync. A crash leaves the old manifest or the new one.
func Save(path string, m *Manifest) error {
	// The index of the manifest being replaced goes first: an index is
	// used only beside the manifest it was made from (it names its size
	// and checksum), and one left over is never read as this one's.
	if err := os.Remove(IndexPath(path)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("manifest: %w", err)
	}
	var ix *Index
	err := atomicfile.WriteWith(path, atomicfile.Options{Perm: 0o600}, func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 1<<20)
		var err error
		if ix, err = m.encode(bw); err != nil {
			return err
		}
		return bw.Flush()
	})
	if err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	// Only a cache: without it (a crash before it was written, a disk
	// full) every reader loads the whole manifest, as before indexes.
	_ = atomicfile.WriteWith(IndexPath(path), atomicfile.Options{Perm: 0o600, NoSync: true}, func(w io.Writer) error {
		_, err := w.Write(ix.encode())
		return err
	})
	return nil
}
