package gitstate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// SnapshotFormat is the version of the snapshot's JSON shape.
const SnapshotFormat = 1

// Snapshot is what a repository means at one moment: the engine stores it
// in the task's base and compares the copy's repository with it.
type Snapshot struct {
	Format int `json:"format"`
	// Refs maps "HEAD" and every ref under refs/ (loose and packed unified)
	// to an object id or "ref: <target>".
	Refs map[string]string `json:"refs"`
	// Index holds the index entries: path, mode, object id, stage, and the
	// intent-to-add and skip-worktree flags. Never stat data.
	Index indexList `json:"index"`
	// Objects are the object files present.
	Objects objectSet `json:"objects"`
	// Hooks maps a hook's name to the sha256 of its content ("+x" appended
	// when executable). Sample hooks are left out: they never run.
	Hooks map[string]string `json:"hooks,omitempty"`
	// Config maps "config" and "config.worktree" to the sha256 of each.
	Config map[string]string `json:"config,omitempty"`
	// IndexSum is the sha256 of the index file Index was read from ("" for
	// none, and in snapshots made before it was kept): an index with the
	// same bytes has the same entries, so Compare need not decode it.
	IndexSum string `json:"index_sum,omitempty"`
	// IndexStat is the index file's metadata when IndexSum was taken, if it
	// had not changed for a second before (see stableStat): an index file
	// with the same metadata holds the same bytes, so Compare need not even
	// hash it (8 MB for 100,000 entries, on every status). Git rewrites
	// its index by renaming a new file over it (a new inode), and any write
	// in place moves its ctime, which no one can set back.
	IndexStat *FileStat `json:"index_stat,omitempty"`
	// Pointers holds the files of the repository that name other places
	// (alternates, worktrees/*/gitdir, config include sections; see
	// readPointers) as they were: one the task adds or changes is refused.
	Pointers map[string]string `json:"pointers,omitempty"`

	// lazy holds the index entries still encoded, as a binary base keeps
	// them: a status whose copy has the same index never needs them
	// decoded. Read them through index().
	lazy *lazyIndex
}

type lazyIndex struct {
	raw   []byte
	count int
	// In a split base (Save) the entries are read from their file first:
	// bytes off to off+n of it.
	file   *entriesFile
	off, n int
}

// bytes are the encoded entries.
func (lz *lazyIndex) bytes() ([]byte, error) {
	if lz.file == nil {
		return lz.raw, nil
	}
	body, err := lz.file.read()
	if err != nil {
		return nil, err
	}
	if lz.off+lz.n > len(body) {
		return nil, fmt.Errorf("%w: an index section lies past the entries", ErrSnapshot)
	}
	return body[lz.off : lz.off+lz.n], nil
}

// index returns the index entries, decoding them first if the snapshot
// came from a binary base.
func (s *Snapshot) index() (indexList, error) {
	if s.lazy != nil {
		raw, err := s.lazy.bytes()
		if err != nil {
			return nil, err
		}
		es, err := decodeEntries(raw, s.lazy.count)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrSnapshot, err)
		}
		s.Index, s.lazy = es, nil
	}
	return s.Index, nil
}

// MarshalJSON writes the snapshot with its index entries decoded.
func (s *Snapshot) MarshalJSON() ([]byte, error) {
	if _, err := s.index(); err != nil {
		return nil, err
	}
	type plain Snapshot
	return json.Marshal((*plain)(s))
}

// Take reads the repository at gitDir. (The engine calls it at `kule new`
// and after each commit or undo, on the copy's git directory.)
func Take(gitDir string) (*Snapshot, error) {
	l, err := openLayout(gitDir)
	if err != nil {
		return nil, err
	}
	return take(l, nil)
}

// take reads the repository; where known holds the index with the same
// bytes, its entries are reused instead of decoded.
func take(l layout, known *Snapshot) (*Snapshot, error) {
	s := &Snapshot{Format: SnapshotFormat}
	var err error
	if s.Refs, err = readRefs(l); err != nil {
		return nil, err
	}
	for name := range s.Refs {
		if !isUTF8(name) {
			return nil, fmt.Errorf("%w: ref name %q is not UTF-8", ErrUnsupported, name)
		}
	}
	same := false
	if known != nil && known.IndexSum != "" {
		if known.IndexStat != nil && statIndex(l.index()) == *known.IndexStat {
			// The same file, untouched since the base read it.
			same, s.IndexStat = true, known.IndexStat
		} else if sum, st := hashIndexFile(l.index()); sum == known.IndexSum {
			// The same bytes as the base read: the same entries. Hashed in
			// a small buffer, so an untouched 100,000-entry index costs no
			// decoding and no copy of its own.
			same, s.IndexStat = true, st
		}
	}
	if same {
		s.IndexSum, s.Index, s.lazy = known.IndexSum, known.Index, known.lazy
	} else {
		raw, st, err := readIndexBytes(l.index())
		if err != nil {
			return nil, err
		}
		s.IndexSum, s.IndexStat = indexSum(raw), st
		idx, err := decodeIndex(l.index(), raw)
		if err != nil {
			return nil, err
		}
		s.Index = entriesOf(idx)
	}
	if s.Objects, err = listObjects(l); err != nil {
		return nil, err
	}
	if s.Hooks, err = hashHooks(l); err != nil {
		return nil, err
	}
	if s.Config, err = hashConfig(l); err != nil {
		return nil, err
	}
	s.Pointers = readPointers(l)
	return s, nil
}

