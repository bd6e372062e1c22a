// Package effects finds what a command did to a folder by comparing the task's
// copy with its base, and names each change: add, modify, delete, move, mode,
// link or type. It never traces system calls: the same comparison runs on every
// platform, and what reaches the real folder is decided by these effects alone.
package effects

import (
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"unicode/utf8"
)

// Kind names what happened to one path.
type Kind string

// The kinds of effect, as ARCHITECTURE.md §3 lists them.
const (
	Add    Kind = "add"    // a path that base did not have
	Modify Kind = "modify" // same path and type, other content
	Delete Kind = "delete" // a path that the copy no longer has
	Move   Kind = "move"   // content deleted at From reappears at Path
	Mode   Kind = "mode"   // permission bits changed, content the same
	Link   Kind = "link"   // a symlink added or its target changed
	Type   Kind = "type"   // file ↔ directory ↔ link
)

// EntryType is the type of a file system entry as Kule keeps it.
type EntryType uint8

// Entry types. Special files (devices, sockets, fifos) are never copied.
const (
	TypeNone EntryType = iota
	TypeFile
	TypeDir
	TypeLink
)

func (t EntryType) String() string {
	switch t {
	case TypeFile:
		return "file"
	case TypeDir:
		return "dir"
	case TypeLink:
		return "link"
	}
	return "none"
}

// Effect is one change a task made, relative to its base. Paths are relative to
// the folder root, slash-separated, and may hold any bytes (names need not be
// UTF-8).
type Effect struct {
	Kind Kind   `json:"kind"`
	Path string `json:"path"`           // the path as it is now (for a move: where it went)
	From string `json:"from,omitempty"` // a move's old path

	OldType EntryType   `json:"-"`
	NewType EntryType   `json:"-"`
	OldMode fs.FileMode `json:"-"`
	NewMode fs.FileMode `json:"-"`
	Size    int64       `json:"size"`             // new size (old size for a delete)
	Target  string      `json:"target,omitempty"` // a link's new target

	// Ignored is true when the folder's .gitignore excludes the path: it stays
	// in the copy and a commit leaves it unless asked to include ignored paths.
	Ignored bool `json:"ignored,omitempty"`
	// Dir is true when the effect is a whole directory added, deleted or
	// moved: one effect stands for its subtree, and Files counts the files
	// and links below it.
	Dir   bool `json:"dir,omitempty"`
	Files int  `json:"files,omitempty"`
}

// Symbol is the one-character mark a person reads in front of a path.
func (e Effect) Symbol() string {
	switch e.Kind {
	case Add:
		return "+"
	case Link:
		if e.OldType == TypeNone {
			return "+"
		}
	case Delete:
		return "-"
	case Move:
		return "»"
	}
	return "~"
}

// String renders the effect as the CLI prints it: "+ notes/new.md",
// "» a.txt → b.txt", "~ run.sh (mode 0644 → 0755)".
func (e Effect) String() string {
	p := Quote(e.Path)
	if e.Dir {
		p += "/"
	}
	switch e.Kind {
	case Move:
		from := Quote(e.From)
		if e.Dir {
			from += "/"
		}
		return fmt.Sprintf("» %s → %s", from, p)
	case Mode:
		return fmt.Sprintf("~ %s (mode %04o → %04o)", p, e.OldMode.Perm(), e.NewMode.Perm())
	case Type:
		return fmt.Sprintf("~ %s (%s → %s)", p, e.OldType, e.NewType)
	case Link:
		mark := "~"
		if e.OldType == TypeNone {
			mark = "+"
		}
		return fmt.Sprintf("%s %s → %s (link)", mark, p, Quote(e.Target))
	}
	return e.Symbol() + " " + p
}

// Quote returns a path as a person can read it on one line: unchanged when it
// is printable UTF-8 without spaces at its ends, otherwise Go-quoted so that a
// newline or a byte that is not UTF-8 shows as an escape, never as a break.
func Quote(p string) string {
	if !utf8.ValidString(p) {
		return strconv.Quote(p)
	}
	for _, r := range p {
		if !strconv.IsPrint(r) {
			return strconv.Quote(p)
		}
	}
	return p
}

// Sort orders effects by path, so every listing is stable. A directory's
// entries follow it directly ("a", "a/x", "a-b"): '/' sorts before any other
// byte.
func Sort(es []Effect) {
	sort.Slice(es, func(i, j int) bool {
		if c := ComparePaths(es[i].Path, es[j].Path); c != 0 {
			return c < 0
		}
		return es[i].Kind < es[j].Kind
	})
}

// ComparePaths orders paths as a tree listing does: by element, so that
// everything below a directory comes right after it.
func ComparePaths(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		ca, cb := a[i], b[i]
		if ca == cb {
			continue
		}
		if ca == '/' {
			return -1
		}
		if cb == '/' {
			return 1
		}
		if ca < cb {
			return -1
		}
		return 1
	}
	return len(a) - len(b)
}

// Counts are the totals the summary line shows: "+1 ~2 -0".
type Counts struct {
	Added   int `json:"added"`
	Changed int `json:"changed"`
	Deleted int `json:"deleted"`
	Moved   int `json:"moved"`
}

// Count adds up effects the way the summary line shows them: a directory
// added, deleted or moved whole counts the files below it.
func Count(es []Effect) Counts {
	var c Counts
	for _, e := range es {
		n := 1
		if e.Dir {
			n = max(e.Files, 1)
		}
		switch e.Kind {
		case Add:
			c.Added += n
		case Delete:
			c.Deleted += n
		case Move:
			c.Moved += n
		default:
			c.Changed += n
		}
	}
	return c
}

// Summary is the first line a person reads: "3 file changes: +1 ~1 -0 »1".
func Summary(es []Effect) string {
	c := Count(es)
	n := c.Added + c.Changed + c.Deleted + c.Moved
	word := "changes"
	if n == 1 {
		word = "change"
	}
	s := fmt.Sprintf("%d file %s: +%d ~%d -%d", n, word, c.Added, c.Changed, c.Deleted)
	if c.Moved > 0 {
		s += fmt.Sprintf(" »%d", c.Moved)
	}
	return s
}
