package gitstate

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-git/go-git/v5/plumbing/format/index"
	"golang.org/x/sys/unix"
)

// Entry flags kept with an index entry; stat data is never kept.
const (
	flagIntentToAdd  = 1
	flagSkipWorktree = 2
)

// indexEntry is what an index entry means: path, mode, object id, stage and
// the two flags that change what the next commit records.
type indexEntry struct {
	Path  string
	Mode  uint32
	Stage uint8
	Flags uint8
	ID    [20]byte
}

func (e indexEntry) same(o indexEntry) bool {
	return e.Mode == o.Mode && e.ID == o.ID && e.Flags == o.Flags
}

func (e indexEntry) less(o indexEntry) bool {
	if e.Path != o.Path {
		return e.Path < o.Path
	}
	return e.Stage < o.Stage
}

// readIndexFile decodes an index with go-git. A missing file is an empty
// index (a repository nothing was ever added to).
func readIndexFile(path string) (*index.Index, error) {
	raw, _, err := readIndexBytes(path)
	if err != nil {
		return nil, err
	}
	return decodeIndex(path, raw)
}

// readIndexBytes reads an index file whole, with its stable metadata (see
// stableStat); a missing file is nil.
func readIndexBytes(path string) ([]byte, *FileStat, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("gitstate: read index: %w", err)
	}
	defer f.Close()
	before, _ := fstat(f)
	raw, err := io.ReadAll(f)
	if err != nil {
		return nil, nil, fmt.Errorf("gitstate: read index: %w", err)
	}
	return raw, stableStat(f, before), nil
}

// FileStat is the metadata that tells a file's bytes have not changed.
type FileStat struct {
	Dev   uint64 `json:"dev"`
	Ino   uint64 `json:"ino"`
	Size  int64  `json:"size"`
	MTime int64  `json:"mtime"` // nanoseconds
	CTime int64  `json:"ctime"`
}

func fstat(f *os.File) (FileStat, bool) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return FileStat{}, false
	}
	return fileStatOf(&st), true
}

func fileStatOf(st *unix.Stat_t) FileStat {
	return FileStat{Dev: st.Dev, Ino: st.Ino, Size: st.Size, MTime: st.Mtim.Nano(), CTime: st.Ctim.Nano()}
}

// statIndex is the index file's metadata now; the zero FileStat (which no
// stored one equals) when it cannot be had.
func statIndex(path string) FileStat {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return FileStat{}
	}
	return fileStatOf(&st)
}

// stableStat is f's metadata once its bytes were read, when it matches
// before (what it was when the reading began) and its last change lies more
// than a second back: a write after this moment then moves its ctime past
// the one kept, however coarse the clock behind ctime. Otherwise nil: the
// next comparison hashes the file.
func stableStat(f *os.File, before FileStat) *FileStat {
	after, ok := fstat(f)
	if !ok || after != before || time.Now().UnixNano()-after.CTime < int64(time.Second) {
		return nil
	}
	return &after
}

// decodeIndex decodes the bytes of an index file with go-git; nil is an
// empty index.
func decodeIndex(path string, raw []byte) (*index.Index, error) {
	if raw == nil {
		return &index.Index{Version: 2}, nil
	}
	idx := &index.Index{}
	if err := index.NewDecoder(bytes.NewReader(raw)).Decode(idx); err != nil {
		if errors.Is(err, index.ErrUnknownExtension) {
			return nil, fmt.Errorf("%w: %s has a required extension (split or sparse index)", ErrUnsupported, path)
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrMalformed, path, err)
	}
	return idx, nil
}

// hashIndexFile is indexSum of the file at path, read in a small buffer,
// and its stable metadata (see stableStat); "" when it cannot be read (the
// caller then reads it whole and says why).
func hashIndexFile(path string) (string, *FileStat) {
	f, err := os.Open(path)
	if err != nil {
		return "", nil
	}
	defer f.Close()
	before, _ := fstat(f)
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", nil
	}
	return hex.EncodeToString(h.Sum(nil)), stableStat(f, before)
}

