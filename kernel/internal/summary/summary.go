// Package summary keeps what a task's last status found: its counts, the
// files it changed (with the names a differ found inside them), and the
// person's own edits in the folder at those files. `kule list` shows every
// task and where tasks meet from these summaries, without walking each copy
// again; a repeated `kule status` reuses the names of files whose bytes did
// not change instead of starting a differ.
//
// A summary is a cache, never the truth: it is tied to the task's base (a
// commit, rollback, undo or sync makes it stale) and says when it was
// taken. Changes made in the copy since the last kule status or kule exec
// (say, by hand) show only at the next one. It is written without fsync; a
// damaged or missing summary is simply not there.
package summary

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/kulehq/kule/kernel/internal/atomicfile"
	"github.com/kulehq/kule/kernel/internal/effects"
	"github.com/kulehq/kule/kernel/internal/review"
	"github.com/kulehq/kule/kernel/internal/task"
)

// Format is the version of the stored shape; another version is not read.
const Format = 1

// FileName is the summary's file in the task's directory.
const FileName = "summary.json"

// Summary is what one status of a task found.
type Summary struct {
	Format int       `json:"format"`
	Time   time.Time `json:"time"`
	// Base identifies the task's base the status compared against
	// (BaseKey); a summary of another base is stale.
	Base    string         `json:"base"`
	Counts  effects.Counts `json:"counts"`
	Changes int            `json:"changes"`
	Line    string         `json:"line"` // "3 file changes: +1 ~2 -0"
	// Named is true when Files carry the names a differ found (kule
	// status); false when each file is listed whole (kule exec and kule
	// list start no differ), so meetings are by file.
	Named bool          `json:"named"`
	Files []review.File `json:"files,omitempty"`
	// ByHand is what the person changed by hand in the folder at those
	// files, as a review: where the task meets the person's edits.
	ByHand []review.File `json:"by_hand,omitempty"`
	// Names remembers the names a differ gave each file, by the file's
	// path and the bytes of both its sides (Key), so a later status can
	// reuse them; Plugins says which differs gave them (PluginsKey).
	Names   map[string]review.File `json:"names,omitempty"`
	Plugins string                 `json:"plugins,omitempty"`
}

// Path is where the task's summary is kept.
func Path(t *task.Task) string { return filepath.Join(t.Paths.Dir, FileName) }

