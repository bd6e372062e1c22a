package gitstate

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kulehq/kule/kernel/internal/atomicfile"
)

// Base is what a task's base keeps of every repository in its folder: one
// snapshot per repository, by the repository's path in the folder. It is the
// narrow seam the file engine calls:
//
//  1. at `kule new` and after each commit or undo: TakeBase(copy), Save;
//  2. for status: LoadBase, then Compare(copy) → one Effects per repository
//     that changed, for the lines and the `git` object of status --json;
//  3. at commit: Check(folder, effs), then Apply(folder, copy, effs, opts) →
//     an UndoSet kept with the checkpoint, then TakeBase again;
//  4. at undo: RevertSet(folder, undo).
type Base struct {
	Repos []BaseRepo `json:"repos"`
}

// BaseRepo is one repository's snapshot.
type BaseRepo struct {
	Path     string    `json:"path"` // "." or the nested repository's path
	Nested   bool      `json:"nested,omitempty"`
	Snapshot *Snapshot `json:"snapshot"`
}

// TakeBase snapshots every repository Find sees under root whose git
// directory lies inside root (a git directory outside is shared with the
// folder and cannot be judged by comparing).
func TakeBase(root string) (*Base, error) {
	repos, err := Find(root)
	if err != nil {
		return nil, err
	}
	b := &Base{}
	for _, r := range repos {
		if r.Outside {
			continue
		}
		s, err := Take(r.GitDir)
		if err != nil {
			return nil, fmt.Errorf("gitstate: snapshot of %s: %w", r.Path, err)
		}
		b.Repos = append(b.Repos, BaseRepo{Path: r.Path, Nested: r.Nested, Snapshot: s})
	}
	return b, nil
}

// Save writes the base: the repositories' index entries, which are most of
// it, to a file of their own beside path (named by its checksum, written
// first), then path itself, naming that file, atomically (temp file, fsync,
// rename), and last it removes the entry files no base names any longer. A
// status whose indexes did not change reads path alone: a few kilobytes,
// where a repository of a million files has 40 MB of entries. A crash
// leaves the old base or the new one, each with its own entries file.
func (b *Base) Save(path string) error {
	entries, raw, err := b.encodeSplit()
	if err != nil {
		return fmt.Errorf("gitstate: save base: %w", err)
	}
	name := entriesName(entries)
	if err := atomicfile.Write(filepath.Join(filepath.Dir(path), name), entries, 0o600); err != nil {
		return fmt.Errorf("gitstate: save base: %w", err)
	}
	if err := atomicfile.Write(path, raw, 0o600); err != nil {
		return fmt.Errorf("gitstate: save base: %w", err)
	}
	old, _ := filepath.Glob(filepath.Join(filepath.Dir(path), entriesPrefix+"*"))
	for _, o := range old {
		if filepath.Base(o) != name {
			_ = os.Remove(o) // an older base's: none names it now
		}
	}
	return nil
}

// LoadBase reads a base saved by Save (or, for a task made by an older Kule,
// its binary form in one file, or its JSON); a missing file is an empty
// base (a folder that holds no repository). The index entries are read from
// their own file only when a comparison first needs them.
func LoadBase(path string) (*Base, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &Base{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("gitstate: load base: %w", err)
	}
	if bytes.HasPrefix(raw, []byte(splitMagic)) {
		return decodeSplit(raw, filepath.Dir(path))
	}
	if v := newerBase(raw); v != 0 {
		return nil, fmt.Errorf("%s: %w (format %c; this Kule reads up to format %c): nothing was read or changed; use that Kule, or a newer one, with this task", path, ErrTooNew, v, splitMagic[len(splitMagic)-2])
	}
	return DecodeBase(raw)
}

// newerBase returns the version digit of a base whose magic is newer than
// this Kule's ("KULEGITB3\n" and on), or 0.
func newerBase(raw []byte) byte {
	stem := splitMagic[:len(splitMagic)-2] // "KULEGITB"
	if len(raw) < len(splitMagic) || !bytes.HasPrefix(raw, []byte(stem)) || raw[len(stem)+1] != '\n' {
		return 0
	}
	if v := raw[len(stem)]; v > splitMagic[len(stem)] && v <= '9' {
		return v
	}
	return 0
}

