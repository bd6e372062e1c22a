package agentrun

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/internal/atomicfile"
	"github.com/kulehq/kule/kernel/internal/beneath"
	"github.com/kulehq/kule/kernel/internal/task"
	"golang.org/x/sys/unix"
)

// perTaskHomes, when false, gives every task's runs of an own_home agent
// the one home Kule keeps for it, writable, as it once did (the attack
// test's knob).
var perTaskHomes = true

// readOnlyHomes, when false, leaves the instructions placed in a task's
// agent home writable during the run, as they once were (the attack
// test's knob): the run can rewrite them and read its own words back.
var readOnlyHomes = true

// A home of its own (own_home) is kept for each task:
//
//   - Dir, in the task's caches, is the run's home: its transcripts,
//     sessions and logs stay with the task, and no other task's sandbox
//     sees it (the sandbox hides every other task's folders).
//   - What the agent reads as instructions or settings (the profile's
//     read_only: AGENTS.md, settings, hooks, skills, commands, MCP
//     configuration, trusted folders) is placed in Dir by Kule before every
//     run, from the home Kule keeps for the agent (Shared, which no run
//     opens) or else the person's own home, and is read-only inside the
//     sandbox for the whole run (ReadOnly). After the run, one the run
//     changed anyway (a part the agent writes itself, a sandbox that
//     cannot make it read-only) is taken out of Dir and kept in the task
//     for the person to review and apply to Shared: no later run, in this
//     task or another, reads it until they do.
//   - Its login (the profile's login) is placed the same way and taken out
//     after the run; a login the run renewed or made goes back where it
//     came from (Shared when it came from nowhere), unless that changed
//     meanwhile.
const (
	taskHomesDir = "agent-homes" // in the task's caches
	maxHomeFile  = 16 << 20      // what is placed or kept of one file
)

// agentHome is an own_home agent's home for one run.
type agentHome struct {
	Dir     string // the run's home
	Shared  string // the home Kule keeps for the agent
	Changes string // where what a run changed is kept for the person (kernel.AgentChangeLayer)
	task    *task.Task
	placed  map[string]string
	self    []string // self_written, in Dir
	// ReadOnly are the placed instructions (absolute, in Dir) the sandbox
	// keeps read-only for the run: every read_only entry but those that
	// hold or lie in a self_written one, which the agent writes itself.
	ReadOnly []string
	logins   []placedLogin
}

type placedLogin struct {
	rel    string // in Dir
	origin string // the file it came from ("" when none)
	sum    string // what was placed ("" for nothing)
}

