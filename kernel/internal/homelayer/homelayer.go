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

	"github.com/kulehq/kule/kernel/internal/atomicfile"
	"github.com/kulehq/kule/kernel/internal/beneath"
	"github.com/kulehq/kule/kernel/internal/credentials"
)

// Errors a caller can test for.
var (
	ErrPersonChanged = errors.New("your own file changed since the task was made")
	ErrNoChange      = errors.New("the task did not change that path in its home")
	ErrNothingToUndo = errors.New("no apply to take back")
)

const (
	smallFile   = 1 << 20  // top-level files up to this size are copied
	configLimit = 64 << 20 // ~/.config is copied while under this
)

// Layer is a task's home layer: the directory its commands see as their
// home, and the record of it, which must lie outside anything a task can
// write (the task's own directory beside the layer, which the sandbox never
// exposes).
type Layer struct {
	Dir    string // the layer; written by the task's commands
	Record string // what Kule remembers of it: the home it came from, what each file held
}

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

// Build makes the layer at l.Dir (an empty or missing directory) from home,
// and writes its record.
func Build(l Layer, home string) error {
	if err := os.MkdirAll(l.Dir, 0o700); err != nil {
		return err
	}
	root, err := beneath.Open(l.Dir)
	if err != nil {
		return fmt.Errorf("home layer: %w", err)
	}
	defer root.Close()
	snap := snapshot{Home: home, Files: map[string]string{}}
	ents, err := os.ReadDir(home)
	if err != nil {
		return fmt.Errorf("home layer: %w", err)
	}
	for _, e := range ents {
		name := e.Name()
		if hidden(name) {
			continue
		}
		src := filepath.Join(home, name)
		info, err := os.Lstat(src)
		if err != nil {
			continue
		}
		switch {
		case name == ".config" && info.IsDir() && treeSize(src) < configLimit:
			if err := copyTree(src, root, ".config", snap.Files); err != nil {
				return err
			}
		case info.Mode().IsRegular() && info.Size() <= smallFile:
			if err := copyFile(src, root, name, info.Mode().Perm(), snap.Files); err != nil {
				return err
			}
		default:
			if err := root.Symlink(src, name); err != nil {
				return err
			}
		}
	}
	return saveSnapshot(l, &snap)
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

func copyTree(src string, root *beneath.Root, relRoot string, files map[string]string) error {
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
		info, err := os.Lstat(p)
		if err != nil {
			return nil
		}
		switch {
		case d.IsDir():
			if err := root.MkdirAll(rel, 0o700); err != nil {
				return err
			}
			return root.Chmod(rel, info.Mode().Perm()|0o700)
		case info.Mode()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return nil
			}
			return root.Symlink(l, rel)
		case info.Mode().IsRegular():
			return copyFile(p, root, rel, info.Mode().Perm(), files)
		}
		return nil
	})
}

func copyFile(src string, root *beneath.Root, rel string, perm fs.FileMode, files map[string]string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return nil // unreadable: left out, not fatal
	}
	f, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm|0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	files[rel] = hashOf(b)
	return nil
}

func hashOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// legacyRecord is where layers made by older versions kept their record:
// inside the layer, where the task could rewrite it.
const legacyRecord = ".kule-home.json"

// Adopt moves the record of a layer made by an older version, which kept it
// inside the layer as .kule-home.json, to l.Record. Only what each file held
// is taken from it; the home it names is not trusted (the task could have
// pointed it at ~/.ssh): home, the person's own, is recorded instead. A
// layer that has its record, or no old one, is left as it is.
func Adopt(l Layer, home string) error {
	if _, err := os.Lstat(l.Record); err == nil || filepath.Dir(l.Record) == filepath.Clean(l.Dir) {
		return nil
	}
	root, err := beneath.Open(l.Dir)
	if err != nil {
		return nil // no layer
	}
	defer root.Close()
	b, err := root.ReadFile(legacyRecord)
	if err != nil {
		return nil // none: not an older layer
	}
	var old snapshot
	if err := json.Unmarshal(b, &old); err != nil {
		old = snapshot{}
	}
	snap := snapshot{Home: home, Files: map[string]string{}}
	for rel, sum := range old.Files {
		if localPath(rel) {
			snap.Files[rel] = sum // a name that leaves the home is dropped
		}
	}
	if err := saveSnapshot(l, &snap); err != nil {
		return fmt.Errorf("home layer: keep its record beside it: %w", err)
	}
	return root.Remove(legacyRecord)
}

// Track makes the layer at l.Dir one that holds only some paths of home,
// taken out of a run one at a time (what a run changed in an agent's home
// and Kule kept aside), and records what home holds at rel now (a file, or
// every file of a folder) as what the layer's version of rel changes.
// Changes, Diff, Apply and Undo then treat rel as for any layer. A record
// naming another home is started anew.
func Track(l Layer, home, rel string) error {
	if !localPath(rel) {
		return fmt.Errorf("home layer: %q is not a path inside a home", rel)
	}
	snap, err := readSnapshot(l)
	if err != nil || snap.Home != home {
		if _, statErr := os.Stat(l.Record); err != nil && !errors.Is(statErr, fs.ErrNotExist) {
			return err // there, but unreadable or damaged: not written over
		}
		snap = &snapshot{Home: home, Files: map[string]string{}}
	}
	for f := range snap.Files {
		if f == rel || strings.HasPrefix(f, rel+"/") {
			delete(snap.Files, f)
		}
	}
	src := filepath.Join(home, filepath.FromSlash(rel))
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == src {
				return nil // home has none: the layer's version adds it
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil // a folder is walked; a link or a special file is not a version
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(home, p)
		snap.Files[filepath.ToSlash(r)] = hashOf(b)
		return nil
	})
	if err != nil {
		return fmt.Errorf("home layer: read %s: %w", src, err)
	}
	return saveSnapshot(l, snap)
}

