// Package homelayer gives a task's commands a home of their own, so that an
// agent running `git config --global`, adding a line to ~/.zshrc or writing
// settings under ~/.config never reaches the person's home. The layer holds
// copies of the small files at the top of the home and of ~/.config (while
// under 64 MiB); every other entry is a link to the person's own, so
// toolchains and caches are found. Credentials are not in the layer at all.
// What a task changed there waits for review: a person applies it file by
// file, and can take an apply back.
package homelayer

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/kulehq/kule/kernel/atomicfile"
	"github.com/kulehq/kule/kernel/credentials"
)

// Errors a caller can test for.
var (
	ErrPersonChanged = errors.New("your own file changed since the task was made")
	ErrNoChange      = errors.New("the task did not change that path in its home")
	ErrNothingToUndo = errors.New("no apply to take back")
)

const (
	smallFile    = 1 << 20  // top-level files up to this size are copied
	configLimit  = 64 << 20 // ~/.config is copied while under this
	snapshotFile = ".kule-home.json"
)

// Hidden are the home entries that never enter a layer: credentials and what
// no review should offer (shell histories, completion dumps).
var Hidden = append(append([]string(nil), credentials.Home...), ".kule", ".local/share/kule",
	".bash_history", ".zsh_history", ".python_history", ".lesshst", ".viminfo", ".node_repl_history",
)

func hidden(rel string) bool {
	for _, h := range Hidden {
		if rel == h || strings.HasPrefix(rel, h+"/") {
			return true
		}
	}
	return strings.HasPrefix(filepath.Base(rel), ".zcompdump")
}

// RunsAtStart reports whether a file in the home is run by shells or tools as
// they start — a change there runs code the next time the person opens a
// terminal or logs in.
func RunsAtStart(rel string) bool {
	switch rel {
	case ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zprofile",
		".zshenv", ".zlogin", ".gitconfig", ".inputrc", ".xprofile", ".xinitrc", ".vimrc", ".tmux.conf", ".npmrc":
		return true
	}
	for _, p := range []string{".config/fish/", ".config/autostart/", ".config/systemd/user/", ".config/environment.d/", ".config/git/"} {
		if strings.HasPrefix(rel, p) {
			return true
		}
	}
	return false
}

// snapshot records what each copied file held when the layer was made.
type snapshot struct {
	Home  string            `json:"home"`
	Files map[string]string `json:"files"` // rel → sha256 hex
}

// Build makes the layer at layer (an empty or missing directory) from home.
func Build(layer, home string) error {
	if err := os.MkdirAll(layer, 0o700); err != nil {
		return err
	}
	snap := snapshot{Home: home, Files: map[string]string{}}
	ents, err := os.ReadDir(home)
	if err != nil {
		return fmt.Errorf("home layer: %w", err)
	}
	for _, e := range ents {
		name := e.Name()
		if hidden(name) || name == snapshotFile {
			continue
		}
		src, dst := filepath.Join(home, name), filepath.Join(layer, name)
		info, err := os.Lstat(src)
		if err != nil {
			continue
		}
		switch {
		case name == ".config" && info.IsDir() && treeSize(src) < configLimit:
			if err := copyTree(src, dst, ".config", snap.Files); err != nil {
				return err
			}
		case info.Mode().IsRegular() && info.Size() <= smallFile:
			if err := copyFile(src, dst, info.Mode().Perm(), name, snap.Files); err != nil {
				return err
			}
		default:
			if err := os.Symlink(src, dst); err != nil {
				return err
			}
		}
	}
	b, _ := json.Marshal(snap)
	return os.WriteFile(filepath.Join(layer, snapshotFile), b, 0o600)
}

func treeSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if i, err := d.Info(); err == nil {
				n += i.Size()
			}
		}
		return nil
	})
	return n
}