// ownHome prepares the agent's home for the run (see agentHome):
// packagesRoot tells where the homes Kule keeps lie by default.
func (r *Run) ownHome(packagesRoot string) (*agentHome, error) {
	if r.o.Trial != nil {
		// A trial's home is an empty folder in its task, gone with it.
		dir := filepath.Join(r.Task.Paths.Dir, "cache", taskHomesDir, r.Profile.Name)
		td, err := beneath.Open(r.Task.Paths.Dir)
		if err != nil {
			return nil, fmt.Errorf("run: %w", err)
		}
		defer td.Close()
		if err := td.MkdirAll(path.Join("cache", taskHomesDir, r.Profile.Name), 0o700); err != nil {
			return nil, fmt.Errorf("run: the trial's home: %w (nothing was started)", err)
		}
		return &agentHome{Dir: dir}, nil
	}
	root := r.o.HomesRoot
	if root == "" {
		root = filepath.Join(filepath.Dir(packagesRoot), "agent-homes")
	}
	shared := filepath.Join(root, r.Profile.Name)
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	// One kept in Kule's home by earlier versions (which the sandbox
	// hides) is moved beside the packages.
	old := filepath.Join(r.k.Store().Root, "agent-homes", r.Profile.Name)
	if _, err := os.Stat(shared); errors.Is(err, os.ErrNotExist) {
		if _, err := os.Stat(old); err == nil {
			if err := os.Rename(old, shared); err != nil {
				return nil, fmt.Errorf("run: move %s's home from %s to %s: %w (nothing was started)", r.Profile.Name, old, shared, err)
			}
		}
	}
	if err := os.MkdirAll(shared, 0o700); err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	if !perTaskHomes {
		return &agentHome{Dir: shared, Shared: shared}, nil
	}
	h := &agentHome{
		Dir:     filepath.Join(r.Task.Paths.Dir, "cache", taskHomesDir, r.Profile.Name),
		Shared:  shared,
		Changes: kernel.AgentChangeLayer(r.Task, r.Profile.Name).Dir,
		task:    r.Task,
		placed:  map[string]string{},
	}
	// The task's caches are the task's to write: made and entered beneath
	// the task's directory, never through a link a command left there.
	td, err := beneath.Open(r.Task.Paths.Dir)
	if err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	defer td.Close()
	if err := td.MkdirAll(path.Join("cache", taskHomesDir, r.Profile.Name), 0o700); err != nil {
		return nil, fmt.Errorf("run: %s's home for the task: %w (nothing was started)", r.Profile.Name, err)
	}
	dir, err := beneath.Open(h.Dir)
	if err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	defer dir.Close()
	for _, ro := range r.Profile.ReadOnly {
		rel, ok := r.Profile.OwnRel(ro)
		if !ok {
			continue
		}
		sum, err := place(dir, rel, h.source(r.o.Home, ro, rel))
		if err != nil {
			return nil, fmt.Errorf("run: %s's %s: %w (nothing was started)", r.Profile.Name, ro, err)
		}
		h.placed[rel] = sum
	}
	for _, sw := range r.Profile.SelfWritten {
		if rel, ok := r.Profile.OwnRel(sw); ok {
			h.self = append(h.self, rel)
		}
	}
	if readOnlyHomes {
		if err := h.readOnly(dir); err != nil {
			return nil, fmt.Errorf("run: %s's instructions: %w (nothing was started)", r.Profile.Name, err)
		}
	}
	for _, l := range r.Profile.Login {
		rel, ok := r.Profile.OwnRel(l)
		if !ok {
			continue
		}
		src := h.source(r.o.Home, l, rel)
		if fi, err := os.Stat(src); err != nil || !fi.Mode().IsRegular() {
			src = ""
		}
		sum, err := place(dir, rel, src)
		if err != nil {
			return nil, fmt.Errorf("run: %s's login %s: %w (nothing was started)", r.Profile.Name, l, err)
		}
		h.logins = append(h.logins, placedLogin{rel: rel, origin: src, sum: sum})
	}
	return h, nil
}

// readOnly lists what the sandbox keeps read-only in Dir for the run
// (h.ReadOnly). A read_only entry that neither the agent's kept home nor
// the person's has gets a stand-in first, as good as nothing to the agent
// (an empty folder, "{}" for JSON settings, an empty file else): a path
// must be there to be made read-only, and without one the run could make
// the file and read it back.
func (h *agentHome) readOnly(dir *beneath.Root) error {
	rels := make([]string, 0, len(h.placed))
	for rel := range h.placed {
		rels = append(rels, rel)
	}
	sort.Strings(rels)
	for _, rel := range rels {
		if h.writtenInside(rel) {
			continue
		}
		if h.placed[rel] == "" {
			sum, err := standIn(dir, rel)
			if err != nil {
				return err
			}
			h.placed[rel] = sum
		}
		h.ReadOnly = append(h.ReadOnly, filepath.Join(h.Dir, filepath.FromSlash(rel)))
	}
	return nil
}

// writtenInside reports whether rel holds, or lies in, what the agent
// writes itself as it starts (self_written): that stays writable.
func (h *agentHome) writtenInside(rel string) bool {
	for _, sw := range h.self {
		if sw == rel || strings.HasPrefix(sw, rel+"/") || strings.HasPrefix(rel, sw+"/") {
			return true
		}
	}
	return false
}

// standIn puts at rel what stands for nothing (see readOnly) and returns
// what it placed (sumAt's form).
func standIn(dir *beneath.Root, rel string) (string, error) {
	if parent := path.Dir(rel); parent != "." {
		if err := dir.MkdirAll(parent, 0o700); err != nil {
			return "", err
		}
	}
	var err error
	switch path.Ext(rel) {
	case "":
		err = dir.Mkdir(rel, 0o700)
	case ".json":
		err = dir.WriteFile(rel, []byte("{}\n"), 0o600)
	default:
		err = dir.WriteFile(rel, nil, 0o600)
	}
	if err != nil {
		return "", err
	}
	return sumAt(dir, rel)
}

