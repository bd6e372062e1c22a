package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	_ "image/gif" // DecodeConfig for GIF
	_ "image/jpeg"
	_ "image/png"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	_ "golang.org/x/image/webp" // DecodeConfig for WebP

	"github.com/kulehq/kule/kernel"
)

// Picture limits: larger files or images are not shown.
const (
	MaxImageBytes  = 8 << 20
	MaxImagePixels = 40_000_000
)

var (
	errNotImage = errors.New("not a picture Kule shows")
	errPath     = errors.New("not a path inside the copy")
)

// FileEntry is one entry of a directory of the copy.
type FileEntry struct {
	Name    string `json:"name"`
	Path    string `json:"path"`
	Type    string `json:"type"` // file, dir, link, other
	Size    int64  `json:"size"`
	Target  string `json:"target,omitempty"` // a link's target, never followed
	Change  string `json:"change,omitempty"` // the effect kind at this path
	Changed bool   `json:"changed,omitempty"`
}

// openInside walks rel inside root one name at a time and refuses any
// symbolic link on the way: the Files view never follows a link or leaves
// the copy (os.Root also refuses ".." and absolute escapes).
func openInside(root *os.Root, rel string) (fs.FileInfo, error) {
	if rel == "" || rel == "." {
		return root.Lstat(".")
	}
	if err := kernel.CheckRelPath(rel); err != nil {
		return nil, fmt.Errorf("%w: %v", errPath, err)
	}
	parts := strings.Split(rel, "/")
	var fi fs.FileInfo
	var err error
	for i := range parts {
		fi, err = root.Lstat(strings.Join(parts[:i+1], "/"))
		if err != nil {
			return nil, err
		}
		if fi.Mode()&fs.ModeSymlink != 0 && i < len(parts)-1 {
			return nil, fmt.Errorf("%w: %s passes through a link", errPath, rel)
		}
	}
	return fi, nil
}

func typeOf(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "file"
	case m.IsDir():
		return "dir"
	case m&fs.ModeSymlink != 0:
		return "link"
	}
	return "other"
}

