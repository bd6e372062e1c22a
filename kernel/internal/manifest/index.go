package manifest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sort"
	"strings"
)

// An Index finds entries of a manifest without decoding the whole of it:
// the manifest's entries in blocks of blockEntries, each block's first
// path, place and checksum, and the paths of the entries Kule looks for by
// name (Named). It is kept beside the manifest (IndexPath), written by Save
// after the manifest, and belongs to the one manifest whose size and
// checksum it names: a status that knows which paths changed then reads a
// few blocks, not a million entries.
type Index struct {
	Backend string
	Count   int      // entries in the manifest
	Named   []string // see isNamed
	Size    int64    // the manifest file's size
	CRC     uint32   // the manifest's own checksum (its last four bytes)
	Blocks  []block
}

type block struct {
	First    string // the path of the block's first entry
	Off, Len int64  // where its entries lie in the manifest file
	Count    int
	CRC      uint32 // of the block's bytes
}

// blockEntries is how many entries a block holds: a lookup decodes one
// block (about 28 KB), and the index of a million entries is 4,000 blocks.
const blockEntries = 256

const indexMagic = "KULEIDX1"

// ErrNoIndex is a manifest without an index that is its own: none was
// written, or it belongs to another version of the manifest, or it is
// damaged. The caller loads the whole manifest instead.
var ErrNoIndex = errors.New("the manifest has no index of its own")

// IndexPath is where the index of the manifest at path is kept.
func IndexPath(path string) string { return path + ".idx" }

// isNamed picks the entries an index lists by path: the ones Kule looks for
// by name rather than by where they are — the .gitignore files a status
// reads its rules from, and the settings files (.env, .envrc, .env.local,
// prod.env) whose secrets are masked. Every dot-name is kept, which holds
// both with room to spare, and a name ending in ".env".
func isNamed(p string) bool {
	base := p[strings.LastIndexByte(p, '/')+1:]
	return strings.HasPrefix(base, ".") || strings.HasSuffix(base, ".env")
}