// source is where what the profile names as homeRel (rel in the own home)
// comes from: the home Kule keeps for the agent, else the person's home;
// "" when neither has it.
func (h *agentHome) source(personHome, homeRel, rel string) string {
	for _, p := range []string{filepath.Join(h.Shared, filepath.FromSlash(rel)), filepath.Join(personHome, filepath.FromSlash(homeRel))} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// place puts src (a file, a folder, or nothing when "") at rel in dir,
// replacing what was there, and returns what it placed (sumAt's form).
func place(dir *beneath.Root, rel, src string) (string, error) {
	if err := dir.RemoveAll(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if src == "" {
		return sumAt(dir, rel)
	}
	// The person's own tree may be a link (a folder kept with their
	// dotfiles): what it names is placed.
	if real, err := filepath.EvalSymlinks(src); err == nil {
		src = real
	}
	if parent := path.Dir(rel); parent != "." {
		if err := dir.MkdirAll(parent, 0o700); err != nil {
			return "", err
		}
	}
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		sub, _ := filepath.Rel(src, p)
		to := path.Join(rel, filepath.ToSlash(sub))
		switch {
		case d.IsDir():
			return dir.Mkdir(to, 0o700)
		case d.Type().IsRegular():
			b, err := readCapped(p)
			if err != nil {
				return err
			}
			return dir.WriteFile(to, b, 0o600)
		}
		return nil // a link or a special file inside a folder is not placed
	})
	if err != nil {
		return "", err
	}
	return sumAt(dir, rel)
}

// readCapped reads a regular file of the person's own (their agent's
// home, Kule's shared agent home), up to maxHomeFile.
func readCapped(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readOpen(f, p)
}

// sumAt says what rel in dir holds, read beneath dir without following a
// link: "" for nothing, else a hash of its names, kinds and contents.
func sumAt(dir *beneath.Root, rel string) (string, error) {
	h := sha256.New()
	var walk func(rel string) error
	walk = func(rel string) error {
		st, err := dir.Lstat(rel)
		if err != nil {
			return err
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			names, err := dir.ReadDir(rel)
			if err != nil {
				return err
			}
			sort.Strings(names)
			fmt.Fprintf(h, "d %s\n", rel)
			for _, n := range names {
				if err := walk(path.Join(rel, n)); err != nil {
					return err
				}
			}
		case unix.S_IFREG:
			b, err := readBeneath(dir, rel)
			if err != nil {
				return err
			}
			s := sha256.Sum256(b)
			fmt.Fprintf(h, "f %s %x\n", rel, s)
		case unix.S_IFLNK:
			t, _ := dir.Readlink(rel)
			fmt.Fprintf(h, "l %s %s\n", rel, t)
		default:
			fmt.Fprintf(h, "o %s\n", rel)
		}
		return nil
	}
	if err := walk(rel); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", nil
		}
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// readBeneath reads a regular file the run may have written, up to
// maxHomeFile.
func readBeneath(dir *beneath.Root, rel string) ([]byte, error) {
	f, err := dir.OpenFile(rel, os.O_RDONLY|unix.O_NONBLOCK, 0) // never through a link (beneath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readOpen(f, rel)
}

// readOpen reads f, named name in errors, when it is a regular file of at
// most maxHomeFile.
func readOpen(f *os.File, name string) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxHomeFile {
		return nil, fmt.Errorf("%s is not a file of at most %d MiB", name, maxHomeFile>>20)
	}
	b := make([]byte, fi.Size())
	n, err := f.ReadAt(b, 0)
	if n == len(b) {
		err = nil
	}
	return b[:n], err
}