func copyTree(src, dst, relRoot string, files map[string]string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		r, _ := filepath.Rel(src, p)
		rel := filepath.ToSlash(filepath.Join(relRoot, r))
		if hidden(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		target := filepath.Join(dst, r)
		info, err := os.Lstat(p)
		if err != nil {
			return nil
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(target, info.Mode().Perm()|0o700)
		case info.Mode()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return nil
			}
			return os.Symlink(l, target)
		case info.Mode().IsRegular():
			return copyFile(p, target, info.Mode().Perm(), rel, files)
		}
		return nil
	})
}

func copyFile(src, dst string, perm fs.FileMode, rel string, files map[string]string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return nil // unreadable: left out, not fatal
	}
	if err := os.WriteFile(dst, b, perm|0o600); err != nil {
		return err
	}
	files[rel] = hashOf(b)
	return nil
}

func hashOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Change is one thing a task changed in its home.
type Change struct {
	Path        string `json:"path"` // relative to the home
	Kind        string `json:"kind"` // "add", "modify", "delete"
	RunsAtStart bool   `json:"runs_at_start,omitempty"`
}

// Changes lists what the task changed in its layer.
func Changes(layer string) ([]Change, error) {
	snap, err := readSnapshot(layer)
	if err != nil {
		return nil, err
	}
	var out []Change
	seen := map[string]bool{}
	err = filepath.WalkDir(layer, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(layer, p)
		rel = filepath.ToSlash(rel)
		if rel == "." || rel == snapshotFile {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 && !strings.Contains(rel, "/") {
			if target, _ := os.Readlink(p); target == filepath.Join(snap.Home, rel) {
				return nil // the link to the person's own entry
			}
		}
		if d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		seen[rel] = true
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		old, had := snap.Files[rel]
		switch {
		case !had:
			out = append(out, Change{Path: rel, Kind: "add", RunsAtStart: RunsAtStart(rel)})
		case old != hashOf(b):
			out = append(out, Change{Path: rel, Kind: "modify", RunsAtStart: RunsAtStart(rel)})
		}
		return nil
	})
	for rel := range snap.Files {
		if !seen[rel] {
			out = append(out, Change{Path: rel, Kind: "delete", RunsAtStart: RunsAtStart(rel)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, err
}

func readSnapshot(layer string) (*snapshot, error) {
	b, err := os.ReadFile(filepath.Join(layer, snapshotFile))
	if err != nil {
		return nil, fmt.Errorf("home layer: %w (the task has no home layer yet)", err)
	}
	var s snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("home layer: %s is damaged: %w", snapshotFile, err)
	}
	if s.Files == nil {
		s.Files = map[string]string{}
	}
	return &s, nil
}

// Diff returns the person's version and the task's version of a path.
func Diff(layer, rel string) (mine, task []byte, err error) {
	snap, err := readSnapshot(layer)
	if err != nil {
		return nil, nil, err
	}
	mine, _ = os.ReadFile(filepath.Join(snap.Home, rel))
	task, _ = os.ReadFile(filepath.Join(layer, rel))
	return mine, task, nil
}

// kept is one apply, for undo: what the person's file held before.
type kept struct {
	Path    string    `json:"path"`
	Existed bool      `json:"existed"`
	Blob    string    `json:"blob,omitempty"` // file under home-kept/
	Time    time.Time `json:"time"`
}

// Apply puts the task's version of rel into the person's home, after
// checking the person's file is still what it was when the layer was made.
// What it replaces is kept in keptDir, so Undo can put it back.
func Apply(layer, keptDir, rel string) error {
	snap, err := readSnapshot(layer)
	if err != nil {
		return err
	}
	changes, err := Changes(layer)
	if err != nil {
		return err
	}
	var ch *Change
	for i := range changes {
		if changes[i].Path == rel {
			ch = &changes[i]
		}
	}
	if ch == nil {
		return fmt.Errorf("home: %s: %w", rel, ErrNoChange)
	}
	mine := filepath.Join(snap.Home, rel)
	cur, err := os.ReadFile(mine)
	existed := err == nil
	if want, had := snap.Files[rel]; (had && (!existed || hashOf(cur) != want)) || (!had && existed) {
		return fmt.Errorf("home: %s: %w; nothing was written — look at both with kule home TASK diff %s", rel, ErrPersonChanged, rel)
	}
	if err := os.MkdirAll(keptDir, 0o700); err != nil {
		return err
	}
	k := kept{Path: rel, Existed: existed, Time: time.Now().UTC()}
	if existed {
		k.Blob = hashOf(cur)
		if err := atomicfile.Write(filepath.Join(keptDir, k.Blob), cur, 0o600); err != nil {
			return err
		}
	}
	if ch.Kind == "delete" {
		err = os.Remove(mine)
	} else {
		var b []byte
		if b, err = os.ReadFile(filepath.Join(layer, rel)); err == nil {
			perm := fs.FileMode(0o644)
			if info, err := os.Stat(mine); err == nil {
				perm = info.Mode().Perm()
			}
			if err = os.MkdirAll(filepath.Dir(mine), 0o700); err == nil {
				err = atomicfile.Write(mine, b, perm)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("home: apply %s: %w", rel, err)
	}
	// The layer's record now matches what the person holds.
	if ch.Kind == "delete" {
		delete(snap.Files, rel)
	} else {
		b, _ := os.ReadFile(mine)
		snap.Files[rel] = hashOf(b)
	}
	if err := saveSnapshot(layer, snap); err != nil {
		return err
	}
	return appendKept(keptDir, k)
}

// Undo takes the last apply back.
func Undo(layer, keptDir string) (string, error) {
	log := filepath.Join(keptDir, "applied.jsonl")
	b, err := os.ReadFile(log)
	if err != nil || len(strings.TrimSpace(string(b))) == 0 {
		return "", ErrNothingToUndo
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var k kept
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &k); err != nil {
		return "", fmt.Errorf("home: %s is damaged: %w", log, err)
	}
	snap, err := readSnapshot(layer)
	if err != nil {
		return "", err
	}
	mine := filepath.Join(snap.Home, k.Path)
	if k.Existed {
		old, err := os.ReadFile(filepath.Join(keptDir, k.Blob))
		if err != nil {
			return "", err
		}
		perm := fs.FileMode(0o644)
		if info, err := os.Stat(mine); err == nil {
			perm = info.Mode().Perm()
		}
		if err := atomicfile.Write(mine, old, perm); err != nil {
			return "", err
		}
		snap.Files[k.Path] = hashOf(old)
	} else {
		if err := os.Remove(mine); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		delete(snap.Files, k.Path)
	}
	if err := saveSnapshot(layer, snap); err != nil {
		return "", err
	}
	rest := strings.Join(lines[:len(lines)-1], "\n")
	if rest != "" {
		rest += "\n"
	}
	return k.Path, atomicfile.Write(log, []byte(rest), 0o600)
}

// Discard throws the task's home changes away by making the layer anew.
func Discard(layer string) error {
	snap, err := readSnapshot(layer)
	if err != nil {
		return err
	}
	tmp := layer + ".discarding"
	if err := os.Rename(layer, tmp); err != nil {
		return err
	}
	if err := Build(layer, snap.Home); err != nil {
		_ = os.Rename(tmp, layer)
		return err
	}
	return os.RemoveAll(tmp)
}

func saveSnapshot(layer string, s *snapshot) error {
	b, _ := json.Marshal(s)
	return atomicfile.Write(filepath.Join(layer, snapshotFile), b, 0o600)
}

func appendKept(dir string, k kept) error {
	b, _ := json.Marshal(k)
	f, err := os.OpenFile(filepath.Join(dir, "applied.jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Write(append(b, '\n')); err != nil {
		return err
	}
	return f.Sync()
}
