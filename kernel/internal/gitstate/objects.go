package gitstate

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/kulehq/kule/kernel/internal/atomicfile"
)

// objectSet is the object files a repository holds: loose object ids and
// pack names ("pack-<hex>", present when both .pack and .idx are).
type objectSet struct {
	Loose idList   `json:"loose"`
	Packs []string `json:"packs,omitempty"`
}

// idList is a sorted list of object ids; JSON holds it as base64 of the raw
// 20-byte ids, so a repository with many loose objects stays small and fast.
type idList [][20]byte

// MarshalJSON encodes the ids as one base64 string.
func (l idList) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 20*len(l))
	for _, id := range l {
		b = append(b, id[:]...)
	}
	return json.Marshal(base64.StdEncoding.EncodeToString(b))
}

// UnmarshalJSON decodes what MarshalJSON wrote.
func (l *idList) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(raw)%20 != 0 {
		return errors.New("object ids: bad encoding")
	}
	out := make(idList, len(raw)/20)
	for i := range out {
		copy(out[i][:], raw[20*i:])
		if i > 0 && bytes.Compare(out[i-1][:], out[i][:]) >= 0 {
			return errors.New("object ids: not sorted")
		}
	}
	*l = out
	return nil
}

func (l idList) has(id [20]byte) bool {
	_, ok := slices.BinarySearchFunc(l, id, func(a, b [20]byte) int { return bytes.Compare(a[:], b[:]) })
	return ok
}

// listObjects reads objects/ (loose fan-out directories and pack/). Temporary
// files, lock files, commit-graphs, multi-pack-indexes, bitmaps and the like
// are not objects.
func listObjects(l layout) (objectSet, error) {
	var set objectSet
	dir := l.objects()
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return set, nil
		}
		return set, fmt.Errorf("gitstate: list objects: %w", err)
	}
	for _, d := range ents {
		name := d.Name()
		if len(name) != 2 || !d.IsDir() || !isHex(name) {
			continue
		}
		sub, err := os.ReadDir(filepath.Join(dir, name))
		if err != nil {
			return set, fmt.Errorf("gitstate: list objects: %w", err)
		}
		for _, f := range sub {
			if len(f.Name()) != 38 || !f.Type().IsRegular() || !isHex(f.Name()) {
				continue
			}
			var id [20]byte
			if _, err := hex.Decode(id[:], []byte(strings.ToLower(name+f.Name()))); err == nil {
				set.Loose = append(set.Loose, id)
			}
		}
	}
	slices.SortFunc(set.Loose, func(a, b [20]byte) int { return bytes.Compare(a[:], b[:]) })
	set.Loose = slices.Compact(set.Loose)
	packs, err := os.ReadDir(filepath.Join(dir, "pack"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return set, fmt.Errorf("gitstate: list packs: %w", err)
	}
	have := map[string]int{}
	for _, p := range packs {
		n := p.Name()
		if !strings.HasPrefix(n, "pack-") || !p.Type().IsRegular() {
			continue
		}
		if b, ok := strings.CutSuffix(n, ".pack"); ok {
			have[b] |= 1
		} else if b, ok := strings.CutSuffix(n, ".idx"); ok {
			have[b] |= 2
		}
	}
	for b, v := range have {
		if v == 3 && validPackName(b) {
			set.Packs = append(set.Packs, b)
		}
	}
	slices.Sort(set.Packs)
	return set, nil
}

func validPackName(n string) bool {
	h, ok := strings.CutPrefix(n, "pack-")
	return ok && (len(h) == 40 || len(h) == 64) && isHex(h)
}

func isHex(s string) bool {
	for _, c := range []byte(s) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return s != ""
}

func loosePath(dir string, id string) string {
	return filepath.Join(dir, id[:2], id[2:])
}

// copyLoose copies one loose object from the copy into the folder after
// checking that its content hashes to its name, so a task cannot plant an
// object under the id of content the person will add later.
func copyLoose(srcObjects, dstObjects, id string) error {
	dst := loosePath(dstObjects, id)
	if _, err := os.Stat(dst); err == nil {
		return nil // objects are immutable: same name, same content
	}
	b, err := os.ReadFile(loosePath(srcObjects, id))
	if err != nil {
		return fmt.Errorf("gitstate: read object %s: %w", id, err)
	}
	if err := VerifyLoose(b, id); err != nil {
		return err
	}
	return writeNew(filepath.Join(dstObjects, id[:2]), id[2:], "tmp_obj_", b, 0o444)
}

