package gitstate

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/kulehq/kule/kernel/internal/atomicfile"
)

// A ref's value as this package keeps it: 40 lower-case hex digits for a
// direct ref, "ref: <name>" for a symbolic one.
const symPrefix = "ref: "

// readRefs reads HEAD and every ref under refs/, loose and packed unified
// (a loose ref overrides its packed line, as in git). Per-worktree refs other
// than HEAD, pseudo-refs (FETCH_HEAD, ORIG_HEAD, MERGE_HEAD…), lock files and
// logs are not refs here.
func readRefs(l layout) (map[string]string, error) {
	refs := map[string]string{}
	b, err := os.ReadFile(filepath.Join(l.CommonDir, "packed-refs"))
	switch {
	case err == nil:
		packed, err := ParsePackedRefs(b)
		if err != nil {
			return nil, fmt.Errorf("%w: %s/packed-refs: %v", ErrMalformed, l.CommonDir, err)
		}
		for k, v := range packed {
			refs[k] = v
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("gitstate: read packed-refs: %w", err)
	}
	base := filepath.Join(l.CommonDir, "refs")
	err = filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // a ref deleted while we walk
			}
			return err
		}
		if d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(l.CommonDir, p)
		name := filepath.ToSlash(rel)
		if !ValidRefName(name) {
			return nil // lock files and temporaries
		}
		b, err := os.ReadFile(p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		v, err := ParseLooseRef(b)
		if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrMalformed, p, err)
		}
		refs[name] = v
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("gitstate: read refs: %w", err)
	}
	hb, err := os.ReadFile(l.head())
	if err != nil {
		return nil, fmt.Errorf("gitstate: read HEAD: %w", err)
	}
	h, err := ParseLooseRef(hb)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrMalformed, l.head(), err)
	}
	refs["HEAD"] = h
	return refs, nil
}

// ParseLooseRef reads a loose ref file: an object id or "ref: <name>".
func ParseLooseRef(b []byte) (string, error) {
	s := strings.TrimRight(string(b), "\r\n\t ")
	if t, ok := strings.CutPrefix(s, "ref:"); ok {
		t = strings.TrimSpace(t)
		if t != "HEAD" && !ValidRefName(t) {
			return "", fmt.Errorf("bad symbolic target %q", t)
		}
		return symPrefix + t, nil
	}
	if !isHexID(s) {
		return "", fmt.Errorf("not an object id: %q", truncate(s, 60))
	}
	return strings.ToLower(s), nil
}

// ParsePackedRefs reads a packed-refs file: "<id> <name>" lines, "^<id>"
// peeled lines (skipped) and a "#" header.
func ParsePackedRefs(b []byte) (map[string]string, error) {
	refs := map[string]string{}
	for n, line := range bytes.Split(b, []byte("\n")) {
		line = bytes.TrimRight(line, "\r")
		if len(line) == 0 || line[0] == '#' || line[0] == '^' {
			continue
		}
		id, name, ok := bytes.Cut(line, []byte(" "))
		if !ok || !isHexID(string(id)) || !ValidRefName(string(name)) {
			return nil, fmt.Errorf("line %d: %q", n+1, truncate(string(line), 80))
		}
		refs[string(name)] = strings.ToLower(string(id))
	}
	return refs, nil
}

// ValidRefName tells whether name is a ref this package reads and writes:
// under refs/, each component non-empty, no "..", no control characters or
// the characters git forbids, never ending in ".lock". It is what keeps a ref
// name from naming a file outside refs/.
func ValidRefName(name string) bool {
	if !strings.HasPrefix(name, "refs/") || strings.HasSuffix(name, "/") || strings.HasSuffix(name, ".") {
		return false
	}
	if strings.Contains(name, "..") || strings.Contains(name, "@{") || strings.Contains(name, "//") {
		return false
	}
	for _, c := range []byte(name) {
		if c < 0x20 || c == 0x7f || strings.IndexByte(" ~^:?*[\\", c) >= 0 {
			return false
		}
	}
	for _, part := range strings.Split(name, "/") {
		if part == "" || part[0] == '.' || strings.HasSuffix(part, ".lock") {
			return false
		}
	}
	return true
}

func isHexID(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// lockedFile is a file being replaced under git's lock protocol: the new
// content goes to <path>.lock, created exclusively (so a running git command
// and Kule never write the same file at once), then is renamed over <path>.
type lockedFile struct {
	path string
	f    *os.File
}

func lockPath(path string) (*lockedFile, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("gitstate: lock %s: %w", path, err)
	}
	f, err := os.OpenFile(path+".lock", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("%w: %s.lock exists (a git command is running, or one crashed: remove the lock if no git runs)", ErrBusy, path)
		}
		return nil, fmt.Errorf("gitstate: lock %s: %w", path, err)
	}
	return &lockedFile{path: path, f: f}, nil
}

// write puts the new content into the lock file and fsyncs it.
func (lf *lockedFile) write(b []byte, perm os.FileMode) error {
	if _, err := lf.f.Write(b); err != nil {
		return fmt.Errorf("gitstate: write %s.lock: %w", lf.path, err)
	}
	if perm != 0 {
		if err := lf.f.Chmod(perm); err != nil {
			return fmt.Errorf("gitstate: chmod %s.lock: %w", lf.path, err)
		}
	}
	if err := lf.f.Sync(); err != nil {
		return fmt.Errorf("gitstate: fsync %s.lock: %w", lf.path, err)
	}
	return nil
}

// commit renames the lock file over the path.
func (lf *lockedFile) commit() error {
	err := lf.f.Close()
	lf.f = nil
	if err != nil {
		os.Remove(lf.path + ".lock")
		return fmt.Errorf("gitstate: close %s.lock: %w", lf.path, err)
	}
	if err := os.Rename(lf.path+".lock", lf.path); err != nil {
		os.Remove(lf.path + ".lock")
		return fmt.Errorf("gitstate: rename %s.lock: %w", lf.path, err)
	}
	return syncDir(filepath.Dir(lf.path))
}

// remove deletes the path itself, then releases the lock.
func (lf *lockedFile) remove() error {
	if err := os.Remove(lf.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("gitstate: remove %s: %w", lf.path, err)
	}
	lf.release()
	return syncDir(filepath.Dir(lf.path))
}

// release drops the lock without changing the path.
func (lf *lockedFile) release() {
	if lf.f != nil {
		lf.f.Close()
		os.Remove(lf.path + ".lock")
		lf.f = nil
	}
}

// syncDir fsyncs dir, naming it in the error.
func syncDir(dir string) error {
	if err := atomicfile.SyncDir(dir); err != nil {
		return fmt.Errorf("gitstate: fsync %s: %w", dir, err)
	}
	return nil
}

// refFile is where a ref's loose file lives.
func refFile(l layout, name string) string {
	if name == "HEAD" {
		return l.head()
	}
	return filepath.Join(l.CommonDir, filepath.FromSlash(name))
}

// withoutPacked returns packed-refs content with the named refs (and their
// peeled lines) left out, and whether anything was left out.
func withoutPacked(b []byte, drop map[string]bool) ([]byte, bool) {
	var out bytes.Buffer
	dropped, skipPeel := false, false
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		if line[0] == '^' {
			if !skipPeel {
				out.Write(line)
			}
			continue
		}
		skipPeel = false
		if line[0] != '#' {
			if _, name, ok := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte(" ")); ok && drop[string(name)] {
				dropped, skipPeel = true, true
				continue
			}
		}
		out.Write(line)
	}
	return out.Bytes(), dropped
}