// indexSum is the sha256 of an index file's bytes, hex; "" for no file. A
// snapshot keeps it so that Compare can tell an untouched index without
// decoding 100,000 entries.
func indexSum(raw []byte) string {
	if raw == nil {
		return ""
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

func entriesOf(idx *index.Index) []indexEntry {
	out := make([]indexEntry, len(idx.Entries))
	for i, e := range idx.Entries {
		out[i] = fromGoGit(e)
	}
	if !slices.IsSortedFunc(out, cmpEntry) {
		slices.SortFunc(out, cmpEntry)
	}
	return out
}

func cmpEntry(a, b indexEntry) int {
	if a.less(b) {
		return -1
	}
	if b.less(a) {
		return 1
	}
	return 0
}

func fromGoGit(e *index.Entry) indexEntry {
	ie := indexEntry{Path: e.Name, Mode: uint32(e.Mode), Stage: uint8(e.Stage)}
	copy(ie.ID[:], e.Hash[:])
	if e.IntentToAdd {
		ie.Flags |= flagIntentToAdd
	}
	if e.SkipWorktree {
		ie.Flags |= flagSkipWorktree
	}
	return ie
}

// indexList is the index as a snapshot keeps it. In JSON it is a count and
// a base64 blob of compact binary entries, because paths are bytes (not
// always UTF-8) and a 100k-entry index must decode fast.
type indexList []indexEntry

type indexJSON struct {
	Count   int    `json:"count"`
	Entries string `json:"entries"`
}

// MarshalJSON encodes the entries compactly.
func (l indexList) MarshalJSON() ([]byte, error) {
	return json.Marshal(indexJSON{Count: len(l), Entries: base64.StdEncoding.EncodeToString(encodeEntries(l))})
}

// UnmarshalJSON decodes what MarshalJSON wrote.
func (l *indexList) UnmarshalJSON(b []byte) error {
	var j indexJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	raw, err := base64.StdEncoding.DecodeString(j.Entries)
	if err != nil {
		return fmt.Errorf("index entries: %w", err)
	}
	es, err := decodeEntries(raw, j.Count)
	if err != nil {
		return err
	}
	*l = es
	return nil
}

// encodeEntries writes each entry as: uvarint mode, one byte stage|flags<<2,
// 20 bytes id, uvarint path length, path.
func encodeEntries(es []indexEntry) []byte {
	n := 0
	for _, e := range es {
		n += 30 + len(e.Path)
	}
	b := make([]byte, 0, n)
	for _, e := range es {
		b = binary.AppendUvarint(b, uint64(e.Mode))
		b = append(b, e.Stage&3|e.Flags<<2)
		b = append(b, e.ID[:]...)
		b = binary.AppendUvarint(b, uint64(len(e.Path)))
		b = append(b, e.Path...)
	}
	return b
}

func decodeEntries(b []byte, count int) ([]indexEntry, error) {
	if count < 0 || count > len(b)/22+1 {
		return nil, fmt.Errorf("index entries: bad count %d", count)
	}
	es := make([]indexEntry, 0, count)
	all := string(b) // every path is a substring of one copy
	for len(b) > 0 {
		mode, n := binary.Uvarint(b)
		if n <= 0 || mode > 0xffffffff {
			return nil, errors.New("index entries: bad mode")
		}
		b = b[n:]
		if len(b) < 21 {
			return nil, errors.New("index entries: truncated")
		}
		e := indexEntry{Mode: uint32(mode), Stage: b[0] & 3, Flags: b[0] >> 2}
		if e.Flags > 3 {
			return nil, errors.New("index entries: bad flags")
		}
		copy(e.ID[:], b[1:21])
		b = b[21:]
		pl, n := binary.Uvarint(b)
		if n <= 0 || pl == 0 || pl > uint64(len(b)-n) {
			return nil, errors.New("index entries: bad path length")
		}
		off := len(all) - len(b) + n
		e.Path = all[off : off+int(pl)]
		b = b[n+int(pl):]
		if len(es) > 0 && !es[len(es)-1].less(e) {
			return nil, errors.New("index entries: not sorted")
		}
		es = append(es, e)
	}
	if len(es) != count {
		return nil, fmt.Errorf("index entries: count %d, found %d", count, len(es))
	}
	return es, nil
}

// IndexChange is one index entry the task added, changed or removed.
type IndexChange struct {
	Kind    string `json:"kind"` // "add", "modify" or "delete"
	Path    string `json:"path"`
	Stage   int    `json:"stage,omitempty"`
	OldMode string `json:"old_mode,omitempty"`
	NewMode string `json:"new_mode,omitempty"`
	OldID   string `json:"old_id,omitempty"`
	NewID   string `json:"new_id,omitempty"`
	// Flags: "intent-to-add", "skip-worktree" on the new entry.
	Flags []string `json:"flags,omitempty"`
}

// MarshalJSON keeps a path that is not UTF-8 exact by sending it as base64
// in path_b64 (JSON strings cannot hold arbitrary bytes).
func (c IndexChange) MarshalJSON() ([]byte, error) {
	type plain IndexChange
	if isUTF8(c.Path) {
		return json.Marshal(plain(c))
	}
	return json.Marshal(struct {
		plain
		PathB64 string `json:"path_b64"`
	}{plain(c), base64.StdEncoding.EncodeToString([]byte(c.Path))})
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (c *IndexChange) UnmarshalJSON(b []byte) error {
	type plain IndexChange
	var v struct {
		plain
		PathB64 string `json:"path_b64"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*c = IndexChange(v.plain)
	if v.PathB64 != "" {
		p, err := base64.StdEncoding.DecodeString(v.PathB64)
		if err != nil {
			return fmt.Errorf("index change path: %w", err)
		}
		c.Path = string(p)
	}
	return nil
}

func modeString(m uint32) string { return fmt.Sprintf("%06o", m) }

func changeOf(old, new *indexEntry) IndexChange {
	var c IndexChange
	switch {
	case old == nil:
		c.Kind, c.Path, c.Stage = "add", new.Path, int(new.Stage)
	case new == nil:
		c.Kind, c.Path, c.Stage = "delete", old.Path, int(old.Stage)
	default:
		c.Kind, c.Path, c.Stage = "modify", new.Path, int(new.Stage)
	}
	if old != nil {
		c.OldMode, c.OldID = modeString(old.Mode), hex.EncodeToString(old.ID[:])
	}
	if new != nil {
		c.NewMode, c.NewID = modeString(new.Mode), hex.EncodeToString(new.ID[:])
		if new.Flags&flagIntentToAdd != 0 {
			c.Flags = append(c.Flags, "intent-to-add")
		}
		if new.Flags&flagSkipWorktree != 0 {
			c.Flags = append(c.Flags, "skip-worktree")
		}
	}
	return c
}

// newEntry is the entry a change leaves in the index (nil for a delete).
func (c IndexChange) newEntry() (*indexEntry, error) {
	if c.Kind == "delete" {
		return nil, nil
	}
	m, err := strconv.ParseUint(c.NewMode, 8, 32)
	if err != nil {
		return nil, fmt.Errorf("%w: index change %q: mode %q", ErrMalformed, c.Path, c.NewMode)
	}
	id, err := hex.DecodeString(c.NewID)
	if err != nil || len(id) != 20 || c.Stage < 0 || c.Stage > 3 {
		return nil, fmt.Errorf("%w: index change %q: id %q", ErrMalformed, c.Path, c.NewID)
	}
	e := &indexEntry{Path: c.Path, Mode: uint32(m), Stage: uint8(c.Stage)}
	copy(e.ID[:], id)
	for _, f := range c.Flags {
		switch f {
		case "intent-to-add":
			e.Flags |= flagIntentToAdd
		case "skip-worktree":
			e.Flags |= flagSkipWorktree
		}
	}
	return e, nil
}

// diffEntries walks two sorted entry lists and calls fn for each (path,
// stage) whose entry differs; a nil side is absent.
func diffEntries(old, new []indexEntry, fn func(o, n *indexEntry)) {
	i, j := 0, 0
	for i < len(old) || j < len(new) {
		switch {
		case j >= len(new) || i < len(old) && old[i].less(new[j]):
			fn(&old[i], nil)
			i++
		case i >= len(old) || new[j].less(old[i]):
			fn(nil, &new[j])
			j++
		default:
			if !old[i].same(new[j]) {
				fn(&old[i], &new[j])
			}
			i++
			j++
		}
	}
}

// byPath groups entries by path (all stages of a path together).
func byPath(es []indexEntry) map[string][]indexEntry {
	m := make(map[string][]indexEntry, len(es))
	for _, e := range es {
		m[e.Path] = append(m[e.Path], e)
	}
	return m
}

func sameEntries(a, b []indexEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Stage != b[i].Stage || !a[i].same(b[i]) {
			return false
		}
	}
	return true
}

// blobID is the id git gives content stored as a blob.
func blobID(r io.Reader, size int64) ([20]byte, error) {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", size)
	n, err := io.Copy(h, r)
	if err != nil {
		return [20]byte{}, err
	}
	if n != size {
		return [20]byte{}, fmt.Errorf("file changed while read")
	}
	var id [20]byte
	copy(id[:], h.Sum(nil))
	return id, nil
}

// ValidIndexPath tells whether p is a path git accepts in an index: no
// empty, "." or ".." component, no ".git" component in any case, no NUL,
// no leading or trailing slash. An entry outside these rules could make a
// later checkout write where it must not (into .git, or outside the folder).
func ValidIndexPath(p string) bool {
	if p == "" || strings.IndexByte(p, 0) >= 0 || strings.IndexByte(p, '\\') >= 0 {
		return false
	}
	for _, part := range strings.Split(p, "/") {
		switch {
		case part == "", part == ".", part == "..":
			return false
		case strings.EqualFold(strings.TrimRight(part, ". "), ".git"):
			return false
		}
	}
	return true
}

func isUTF8(s string) bool { return utf8.ValidString(s) }