// after is run once the agent has stopped: what it changed of its
// instructions and settings is taken out of its home and kept for the
// person, its login goes back where it came from and out of the task.
// It returns what the person should read.
func (h *agentHome) after(agent string) []string {
	if h == nil || h.placed == nil {
		return nil
	}
	dir, err := beneath.Open(h.Dir)
	if err != nil {
		return []string{fmt.Sprintf("%s's home for the task could not be read after the run (%v); the next run places its instructions anew", agent, err)}
	}
	defer dir.Close()
	var notes []string
	rels := make([]string, 0, len(h.placed))
	for rel := range h.placed {
		rels = append(rels, rel)
	}
	sort.Strings(rels)
	var changed []string
	for _, rel := range rels {
		now, err := sumAt(dir, rel)
		if err == nil && now == h.placed[rel] {
			continue
		}
		if h.selfWritten(dir, rel) {
			continue
		}
		changed = append(changed, rel)
		if err := keepAside(dir, rel, filepath.Join(h.Changes, filepath.FromSlash(rel))); err != nil {
			notes = append(notes, fmt.Sprintf("%s's changed %s could not be kept for review: %v", agent, rel, err))
		} else if err := kernel.TrackAgentChange(h.task, agent, h.Shared, rel); err != nil {
			notes = append(notes, fmt.Sprintf("%s's changed %s is kept in %s but cannot be offered for review: %v", agent, rel, h.Changes, err))
		}
		if err := dir.RemoveAll(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
			notes = append(notes, fmt.Sprintf("%s's changed %s could not be taken out of its home: %v; the next run places it anew", agent, rel, err))
		}
	}
	if len(changed) > 0 {
		notes = append(notes, fmt.Sprintf("%s changed what it reads as instructions or settings in its home (%s): no later run reads that unless you apply it; kule home %s lists it, kule home %s diff %s:%s shows it, and apply takes it into the home Kule keeps for %s (%s)",
			agent, strings.Join(changed, ", "), h.task.ID, h.task.ID, agent, changed[0], agent, h.Shared))
	}
	for _, l := range h.logins {
		notes = append(notes, h.returnLogin(dir, agent, l)...)
	}
	return notes
}

// selfWritten takes out what the agent writes itself as it starts
// (self_written) inside rel, without a word, and reports whether rel is
// then as it was placed.
func (h *agentHome) selfWritten(dir *beneath.Root, rel string) bool {
	if len(h.self) == 0 {
		return false
	}
	for _, sw := range h.self {
		if sw == rel || strings.HasPrefix(sw, rel+"/") {
			_ = dir.RemoveAll(sw)
		}
	}
	now, err := sumAt(dir, rel)
	if err != nil {
		return false
	}
	if now == h.placed[rel] {
		return true
	}
	// A folder the run made only to hold what it writes itself, now empty.
	if h.placed[rel] == "" {
		if names, err := dir.ReadDir(rel); err == nil && len(names) == 0 {
			_ = dir.Remove(rel)
			return true
		}
	}
	return false
}

// returnLogin sends a login the run renewed or made back where it came
// from, and takes it out of the task's home.
func (h *agentHome) returnLogin(dir *beneath.Root, agent string, l placedLogin) []string {
	defer func() { _ = dir.RemoveAll(l.rel) }()
	now, err := sumAt(dir, l.rel)
	if err != nil || now == l.sum || now == "" {
		return nil
	}
	b, err := readBeneath(dir, l.rel)
	if err != nil {
		return []string{fmt.Sprintf("%s's login %s is not a plain file after the run (%v): not kept", agent, l.rel, err)}
	}
	to := l.origin
	if to == "" {
		to = filepath.Join(h.Shared, filepath.FromSlash(l.rel))
	} else if cur, err := readCapped(to); err == nil {
		if fileSum(l.rel, cur) != l.sum {
			return []string{fmt.Sprintf("%s's login %s changed outside Kule during the run: the run's renewed login is not kept", agent, to)}
		}
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
		return []string{fmt.Sprintf("%s's login could not be kept in %s: %v", agent, to, err)}
	}
	if err := atomicfile.Write(to, b, 0o600); err != nil {
		return []string{fmt.Sprintf("%s's login could not be kept in %s: %v", agent, to, err)}
	}
	return nil
}

// fileSum is sumAt's form for a file at rel holding b.
func fileSum(rel string, b []byte) string {
	h := sha256.New()
	s := sha256.Sum256(b)
	fmt.Fprintf(h, "f %s %x\n", rel, s)
	return hex.EncodeToString(h.Sum(nil))
}

// keepAside copies rel of dir (read beneath it, links and special files
// left out) to to, replacing what an earlier run kept there.
func keepAside(dir *beneath.Root, rel, to string) error {
	if err := os.RemoveAll(to); err != nil {
		return err
	}
	st, err := dir.Lstat(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // taken away: nothing to keep
	}
	if err != nil {
		return err
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		if err := os.MkdirAll(to, 0o700); err != nil {
			return err
		}
		names, err := dir.ReadDir(rel)
		if err != nil {
			return err
		}
		for _, n := range names {
			if err := keepAside(dir, path.Join(rel, n), filepath.Join(to, n)); err != nil {
				return err
			}
		}
	case unix.S_IFREG:
		b, err := readBeneath(dir, rel)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
			return err
		}
		return atomicfile.Write(to, b, 0o600)
	}
	return nil
}