// VerifyLoose checks that a loose object file (zlib of "<type> <size>\0data")
// is well formed and hashes to id.
func VerifyLoose(b []byte, id string) error {
	zr, err := zlib.NewReader(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrBadObject, id, err)
	}
	defer zr.Close()
	h := sha1.New()
	var hdr bytes.Buffer
	one := make([]byte, 1)
	for {
		if _, err := io.ReadFull(zr, one); err != nil {
			return fmt.Errorf("%w: %s: header: %v", ErrBadObject, id, err)
		}
		if one[0] == 0 {
			break
		}
		if hdr.Len() > 32 {
			return fmt.Errorf("%w: %s: header too long", ErrBadObject, id)
		}
		hdr.WriteByte(one[0])
	}
	typ, size, ok := strings.Cut(hdr.String(), " ")
	switch typ {
	case "blob", "tree", "commit", "tag":
	default:
		ok = false
	}
	var n int64
	if ok {
		_, err := fmt.Sscanf(size, "%d", &n)
		ok = err == nil && n >= 0 && fmt.Sprint(n) == size
	}
	if !ok {
		return fmt.Errorf("%w: %s: bad header %q", ErrBadObject, id, truncate(hdr.String(), 40))
	}
	h.Write(hdr.Bytes())
	h.Write([]byte{0})
	got, err := io.Copy(h, io.LimitReader(zr, n+1))
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrBadObject, id, err)
	}
	if got != n {
		return fmt.Errorf("%w: %s: size %d, header says %d", ErrBadObject, id, got, n)
	}
	if hex.EncodeToString(h.Sum(nil)) != id {
		return fmt.Errorf("%w: %s: content hashes to %x", ErrBadObject, id, h.Sum(nil))
	}
	return nil
}

// copyPack copies a pack into the folder and writes an index that Kule
// builds itself from the pack's content (never the copy's .idx), so every
// id in the folder's index is the hash of what the pack holds.
func copyPack(srcObjects, dstObjects, name string) error {
	dstDir := filepath.Join(dstObjects, "pack")
	if _, err := os.Stat(filepath.Join(dstDir, name+".idx")); err == nil {
		if _, err := os.Stat(filepath.Join(dstDir, name+".pack")); err == nil {
			return nil
		}
	}
	b, err := os.ReadFile(filepath.Join(srcObjects, "pack", name+".pack"))
	if err != nil {
		return fmt.Errorf("gitstate: read %s.pack: %w", name, err)
	}
	idx, err := indexPack(b)
	if err != nil {
		return fmt.Errorf("%w: %s.pack: %v", ErrBadObject, name, err)
	}
	if err := writeNew(dstDir, name+".pack", "tmp_pack_", b, 0o444); err != nil {
		return err
	}
	if err := writeNew(dstDir, name+".idx", "tmp_idx_", idx, 0o444); err != nil {
		// A pack without its index is garbage to git; take it back so a
		// failed commit leaves nothing of itself in the folder.
		if rerr := os.Remove(filepath.Join(dstDir, name+".pack")); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			return fmt.Errorf("%w (and %s.pack stays in %s: %v)", err, name, dstDir, rerr)
		}
		return err
	}
	return nil
}

// indexPack parses a pack (resolving deltas, checking its trailer) and
// returns a fresh .idx for it.
func indexPack(pack []byte) ([]byte, error) {
	w := new(idxfile.Writer)
	sc := packfile.NewScanner(bytes.NewReader(pack))
	p, err := packfile.NewParser(sc, w)
	if err != nil {
		return nil, err
	}
	if _, err := p.Parse(); err != nil {
		return nil, err
	}
	mi, err := w.Index()
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if _, err := idxfile.NewEncoder(&out).Encode(mi); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// dropWriteErrors, set only by a test, drops the errors of Write as this
// package once did, to show what checking them prevents.
var dropWriteErrors = false

// writeNew writes a file that must not exist yet: a temp file in dir,
// fsync, rename, fsync dir. On any error the temp file is removed and the
// name is left as it was.
func writeNew(dir, name, tmpPrefix string, b []byte, perm os.FileMode) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("gitstate: write %s: %w", name, err)
	}
	fill := func(w io.Writer) error {
		_, err := w.Write(b)
		if dropWriteErrors {
			err = nil
		}
		return err
	}
	// git's own clean-up knows the tmpPrefix names a crash leaves.
	o := atomicfile.Options{Perm: perm, TempPrefix: tmpPrefix}
	if err := atomicfile.WriteWith(filepath.Join(dir, name), o, fill); err != nil {
		return fmt.Errorf("gitstate: write %s/%s: %w", dir, name, err)
	}
	return nil
}