// baseMagic starts the binary form of a base. It is not valid JSON, so a
// base written by an older Kule (JSON) is told apart by its first byte.
const baseMagic = "KULEGITB1\n"

// EncodeBase returns the base in its binary form: the magic, a JSON header
// holding everything but each snapshot's index entries and loose object ids,
// then per repository those two as compact binary (uvarint count, uvarint
// length, bytes), then a CRC-32 of all of it. A 100,000-entry index then
// costs no JSON string scanning and no base64 to load.
func (b *Base) EncodeBase() ([]byte, error) {
	head := Base{Repos: make([]BaseRepo, len(b.Repos))}
	for i, r := range b.Repos {
		s := *r.Snapshot
		s.Index, s.Objects.Loose, s.lazy = nil, nil, nil
		head.Repos[i] = BaseRepo{Path: r.Path, Nested: r.Nested, Snapshot: &s}
	}
	hj, err := json.Marshal(head)
	if err != nil {
		return nil, err
	}
	out := append([]byte(baseMagic), binary.AppendUvarint(nil, uint64(len(hj)))...)
	out = append(out, hj...)
	for _, r := range b.Repos {
		var es []byte
		var count int
		if lz := r.Snapshot.lazy; lz != nil {
			raw, err := lz.bytes()
			if err != nil {
				return nil, err
			}
			es, count = raw, lz.count
		} else {
			es, count = encodeEntries(r.Snapshot.Index), len(r.Snapshot.Index)
		}
		out = binary.AppendUvarint(out, uint64(count))
		out = binary.AppendUvarint(out, uint64(len(es)))
		out = append(out, es...)
		out = binary.AppendUvarint(out, uint64(len(r.Snapshot.Objects.Loose)))
		for _, id := range r.Snapshot.Objects.Loose {
			out = append(out, id[:]...)
		}
	}
	return binary.LittleEndian.AppendUint32(out, crc32.ChecksumIEEE(out)), nil
}

// DecodeBase reads a base (binary, or the JSON of older tasks) and checks
// every snapshot in it.
func DecodeBase(raw []byte) (*Base, error) {
	if !bytes.HasPrefix(raw, []byte(baseMagic)) {
		return decodeBaseJSON(raw)
	}
	if len(raw) < len(baseMagic)+4 {
		return nil, fmt.Errorf("%w: base too short", ErrSnapshot)
	}
	body, sum := raw[:len(raw)-4], raw[len(raw)-4:]
	if crc32.ChecksumIEEE(body) != binary.LittleEndian.Uint32(sum) {
		return nil, fmt.Errorf("%w: base checksum does not match", ErrSnapshot)
	}
	rest := body[len(baseMagic):]
	take := func() ([]byte, bool) {
		n, k := binary.Uvarint(rest)
		if k <= 0 || n > uint64(len(rest)-k) {
			return nil, false
		}
		v := rest[k : k+int(n)]
		rest = rest[k+int(n):]
		return v, true
	}
	num := func() (uint64, bool) {
		n, k := binary.Uvarint(rest)
		if k <= 0 {
			return 0, false
		}
		rest = rest[k:]
		return n, true
	}
	hj, ok := take()
	if !ok {
		return nil, fmt.Errorf("%w: base header truncated", ErrSnapshot)
	}
	b, err := decodeBaseJSON(hj)
	if err != nil {
		return nil, err
	}
	for _, r := range b.Repos {
		count, ok := num()
		if !ok || count > uint64(len(rest)) {
			return nil, fmt.Errorf("%w: repository %s: index count", ErrSnapshot, r.Path)
		}
		es, ok := take()
		if !ok {
			return nil, fmt.Errorf("%w: repository %s: index truncated", ErrSnapshot, r.Path)
		}
		if count > uint64(len(es)/22+1) {
			return nil, fmt.Errorf("%w: repository %s: index count %d", ErrSnapshot, r.Path, count)
		}
		// Decoded when first needed (the CRC above guards the bytes); a
		// status whose index did not change never needs them.
		r.Snapshot.Index, r.Snapshot.lazy = nil, &lazyIndex{raw: es, count: int(count)}
		loose, ok := num()
		if !ok || loose > uint64(len(rest)/20) {
			return nil, fmt.Errorf("%w: repository %s: object ids truncated", ErrSnapshot, r.Path)
		}
		ids := make(idList, loose)
		for i := range ids {
			copy(ids[i][:], rest[20*i:])
			if i > 0 && bytes.Compare(ids[i-1][:], ids[i][:]) >= 0 {
				return nil, fmt.Errorf("%w: repository %s: object ids not sorted", ErrSnapshot, r.Path)
			}
		}
		rest = rest[20*loose:]
		r.Snapshot.Objects.Loose = ids
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the last repository", ErrSnapshot, len(rest))
	}
	return b, nil
}