// DecodeSnapshot reads a snapshot stored as JSON and checks that it is
// well formed.
func DecodeSnapshot(b []byte) (*Snapshot, error) {
	var s Snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSnapshot, err)
	}
	if s.Format != SnapshotFormat {
		return nil, fmt.Errorf("%w: format %d, want %d", ErrSnapshot, s.Format, SnapshotFormat)
	}
	if _, ok := s.Refs["HEAD"]; !ok {
		return nil, fmt.Errorf("%w: no HEAD", ErrSnapshot)
	}
	for name, v := range s.Refs {
		if name != "HEAD" && !ValidRefName(name) {
			return nil, fmt.Errorf("%w: ref name %q", ErrSnapshot, name)
		}
		if _, err := ParseLooseRef([]byte(v)); err != nil || (v != strings.ToLower(v) && !strings.HasPrefix(v, symPrefix)) {
			return nil, fmt.Errorf("%w: ref %q value %q", ErrSnapshot, name, v)
		}
	}
	for _, p := range s.Objects.Packs {
		if !validPackName(p) {
			return nil, fmt.Errorf("%w: pack name %q", ErrSnapshot, p)
		}
	}
	for name, h := range s.Hooks {
		if !validHookName(name) || !validFileHash(h) {
			return nil, fmt.Errorf("%w: hook %q", ErrSnapshot, name)
		}
	}
	for name, h := range s.Config {
		if (name != "config" && name != "config.worktree") || !validFileHash(h) {
			return nil, fmt.Errorf("%w: config %q", ErrSnapshot, name)
		}
	}
	for k, v := range s.Pointers {
		if !validPointerKey(k) || strings.IndexByte(v, 0) >= 0 {
			return nil, fmt.Errorf("%w: pointer %q", ErrSnapshot, k)
		}
	}
	if s.IndexSum != "" && (len(s.IndexSum) != 64 || !isHex(s.IndexSum) || s.IndexSum != strings.ToLower(s.IndexSum)) {
		return nil, fmt.Errorf("%w: index sum %q", ErrSnapshot, s.IndexSum)
	}
	return &s, nil
}

// Encode returns the snapshot as JSON.
func (s *Snapshot) Encode() ([]byte, error) { return json.Marshal(s) }

func validHookName(n string) bool {
	return n != "" && n != "." && n != ".." && !strings.ContainsAny(n, "/\x00")
}

func validFileHash(h string) bool {
	h = strings.TrimSuffix(h, "+x")
	h = strings.TrimPrefix(h, "link:")
	return len(h) == 64 && isHex(h)
}

// fileHash is the sha256 of a file's content, "+x" when executable;
// "link:<sha256 of target>" for a symlink; "" when absent.
func fileHash(p string) (string, error) {
	st, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("gitstate: hash %s: %w", p, err)
	}
	switch {
	case st.Mode()&fs.ModeSymlink != 0:
		t, err := os.Readlink(p)
		if err != nil {
			return "", fmt.Errorf("gitstate: hash %s: %w", p, err)
		}
		sum := sha256.Sum256([]byte(t))
		return "link:" + hex.EncodeToString(sum[:]), nil
	case st.Mode().IsRegular():
		b, err := os.ReadFile(p)
		if err != nil {
			return "", fmt.Errorf("gitstate: hash %s: %w", p, err)
		}
		sum := sha256.Sum256(b)
		h := hex.EncodeToString(sum[:])
		if st.Mode()&0o111 != 0 {
			h += "+x"
		}
		return h, nil
	}
	return "", nil
}

func hashHooks(l layout) (map[string]string, error) {
	ents, err := os.ReadDir(l.hooksDir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("gitstate: read hooks: %w", err)
	}
	out := map[string]string{}
	for _, d := range ents {
		n := d.Name()
		if d.IsDir() || strings.HasSuffix(n, ".sample") || !validHookName(n) {
			continue
		}
		h, err := fileHash(filepath.Join(l.hooksDir(), n))
		if err != nil {
			return nil, err
		}
		if h != "" {
			out[n] = h
		}
	}
	return out, nil
}

// configFiles are the config files git reads from a repository, by the name
// a snapshot gives them.
func configFiles(l layout) map[string]string {
	return map[string]string{
		"config":          filepath.Join(l.CommonDir, "config"),
		"config.worktree": filepath.Join(l.GitDir, "config.worktree"),
	}
}

func hashConfig(l layout) (map[string]string, error) {
	out := map[string]string{}
	for name, p := range configFiles(l) {
		h, err := fileHash(p)
		if err != nil {
			return nil, err
		}
		if h != "" {
			out[name] = h
		}
	}
	return out, nil
}
