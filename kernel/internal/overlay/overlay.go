// Package overlay reads what a task changed from the upper layer of an
// overlayfs: the upper directory holds exactly the entries a command
// created, changed or deleted, so finding a task's changes costs a walk of
// the changes, not of the folder.
//
// How overlayfs writes the upper layer (Documentation/filesystems/
// overlayfs.rst):
//
//   - a deleted lower entry is a whiteout: a character device 0/0 (or, on
//     newer kernels, a regular file carrying the overlay.whiteout xattr);
//   - a directory that replaced a lower one (removed and made again) is
//     opaque: the overlay.opaque xattr is "y", and nothing of the lower
//     directory shows through it;
//   - a directory renamed with redirect_dir on carries overlay.redirect, the
//     path it came from (absolute from the layer's root, or a name in the
//     same parent);
//   - with metacopy on, a file whose metadata alone changed carries
//     overlay.metacopy and holds no data: its content is still the lower's;
//   - every other entry is a copy-up or a new entry: a file, link or
//     directory the command wrote, or a directory copied up only because
//     something below it changed.
//
// The xattrs are trusted.overlay.* on a mount made by the host's root and
// user.overlay.* on an unprivileged mount in a user namespace (the
// userxattr option). Both are read. An unprivileged mount has no
// redirect_dir and no metacopy: there a rename of a lower directory fails
// with EXDEV (tools such as mv then copy and delete), and a chmod copies the
// whole file up.
package overlay

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/kulehq/kule/kernel/internal/effects"
	"github.com/kulehq/kule/kernel/internal/relpath"
)

// Kind is what an entry of the upper layer says about its path.
type Kind int

// Kinds of entries in an upper layer.
const (
	// Written: the upper layer holds the entry (a new one, a changed one, or
	// a directory copied up because something below it changed). Whether it
	// differs from the lower layer is for the caller to tell, from the base.
	Written Kind = iota
	// Deleted: a whiteout; the lower entry at the path is gone.
	Deleted
	// Replaced: an opaque directory; whatever the lower layer held at and
	// below the path is gone, and the entries below it in the upper layer
	// are all there is.
	Replaced
	// MetaOnly: a metacopy file; its metadata changed, its content is the
	// lower layer's.
	MetaOnly
)

func (k Kind) String() string {
	switch k {
	case Written:
		return "written"
	case Deleted:
		return "deleted"
	case Replaced:
		return "replaced"
	case MetaOnly:
		return "meta-only"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Change is one entry of the upper layer.
type Change struct {
	Path string // relative to the layer's root, slash-separated
	Kind Kind
	Type effects.EntryType // what the upper layer holds there (TypeNone for a whiteout)
	From string            // a redirected directory: the path it was renamed from
}

// The xattr prefixes of a privileged mount and of an unprivileged one.
var prefixes = []string{"trusted.overlay.", "user.overlay."}

// Changes lists every entry of the upper layer at upper, in path order.
// It never follows a link: links are entries like any other. An entry it
// cannot read is an error, never passed over: a change left out would be a
// change not reviewed.
func Changes(upper string) ([]Change, error) {
	var out []Change
	err := filepath.WalkDir(upper, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("overlay: read the upper layer: %w", err)
		}
		if p == upper {
			return nil
		}
		rel, err := filepath.Rel(upper, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		c, err := classify(p, rel, d)
		if err != nil {
			return err
		}
		out = append(out, c)
		if c.Kind == Deleted && d.IsDir() {
			return fs.SkipDir // a whiteout is never a directory; defensive
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

func classify(p, rel string, d fs.DirEntry) (Change, error) {
	c := Change{Path: rel, Kind: Written}
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return c, &os.PathError{Op: "lstat", Path: p, Err: err}
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFCHR:
		if st.Rdev == 0 {
			c.Kind, c.Type = Deleted, effects.TypeNone
			return c, nil
		}
		return c, fmt.Errorf("overlay: %s: a device in the upper layer, which a sandboxed command cannot make", effects.Quote(rel))
	case unix.S_IFDIR:
		c.Type = effects.TypeDir
		if v, ok, err := xattr(p, "opaque"); err != nil {
			return c, err
		} else if ok && v == "y" {
			c.Kind = Replaced
		}
		if v, ok, err := xattr(p, "redirect"); err != nil {
			return c, err
		} else if ok {
			from, err := ParseRedirect(rel, v)
			if err != nil {
				return c, fmt.Errorf("overlay: %s: %w", effects.Quote(rel), err)
			}
			c.From = from
		}
	case unix.S_IFREG:
		c.Type = effects.TypeFile
		if _, ok, err := xattr(p, "whiteout"); err != nil {
			return c, err
		} else if ok && st.Size == 0 {
			c.Kind, c.Type = Deleted, effects.TypeNone
			return c, nil
		}
		if _, ok, err := xattr(p, "metacopy"); err != nil {
			return c, err
		} else if ok {
			c.Kind = MetaOnly
		}
	case unix.S_IFLNK:
		c.Type = effects.TypeLink
	default:
		return c, fmt.Errorf("overlay: %s: a %v in the upper layer (sockets and fifos are not copied)", effects.Quote(rel), d.Type())
	}
	return c, nil
}

// xattr reads overlay.<name> under either prefix, without following a link.
func xattr(p, name string) (string, bool, error) {
	buf := make([]byte, 4096)
	for _, pre := range prefixes {
		n, err := unix.Lgetxattr(p, pre+name, buf)
		if errors.Is(err, unix.ENODATA) || errors.Is(err, unix.ENOTSUP) {
			continue
		}
		if errors.Is(err, unix.ERANGE) {
			return "", false, fmt.Errorf("overlay: %s: %s%s is longer than any path", p, pre, name)
		}
		if err != nil {
			return "", false, &os.PathError{Op: "getxattr " + pre + name, Path: p, Err: err}
		}
		return string(buf[:n]), true, nil
	}
	return "", false, nil
}

// ErrBadRedirect is a redirect xattr that names no path inside the layer.
var ErrBadRedirect = errors.New("the overlay redirect names no path inside the layer")

// ParseRedirect turns the redirect xattr of the directory at dir (relative
// to the layer's root) into the path it was renamed from: an absolute value
// ("/a/b") is from the layer's root, any other is a name in dir's own
// parent. A value that would leave the layer ("..", an empty element, a
// NUL) is ErrBadRedirect: the upper layer is written by commands, and what
// it says is checked before it names a path.
func ParseRedirect(dir, value string) (string, error) {
	var from string
	if rest, ok := strings.CutPrefix(value, "/"); ok {
		from = rest
	} else {
		if strings.Contains(value, "/") {
			return "", fmt.Errorf("%w: %q", ErrBadRedirect, value)
		}
		from = relpath.Join(relpath.Dir(dir), value)
	}
	if err := relpath.Check(from); err != nil {
		return "", fmt.Errorf("%w: %q", ErrBadRedirect, value)
	}
	return from, nil
}