// localPath: rel is a clean, slash-separated path inside the home.
func localPath(rel string) bool {
	return rel != "" && filepath.IsLocal(rel) && filepath.ToSlash(filepath.Clean(rel)) == rel
}

// Change is one thing a task changed in its home.
type Change struct {
	Path        string `json:"path"` // relative to the home
	Kind        string `json:"kind"` // "add", "modify", "delete"
	RunsAtStart bool   `json:"runs_at_start,omitempty"`
}

// Changes lists what the task changed in its layer.
func Changes(l Layer) ([]Change, error) {
	snap, err := readSnapshot(l)
	if err != nil {
		return nil, err
	}
	root, err := beneath.Open(l.Dir)
	if err != nil {
		return nil, fmt.Errorf("home layer: %w", err)
	}
	defer root.Close()
	var out []Change
	seen := map[string]bool{}
	err = filepath.WalkDir(l.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(l.Dir, p)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 && !strings.Contains(rel, "/") {
			if target, _ := root.Readlink(rel); target == filepath.Join(snap.Home, rel) {
				return nil // the link to the person's own entry
			}
		}
		if d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		seen[rel] = true
		b, err := root.ReadFile(rel)
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

// Ready fails where Changes would (no record, a damaged one, a directory
// that cannot be opened beneath its root) without reading the layer's
// files: a command's start needs only to know the layer is there before it
// points HOME at it, and Changes reads every file of the layer.
func Ready(l Layer) error {
	if _, err := readSnapshot(l); err != nil {
		return err
	}
	root, err := beneath.Open(l.Dir)
	if err != nil {
		return fmt.Errorf("home layer: %w", err)
	}
	return root.Close()
}

func readSnapshot(l Layer) (*snapshot, error) {
	b, err := os.ReadFile(l.Record)
	if err != nil {
		return nil, fmt.Errorf("home layer: %w (the task has no home layer yet)", err)
	}
	var s snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("home layer: %s is damaged: %w", l.Record, err)
	}
	if s.Files == nil {
		s.Files = map[string]string{}
	}
	return &s, nil
}

// HomeOf is the home the layer's record names: where Apply writes.
func HomeOf(l Layer) (string, error) {
	s, err := readSnapshot(l)
	if err != nil {
		return "", err
	}
	return s.Home, nil
}

// readLayer reads the task's version of rel, beneath the layer's root.
func readLayer(l Layer, rel string) ([]byte, error) {
	root, err := beneath.Open(l.Dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return root.ReadFile(rel)
}

// Diff returns the person's version and the task's version of a path.
func Diff(l Layer, rel string) (mine, task []byte, err error) {
	snap, err := readSnapshot(l)
	if err != nil {
		return nil, nil, err
	}
	mine, _ = os.ReadFile(filepath.Join(snap.Home, rel))
	task, _ = readLayer(l, rel)
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
func Apply(l Layer, keptDir, rel string) error {
	if !localPath(rel) {
		return fmt.Errorf("home: %q is not a path inside your home; nothing was written", rel)
	}
	snap, err := readSnapshot(l)
	if err != nil {
		return err
	}
	changes, err := Changes(l)
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
		if b, err = readLayer(l, rel); err == nil {
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
	if err := saveSnapshot(l, snap); err != nil {
		return err
	}
	return appendKept(keptDir, k)
}

// Undo takes the last apply back.
func Undo(l Layer, keptDir string) (string, error) {
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
	snap, err := readSnapshot(l)
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
	if err := saveSnapshot(l, snap); err != nil {
		return "", err
	}
	rest := strings.Join(lines[:len(lines)-1], "\n")
	if rest != "" {
		rest += "\n"
	}
	return k.Path, atomicfile.Write(log, []byte(rest), 0o600)
}

// Discard throws the task's home changes away by making the layer anew.
func Discard(l Layer) error {
	snap, err := readSnapshot(l)
	if err != nil {
		return err
	}
	tmp := l.Dir + ".discarding"
	if err := os.Rename(l.Dir, tmp); err != nil {
		return err
	}
	if err := Build(l, snap.Home); err != nil {
		_ = os.RemoveAll(l.Dir)
		_ = os.Rename(tmp, l.Dir)
		_ = saveSnapshot(l, snap)
		return err
	}
	return os.RemoveAll(tmp)
}

func saveSnapshot(l Layer, s *snapshot) error {
	b, _ := json.Marshal(s)
	return atomicfile.Write(l.Record, b, 0o600)
}

func appendKept(dir string, k kept) error {
	b, _ := json.Marshal(k)
	return atomicfile.Append(filepath.Join(dir, "applied.jsonl"), append(b, '\n'), 0o600)
}