// decodeBaseJSON reads a base's JSON and checks every snapshot in it.
func decodeBaseJSON(raw []byte) (*Base, error) {
	var v struct {
		Repos []struct {
			Path     string          `json:"path"`
			Nested   bool            `json:"nested"`
			Snapshot json.RawMessage `json:"snapshot"`
		} `json:"repos"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSnapshot, err)
	}
	b := &Base{}
	for _, r := range v.Repos {
		if !validRepoPath(r.Path) {
			return nil, fmt.Errorf("%w: repository path %q", ErrSnapshot, r.Path)
		}
		s, err := DecodeSnapshot(r.Snapshot)
		if err != nil {
			return nil, fmt.Errorf("repository %s: %w", r.Path, err)
		}
		b.Repos = append(b.Repos, BaseRepo{Path: r.Path, Nested: r.Nested, Snapshot: s})
	}
	return b, nil
}

func validRepoPath(p string) bool {
	if p == "." {
		return true
	}
	return p != "" && filepath.IsLocal(p) && filepath.ToSlash(filepath.Clean(p)) == p
}

// gitDirIn resolves the repository at rel inside root.
func gitDirIn(root, rel string) (Repo, error) {
	r, ok, err := Probe(root, filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return Repo{}, err
	}
	if !ok {
		return Repo{}, fmt.Errorf("%w: %s in %s", ErrNotRepository, rel, root)
	}
	if len(r.Untrusted) > 0 {
		return Repo{}, fmt.Errorf("%w: %s in %s: %s", ErrUnsupported, rel, root, strings.Join(r.Untrusted, "; "))
	}
	if r.Outside {
		return Repo{}, fmt.Errorf("%w: %s in %s names a git directory outside", ErrUnsupported, rel, root)
	}
	return r, nil
}

// trusted resolves the copy's repository at br and checks what of its
// `.git` points elsewhere: it returns the repository, or the Effects that
// report it (gone, outside, or refused by name) instead of reading it.
func (br BaseRepo) trusted(copyRoot string) (Repo, *Effects, error) {
	r, err := gitDirIn(copyRoot, br.Path)
	if errors.Is(err, ErrNotRepository) {
		return Repo{}, &Effects{Repo: br.Path, Nested: br.Nested, Gone: true}, nil
	}
	if errors.Is(err, ErrUnsupported) {
		r, _, _ := Probe(copyRoot, filepath.Join(copyRoot, filepath.FromSlash(br.Path)))
		return Repo{}, &Effects{Repo: br.Path, Nested: br.Nested, Outside: true, Untrusted: r.Untrusted}, nil
	}
	if err != nil {
		return Repo{}, nil, err
	}
	l, err := openLayout(r.GitDir)
	if err != nil {
		return Repo{}, nil, fmt.Errorf("gitstate: compare %s: %w", br.Path, err)
	}
	abs, err := filepath.Abs(copyRoot)
	if err != nil {
		return Repo{}, nil, err
	}
	if f := pointerFindings(br.Snapshot, abs, l, br.Path); len(f) > 0 {
		return Repo{}, &Effects{Repo: br.Path, Nested: br.Nested, Outside: true, Untrusted: f}, nil
	}
	return r, nil, nil
}

// Compare compares every repository of the base with the copy and returns
// the effects of those that changed. A repository the task removed from the
// copy or made anew is reported (Gone / Made) and never applied.
func (b *Base) Compare(copyRoot string) ([]*Effects, error) {
	out, err := b.CompareRepos(copyRoot)
	if err != nil {
		return nil, err
	}
	repos, err := Find(copyRoot)
	if err != nil {
		return nil, err
	}
	return append(out, b.Made(repos)...), nil
}

// CompareRepos is Compare for the repositories the base knows, without
// looking for new ones: the engine finds those with its own walk of the
// copy (ProbeDirs, then Made) instead of walking the copy a second time.
func (b *Base) CompareRepos(copyRoot string) ([]*Effects, error) {
	var out []*Effects
	for _, br := range b.Repos {
		eff, err := br.compareCopy(copyRoot)
		if err != nil {
			return nil, err
		}
		if !eff.Empty() {
			out = append(out, eff)
		}
	}
	return out, nil
}

// compareCopy is the effects of the copy's repository at br: what refuses
// it (gone, outside, pointing elsewhere, a ref naming an object it does
// not hold) or what the task changed.
func (br BaseRepo) compareCopy(copyRoot string) (*Effects, error) {
	r, found, err := br.trusted(copyRoot)
	if err != nil || found != nil {
		return found, err
	}
	eff, err := Compare(br.Snapshot, r.GitDir, filepath.Join(copyRoot, filepath.FromSlash(br.Path)))
	if err != nil {
		return nil, fmt.Errorf("gitstate: compare %s: %w", br.Path, err)
	}
	eff.Repo, eff.Nested = br.Path, br.Nested
	if len(eff.Refs) > 0 {
		l, err := openLayout(r.GitDir)
		if err != nil {
			return nil, fmt.Errorf("gitstate: compare %s: %w", br.Path, err)
		}
		if f := missingTargets(l, eff); len(f) > 0 {
			return &Effects{Repo: br.Path, Nested: br.Nested, Outside: true, Untrusted: f}, nil
		}
	}
	return eff, nil
}

// Made lists, as Effects, the repositories of found (what Find or ProbeDirs
// saw in the copy) that the base does not know: the task made them.
func (b *Base) Made(found []Repo) []*Effects {
	var out []*Effects
	for _, r := range found {
		if b.snapshot(r.Path) == nil && (!r.Outside || len(r.Untrusted) > 0) {
			out = append(out, &Effects{Repo: r.Path, Nested: r.Nested, Made: true, Outside: r.Outside, Untrusted: r.Untrusted})
		}
	}
	return out
}

// ProbeDirs is Find for a walk done elsewhere: dirs are the directories of
// root (slash paths, "." for root) that hold a `.git` entry.
func ProbeDirs(root string, dirs []string) ([]Repo, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("gitstate: find: %w", err)
	}
	var repos []Repo
	for _, d := range dirs {
		if !validRepoPath(d) {
			continue
		}
		r, ok, err := Probe(root, filepath.Join(root, filepath.FromSlash(d)))
		if err != nil {
			return nil, fmt.Errorf("gitstate: find in %s: %w", root, err)
		}
		if ok {
			repos = append(repos, r)
		}
	}
	// In Find's order: a directory's subtree right after it.
	slices.SortFunc(repos, func(a, b Repo) int {
		if a.Path == "." || b.Path == "." {
			return strings.Compare(strings.TrimPrefix(a.Path, "."), strings.TrimPrefix(b.Path, "."))
		}
		return strings.Compare(strings.ReplaceAll(a.Path, "/", "\x00"), strings.ReplaceAll(b.Path, "/", "\x00"))
	})
	return repos, nil
}

func (b *Base) snapshot(path string) *Snapshot {
	for _, r := range b.Repos {
		if r.Path == path {
			return r.Snapshot
		}
	}
	return nil
}

// Check runs Check for each repository's effects against the folder.
func (b *Base) Check(folderRoot string, effs []*Effects) error {
	var items []string
	for _, eff := range effs {
		if eff.Gone || eff.Made || eff.Outside {
			continue
		}
		s := b.snapshot(eff.Repo)
		if s == nil {
			return fmt.Errorf("%w: no base for repository %s", ErrSnapshot, eff.Repo)
		}
		r, err := gitDirIn(folderRoot, eff.Repo)
		if err != nil {
			return fmt.Errorf("gitstate: check %s: %w", eff.Repo, err)
		}
		var ce *ConflictError
		if err := Check(s, r.GitDir, eff); errors.As(err, &ce) {
			for _, it := range ce.Items {
				if eff.Repo != "." {
					it = eff.Repo + ": " + it
				}
				items = append(items, it)
			}
		} else if err != nil {
			return err
		}
	}
	if len(items) > 0 {
		return &ConflictError{Op: "check", Items: items}
	}
	return nil
}

// UndoSet is one Undo per repository a commit changed.
type UndoSet struct {
	Repos []RepoUndo `json:"repos,omitempty"`
}

// RepoUndo is the undo of one repository.
type RepoUndo struct {
	Path string `json:"path"`
	Undo *Undo  `json:"undo"`
}

// Apply applies each repository's effects to the folder. On an error the
// UndoSet returned holds what was already applied, so the caller can revert.
func (b *Base) Apply(folderRoot, copyRoot string, effs []*Effects, opts ApplyOptions) (*UndoSet, error) {
	set := &UndoSet{}
	for _, eff := range effs {
		if eff.Gone || eff.Made || eff.Outside {
			continue
		}
		s := b.snapshot(eff.Repo)
		if s == nil {
			return set, fmt.Errorf("%w: no base for repository %s", ErrSnapshot, eff.Repo)
		}
		fr, err := gitDirIn(folderRoot, eff.Repo)
		if err != nil {
			return set, fmt.Errorf("gitstate: apply %s: %w", eff.Repo, err)
		}
		cr, err := gitDirIn(copyRoot, eff.Repo)
		if err != nil {
			return set, fmt.Errorf("gitstate: apply %s: %w", eff.Repo, err)
		}
		u, err := Apply(s, fr.GitDir, cr.GitDir, eff, opts)
		if u != nil {
			set.Repos = append(set.Repos, RepoUndo{Path: eff.Repo, Undo: u})
		}
		if err != nil {
			return set, fmt.Errorf("gitstate: apply %s: %w", eff.Repo, err)
		}
	}
	return set, nil
}

// RevertSet reverts every repository of an UndoSet, newest last applied
// first. It checks all of them before changing any.
func RevertSet(folderRoot string, set *UndoSet) error {
	repos := slices.Clone(set.Repos)
	slices.Reverse(repos)
	for _, ru := range repos {
		if !validRepoPath(ru.Path) || ru.Undo == nil {
			return fmt.Errorf("%w: undo of repository %q", ErrMalformed, ru.Path)
		}
		r, err := gitDirIn(folderRoot, ru.Path)
		if err != nil {
			return fmt.Errorf("gitstate: revert %s: %w", ru.Path, err)
		}
		if err := Revert(r.GitDir, ru.Undo); err != nil {
			return fmt.Errorf("gitstate: revert %s: %w", ru.Path, err)
		}
	}
	return nil
}

// After is the base to keep once a commit applied effs with opts: the
// copy's repositories as they are now, except that config and hook changes
// a person did not approve keep their old value, so they stay pending (and
// reported) rather than vanish from status unapplied.
func (b *Base) After(copyRoot string, opts ApplyOptions) (*Base, error) {
	nb, err := TakeBase(copyRoot)
	if err != nil {
		return nil, err
	}
	// A repository whose `.git` now points elsewhere was not applied: it
	// keeps its old snapshot, so it stays reported (and a pointer the task
	// added never becomes part of the base).
	for _, br := range b.Repos {
		found, err := br.compareCopy(copyRoot)
		if err != nil || found == nil || !found.Outside {
			continue
		}
		i := slices.IndexFunc(nb.Repos, func(r BaseRepo) bool { return r.Path == br.Path })
		if i >= 0 {
			nb.Repos[i] = br
		} else {
			nb.Repos = append(nb.Repos, br)
		}
	}
	for i := range nb.Repos {
		old := b.snapshot(nb.Repos[i].Path)
		if old == nil || old == nb.Repos[i].Snapshot {
			continue
		}
		if !opts.Hooks {
			nb.Repos[i].Snapshot.Hooks = old.Hooks
		}
		if !opts.Config {
			nb.Repos[i].Snapshot.Config = old.Config
		}
	}
	return nb, nil
}