// BaseKey identifies the task's base as it is now: the identity of its
// manifest and git snapshot files, which every sync (commit, rollback,
// undo) writes anew.
func BaseKey(t *task.Task) string {
	h := sha256.New()
	for _, p := range []string{filepath.Join(t.Paths.Base, "manifest"), filepath.Join(t.Paths.Base, "git.json")} {
		statInto(h, p)
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// PluginsKey identifies the differs that name files for a Kule home: this
// kule executable (the built-in differs are compiled in) and every file of
// the installed plugins and their approvals. Names found under another key
// are not reused.
func PluginsKey(home string) string {
	h := sha256.New()
	if exe, err := os.Executable(); err == nil {
		statInto(h, exe)
	}
	dir := filepath.Join(home, "plugins")
	statInto(h, dir)
	if ents, err := os.ReadDir(dir); err == nil {
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			statInto(h, p)
			if sub, err := os.ReadDir(p); err == nil {
				for _, s := range sub {
					statInto(h, filepath.Join(p, s.Name()))
				}
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

func statInto(h hash.Hash, p string) {
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		fmt.Fprintf(h, "%s:none;", p)
		return
	}
	fmt.Fprintf(h, "%s:%d:%d:%d:%d.%d:%d.%d:%o;", p, st.Dev, st.Ino, st.Size, st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec, st.Mode)
}

// Load reads the task's summary; nil when there is none, it cannot be
// read, or it belongs to another base.
func Load(t *task.Task) *Summary {
	raw, err := os.ReadFile(Path(t))
	if err != nil {
		return nil
	}
	s, err := Decode(raw)
	if err != nil || s.Base != BaseKey(t) {
		return nil
	}
	return s
}

// Decode reads a stored summary.
func Decode(raw []byte) (*Summary, error) {
	var s Summary
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("summary: %w", err)
	}
	if s.Format != Format {
		return nil, fmt.Errorf("summary: format %d, want %d", s.Format, Format)
	}
	return &s, nil
}

// Save writes s as the task's summary (temp file and rename, no fsync: a
// cache).
func Save(t *task.Task, s *Summary) error {
	s.Format = Format
	raw, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("summary: %w", err)
	}
	err = atomicfile.WriteWith(Path(t), atomicfile.Options{Perm: 0o600, NoSync: true}, func(w io.Writer) error {
		_, err := w.Write(raw)
		return err
	})
	if err != nil {
		return fmt.Errorf("summary: %w", err)
	}
	return nil
}

// New starts the summary of a status of t whose pending effects are es.
func New(t *task.Task, es []effects.Effect) *Summary {
	c := effects.Count(es)
	return &Summary{Format: Format, Time: time.Now().UTC(), Base: BaseKey(t), Counts: c,
		Changes: len(es), Line: effects.Summary(es)}
}

// Key is what a file's names depend on: its path, what happened to it, and
// the bytes of both sides.
func Key(c review.Change) string {
	o, n := sha256.Sum256(c.Old), sha256.Sum256(c.New)
	return fmt.Sprintf("%s\x00%s\x00%x\x00%x", c.Path, c.Op, o[:16], n[:16])
}

// Whole is the review of changes without asking any differ: every file
// changed as a whole.
func Whole(changes []review.Change) []review.File {
	var out []review.File
	for _, c := range changes {
		out = append(out, review.File{Path: c.Path, Op: c.Op, Whole: true})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// Namer reviews changes by name, reusing what an earlier summary's differs
// found for a file whose path and bytes are the same, and remembers every
// name it gives for the next summary.
type Namer struct {
	plugins string
	prev    map[string]review.File
	used    map[string]review.File
	// Computed counts the files a differ was asked about (not reused).
	Computed int
}

// NewNamer reuses prev's names if they came from the differs of plugins.
func NewNamer(prev *Summary, plugins string) *Namer {
	n := &Namer{plugins: plugins, used: map[string]review.File{}}
	if prev != nil && prev.Plugins == plugins {
		n.prev = prev.Names
	}
	return n
}

// Review is review.Compute with reuse. A file whose differ failed (it has a
// note) is not remembered, so the next status asks again.
func (n *Namer) Review(compute func([]review.Change) review.Review, changes []review.Change) review.Review {
	var r review.Review
	var todo []review.Change
	var keys []string
	for _, c := range changes {
		k := Key(c)
		if f, ok := n.prev[k]; ok {
			r.Files = append(r.Files, f)
			n.used[k] = f
			continue
		}
		todo = append(todo, c)
		keys = append(keys, k)
	}
	if len(todo) > 0 {
		n.Computed += len(todo)
		got := compute(todo)
		byPath := map[string]review.File{}
		for _, f := range got.Files {
			byPath[f.Path] = f
		}
		for i, c := range todo {
			f, ok := byPath[c.Path]
			if !ok {
				continue
			}
			r.Files = append(r.Files, f)
			if f.Note == "" {
				n.used[keys[i]] = f
			}
		}
	}
	sort.Slice(r.Files, func(i, j int) bool { return r.Files[i].Path < r.Files[j].Path })
	return r
}

// Names is what to keep in the next summary: the names given or reused.
func (n *Namer) Names() (map[string]review.File, string) { return n.used, n.plugins }

// Meets lists where a's files and b's meet (review.Meet).
func Meets(a, b []review.File) []review.Meeting {
	return review.Meet(review.Review{Files: a}, review.Review{Files: b})
}