// ListDir lists one directory of the task's copy, marking changed entries and
// directories that hold changes.
func (d *Daemon) ListDir(t *kernel.Task, rel string) ([]FileEntry, error) {
	rel = strings.Trim(rel, "/")
	root, err := os.OpenRoot(t.Paths.Copy)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	fi, err := openInside(root, rel)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%w: %s is not a directory", errPath, rel)
	}
	dir := rel
	if dir == "" {
		dir = "."
	}
	f, err := root.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	changed := map[string]string{}
	if st, err := d.k.Status(context.Background(), t); err == nil {
		for _, e := range st.Effects {
			changed[e.Path] = string(e.Kind)
			for p := path.Dir(e.Path); p != "." && p != "/"; p = path.Dir(p) {
				if _, ok := changed[p+"/"]; !ok {
					changed[p+"/"] = "inside"
				}
			}
		}
	}
	out := []FileEntry{}
	for _, n := range names {
		p := n
		if rel != "" {
			p = rel + "/" + n
		}
		lf, err := root.Lstat(p)
		if err != nil {
			continue
		}
		e := FileEntry{Name: n, Path: p, Type: typeOf(lf.Mode()), Size: lf.Size()}
		if e.Type == "link" {
			e.Target, _ = root.Readlink(p)
		}
		if k, ok := changed[p]; ok {
			e.Change, e.Changed = k, true
		} else if _, ok := changed[p+"/"]; ok && e.Type == "dir" {
			e.Change, e.Changed = "inside", true
		}
		out = append(out, e)
	}
	// Deleted paths are no longer in the copy; list them so Files shows them.
	for p, k := range changed {
		if k == string(kernel.EffectDelete) && path.Dir(p) == orDot(rel) {
			out = append(out, FileEntry{Name: path.Base(p), Path: p, Type: "gone", Change: k, Changed: true})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		di, dj := out[i].Type == "dir", out[j].Type == "dir"
		if di != dj {
			return di
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

func orDot(s string) string {
	if s == "" {
		return "."
	}
	return s
}

func (d *Daemon) listFiles(w http.ResponseWriter, r *http.Request, t *kernel.Task) {
	es, err := d.ListDir(t, r.URL.Query().Get("dir"))
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, 200, es)
}

func imageExt(p string) bool {
	switch strings.ToLower(filepath.Ext(p)) {
	case ".png", ".jpg", ".jpeg", ".gif", ".webp":
		return true
	}
	return false
}

// SniffImage returns the MIME type of b when its header proves it is a PNG,
// JPEG, GIF or WebP picture within the size and pixel limits.
func SniffImage(b []byte) (string, error) {
	if len(b) > MaxImageBytes {
		return "", fmt.Errorf("%w: larger than 8 MiB", errNotImage)
	}
	var want string
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		want = "png"
	case bytes.HasPrefix(b, []byte("\xff\xd8\xff")):
		want = "jpeg"
	case bytes.HasPrefix(b, []byte("GIF87a")), bytes.HasPrefix(b, []byte("GIF89a")):
		want = "gif"
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		want = "webp"
	default:
		return "", fmt.Errorf("%w: its header is not PNG, JPEG, GIF or WebP", errNotImage)
	}
	cfg, format, err := image.DecodeConfig(bytes.NewReader(b))
	if err != nil || format != want {
		return "", fmt.Errorf("%w: its %s header does not read", errNotImage, want)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || int64(cfg.Width)*int64(cfg.Height) > MaxImagePixels {
		return "", fmt.Errorf("%w: %d×%d is over 40 megapixels", errNotImage, cfg.Width, cfg.Height)
	}
	return "image/" + want, nil
}

// readLimited reads at most MaxImageBytes+1 bytes.
func readLimited(r io.Reader) ([]byte, error) {
	return io.ReadAll(io.LimitReader(r, MaxImageBytes+1))
}

// ImageBytes returns a changed picture: side "after" from the copy, "before"
// from the task's base (or the folder, when the base keeps no content and the
// folder still holds the base's version).
func (d *Daemon) ImageBytes(t *kernel.Task, rel, side string) ([]byte, string, error) {
	if err := kernel.CheckRelPath(rel); err != nil {
		return nil, "", fmt.Errorf("%w: %v", errPath, err)
	}
	var b []byte
	switch side {
	case "after":
		root, err := os.OpenRoot(t.Paths.Copy)
		if err != nil {
			return nil, "", err
		}
		defer root.Close()
		fi, err := openInside(root, rel)
		if err != nil {
			return nil, "", err
		}
		if !fi.Mode().IsRegular() {
			return nil, "", fmt.Errorf("%w: not a regular file", errNotImage)
		}
		if fi.Size() > MaxImageBytes {
			return nil, "", fmt.Errorf("%w: larger than 8 MiB", errNotImage)
		}
		f, err := root.Open(rel)
		if err != nil {
			return nil, "", err
		}
		defer f.Close()
		if b, err = readLimited(f); err != nil {
			return nil, "", err
		}
	case "before":
		rc, err := d.k.OpenBefore(t, rel, MaxImageBytes)
		if errors.Is(err, kernel.ErrTooLarge) {
			return nil, "", fmt.Errorf("%w: larger than 8 MiB", errNotImage)
		}
		if err != nil {
			return nil, "", err
		}
		defer rc.Close()
		if b, err = readLimited(rc); err != nil {
			return nil, "", err
		}
	default:
		return nil, "", fmt.Errorf("%w: side must be before or after", errBadRequest)
	}
	typ, err := SniffImage(b)
	if err != nil {
		return nil, "", err
	}
	return b, typ, nil
}

func (d *Daemon) serveImage(w http.ResponseWriter, r *http.Request, t *kernel.Task) {
	b, typ, err := d.ImageBytes(t, r.URL.Query().Get("path"), r.URL.Query().Get("side"))
	if err != nil {
		fail(w, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", typ)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("Cache-Control", "no-store")
	w.Write(b)
}