func (ix *Index) encode() []byte {
	b := []byte(indexMagic)
	b = binary.LittleEndian.AppendUint64(b, uint64(ix.Size))
	b = binary.LittleEndian.AppendUint32(b, ix.CRC)
	b = appendStr(b, ix.Backend)
	b = binary.AppendUvarint(b, uint64(ix.Count))
	b = binary.AppendUvarint(b, uint64(len(ix.Blocks)))
	for _, bl := range ix.Blocks {
		b = appendStr(b, bl.First)
		b = binary.AppendUvarint(b, uint64(bl.Off))
		b = binary.AppendUvarint(b, uint64(bl.Len))
		b = binary.AppendUvarint(b, uint64(bl.Count))
		b = binary.LittleEndian.AppendUint32(b, bl.CRC)
	}
	b = binary.AppendUvarint(b, uint64(len(ix.Named)))
	for _, p := range ix.Named {
		b = appendStr(b, p)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
}

// decodeIndex reads what encode wrote; anything amiss is ErrNoIndex.
func decodeIndex(data []byte) (*Index, error) {
	bad := func(what string) (*Index, error) { return nil, fmt.Errorf("%w: %s", ErrNoIndex, what) }
	if len(data) < len(indexMagic)+16 || string(data[:len(indexMagic)]) != indexMagic {
		return bad("not an index")
	}
	body := data[:len(data)-4]
	if crc32.ChecksumIEEE(body) != binary.LittleEndian.Uint32(data[len(data)-4:]) {
		return bad("checksum does not match")
	}
	r := &byteReader{b: body[len(indexMagic):]}
	ix := &Index{Size: int64(r.u64()), CRC: r.u32(), Backend: r.str()}
	ix.Count = int(r.uv())
	n := r.uv()
	if n > uint64(len(r.b)) {
		return bad("too many blocks")
	}
	ix.Blocks = make([]block, n)
	total, end := 0, int64(0)
	for i := range ix.Blocks {
		bl := &ix.Blocks[i]
		bl.First = r.str()
		bl.Off, bl.Len, bl.Count = int64(r.uv()), int64(r.uv()), int(r.uv())
		bl.CRC = r.u32()
		if r.err != nil || bl.Count < 1 || bl.Off < end || (i > 0 && bl.First <= ix.Blocks[i-1].First) {
			return bad("blocks out of order")
		}
		total, end = total+bl.Count, bl.Off+bl.Len
	}
	if end > ix.Size-4 || total != ix.Count {
		return bad("blocks do not cover the manifest")
	}
	k := r.uv()
	if k > uint64(len(r.b)) {
		return bad("too many names")
	}
	ix.Named = make([]string, k)
	for i := range ix.Named {
		ix.Named[i] = r.str()
	}
	if r.err != nil || len(r.b) != 0 {
		return bad("truncated")
	}
	return ix, nil
}

// byteReader reads an index's fields; the first short read sets err.
type byteReader struct {
	b   []byte
	err error
}

func (r *byteReader) short() { r.err, r.b = io.ErrUnexpectedEOF, nil }

func (r *byteReader) u64() uint64 {
	if len(r.b) < 8 {
		r.short()
		return 0
	}
	v := binary.LittleEndian.Uint64(r.b)
	r.b = r.b[8:]
	return v
}

func (r *byteReader) u32() uint32 {
	if len(r.b) < 4 {
		r.short()
		return 0
	}
	v := binary.LittleEndian.Uint32(r.b)
	r.b = r.b[4:]
	return v
}

func (r *byteReader) uv() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.short()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *byteReader) str() string {
	n := r.uv()
	if n > uint64(len(r.b)) {
		r.short()
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// Indexed is a manifest read through its index: Get and Below decode the
// blocks they need, each once, and check each against its checksum.
type Indexed struct {
	ix     *Index
	f      *os.File
	blocks map[int][]Entry
}

// OpenIndexed opens the manifest at path through its index. ErrNoIndex
// says there is none that belongs to this manifest: load it whole then.
// The manifest's own checksum is not read (that would read all of it):
// each block's checksum stands for it, and the index's size and checksum
// of the whole tell the manifest it was made from.
func OpenIndexed(path string) (*Indexed, error) {
	data, err := os.ReadFile(IndexPath(path))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: none was written", ErrNoIndex)
	}
	if err != nil {
		return nil, fmt.Errorf("manifest index: %w", err)
	}
	ix, err := decodeIndex(data)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	var sum [4]byte
	fi, err := f.Stat()
	if err == nil && fi.Size() == ix.Size {
		_, err = f.ReadAt(sum[:], ix.Size-4)
	}
	if err != nil || fi.Size() != ix.Size || binary.LittleEndian.Uint32(sum[:]) != ix.CRC {
		f.Close()
		return nil, fmt.Errorf("%w: it belongs to another version of the manifest", ErrNoIndex)
	}
	return &Indexed{ix: ix, f: f, blocks: map[int][]Entry{}}, nil
}

// Close closes the manifest file.
func (x *Indexed) Close() error { return x.f.Close() }

// Backend is the manifest's backend.
func (x *Indexed) Backend() string { return x.ix.Backend }

// Named lists the paths of the entries Kule looks for by name (isNamed),
// in path order.
func (x *Indexed) Named() []string { return x.ix.Named }

// block decodes block i.
func (x *Indexed) block(i int) ([]Entry, error) {
	if es, ok := x.blocks[i]; ok {
		return es, nil
	}
	bl := x.ix.Blocks[i]
	buf := make([]byte, bl.Len)
	if _, err := x.f.ReadAt(buf, bl.Off); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	if crc32.ChecksumIEEE(buf) != bl.CRC {
		return nil, fmt.Errorf("%w: block %d's checksum does not match", ErrDamaged, i)
	}
	d := &decoder{src: &exhausted{}, crc: crc32.NewIEEE(), b: buf}
	es := make([]Entry, bl.Count)
	for k := range es {
		if err := d.entry(&es[k]); err != nil {
			return nil, err
		}
		if es[k].Path < bl.First || (k > 0 && es[k].Path <= es[k-1].Path) {
			return nil, fmt.Errorf("%w: entries out of order at %q", ErrDamaged, es[k].Path)
		}
	}
	if len(d.b) != 0 || es[0].Path != bl.First {
		return nil, fmt.Errorf("%w: block %d does not match its index", ErrDamaged, i)
	}
	x.blocks[i] = es
	return es, nil
}

// exhausted is the source of a decoder whose window holds all there is.
type exhausted struct{}

func (exhausted) Read([]byte) (int, error) { return 0, io.EOF }

// blockOf is the block that would hold path: the last whose first path is
// not after it (-1: before every entry).
func (x *Indexed) blockOf(path string) int {
	return sort.Search(len(x.ix.Blocks), func(i int) bool { return x.ix.Blocks[i].First > path }) - 1
}

// Get finds the entry at path.
func (x *Indexed) Get(path string) (*Entry, bool, error) {
	i := x.blockOf(path)
	if i < 0 {
		return nil, false, nil
	}
	es, err := x.block(i)
	if err != nil {
		return nil, false, err
	}
	m := Manifest{Entries: es}
	e, ok := m.Get(path)
	return e, ok, nil
}

// Below returns the entries strictly below dir, in path order.
func (x *Indexed) Below(dir string) ([]Entry, error) {
	prefix := dir + "/"
	var out []Entry
	for i := max(x.blockOf(prefix), 0); i < len(x.ix.Blocks); i++ {
		if i > 0 && x.ix.Blocks[i].First >= prefix && !strings.HasPrefix(x.ix.Blocks[i].First, prefix) {
			break
		}
		es, err := x.block(i)
		if err != nil {
			return nil, err
		}
		m := Manifest{Entries: es}
		out = append(out, m.Below(dir)...)
	}
	return out, nil
}

// Identity is the manifest's size and checksum, which tell this version
// of it from any other.
func (x *Indexed) Identity() (size int64, crc uint32) { return x.ix.Size, x.ix.CRC }
