package extension

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	"time"
)

// The .kulext format's caps. A package over any of them is refused whole.
const (
	// MaxPackageSize is the largest .kulext file read.
	MaxPackageSize = 8 << 20
	// MaxFiles is the most files a package holds.
	MaxFiles = 512
	// MaxFileSize is the most bytes one file inflates to.
	MaxFileSize = 4 << 20
	// MaxTotalSize is the most bytes all files inflate to together.
	MaxTotalSize = 16 << 20
	// MaxPathLen is the longest path in a package.
	MaxPathLen = 200
)

// Ext is a package's file name extension.
const Ext = ".kulext"

// Package is a read .kulext: its manifest, its files by path and the sha256
// of the package's bytes, which is what a person approves.
type Package struct {
	Manifest *Manifest
	Files    map[string][]byte
	// SHA256 is the hex sha256 of the whole .kulext file.
	SHA256 string
}

// FileName is the package's canonical file name: "<id>-<version>.kulext".
func (m *Manifest) FileName() string { return m.ID + "-" + m.Version + Ext }

// CheckPath accepts a package path: slash-separated, relative, no "." or
// ".." element, no empty element, no backslash or colon, letters, digits
// and "._-" only, at most MaxPathLen bytes.
func CheckPath(p string) error {
	if p == "" || len(p) > MaxPathLen {
		return fmt.Errorf("path %q: empty or longer than %d bytes", p, MaxPathLen)
	}
	if strings.HasPrefix(p, "/") {
		return fmt.Errorf("path %q is absolute", p)
	}
	for _, el := range strings.Split(p, "/") {
		if el == "" || el == "." || el == ".." {
			return fmt.Errorf("path %q has an empty, . or .. element", p)
		}
	}
	for _, r := range p {
		ok := r == '/' || r == '.' || r == '_' || r == '-' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
		if !ok {
			return fmt.Errorf("path %q has %q (only letters, digits and . _ - /)", p, r)
		}
	}
	return nil
}

// ReadPackage reads a .kulext's bytes. It refuses, before anything runs: a
// package over MaxPackageSize, an entry that is a link, a device or
// anything but a file or folder, a path CheckPath refuses, a path named
// twice (also when only its letter case differs), more than MaxFiles
// files, a file that inflates past MaxFileSize or a package past
// MaxTotalSize (counted on the bytes inflated, not on what the zip claims),
// a method other than store or deflate, an encrypted entry, and a missing or
// refused manifest.
func ReadPackage(data []byte) (*Package, error) {
	if len(data) > MaxPackageSize {
		return nil, fmt.Errorf("%w: %d bytes, more than the %d a package may have", ErrPackage, len(data), MaxPackageSize)
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("%w: not a .kulext (zip): %v", ErrPackage, err)
	}
	if len(zr.File) > MaxFiles {
		return nil, fmt.Errorf("%w: %d entries, more than the %d allowed", ErrPackage, len(zr.File), MaxFiles)
	}
	files := map[string][]byte{}
	folded := map[string]bool{}
	var total int64
	for _, f := range zr.File {
		name := f.Name
		mode := f.Mode()
		if strings.HasSuffix(name, "/") && mode.IsDir() {
			if err := CheckPath(strings.TrimSuffix(name, "/")); err != nil {
				return nil, fmt.Errorf("%w: %v", ErrPackage, err)
			}
			continue
		}
		if mode&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("%w: %q is a link; a package holds files only", ErrPackage, name)
		}
		if !mode.IsRegular() {
			return nil, fmt.Errorf("%w: %q is not a file (%s)", ErrPackage, name, mode.Type())
		}
		if err := CheckPath(name); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrPackage, err)
		}
		if folded[strings.ToLower(name)] {
			return nil, fmt.Errorf("%w: %q is in the package twice", ErrPackage, name)
		}
		folded[strings.ToLower(name)] = true
		if f.Flags&0x1 != 0 {
			return nil, fmt.Errorf("%w: %q is encrypted", ErrPackage, name)
		}
		if f.Method != zip.Store && f.Method != zip.Deflate {
			return nil, fmt.Errorf("%w: %q uses compression method %d (store or deflate only)", ErrPackage, name, f.Method)
		}
		limit := int64(MaxFileSize)
		if name == ManifestName {
			limit = MaxManifestSize
		}
		if f.UncompressedSize64 > uint64(limit) {
			return nil, fmt.Errorf("%w: %q inflates to %d bytes, more than the %d allowed", ErrPackage, name, f.UncompressedSize64, limit)
		}
		rc, err := f.Open()
		if err != nil {
			return nil, fmt.Errorf("%w: %q: %v", ErrPackage, name, err)
		}
		b, err := io.ReadAll(io.LimitReader(rc, limit+1))
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("%w: %q: %v", ErrPackage, name, err)
		}
		if int64(len(b)) > limit {
			return nil, fmt.Errorf("%w: %q inflates past %d bytes (its header says %d): refused as a zip bomb", ErrPackage, name, limit, f.UncompressedSize64)
		}
		total += int64(len(b))
		if total > MaxTotalSize {
			return nil, fmt.Errorf("%w: the files inflate past %d bytes together: refused as a zip bomb", ErrPackage, MaxTotalSize)
		}
		files[name] = b
	}
	raw, ok := files[ManifestName]
	if !ok {
		return nil, fmt.Errorf("%w: no %s at its root", ErrPackage, ManifestName)
	}
	m, err := ParseManifest(raw)
	if err != nil {
		return nil, err
	}
	if err := checkFiles(m, files); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	return &Package{Manifest: m, Files: files, SHA256: hex.EncodeToString(sum[:])}, nil
}

// checkFiles holds a manifest to the files it names: each is in the
// package, and each theme is a valid theme.
func checkFiles(m *Manifest, files map[string][]byte) error {
	has := func(what, p string) error {
		if _, ok := files[p]; !ok {
			return fmt.Errorf("%w: %s %q is not in the package", ErrPackage, what, p)
		}
		return nil
	}
	if err := has("main", m.Main); err != nil {
		return err
	}
	for _, p := range m.Panels {
		if err := has("panel page", p.Page); err != nil {
			return err
		}
	}
	for _, a := range m.Agents {
		if err := has("agent profile", a.File); err != nil {
			return err
		}
	}
	for _, t := range m.Themes {
		if err := has("theme", t.File); err != nil {
			return err
		}
		if _, err := ParseTheme(files[t.File]); err != nil {
			return fmt.Errorf("%w (theme %q, %s)", err, t.ID, t.File)
		}
	}
	return nil
}

// Pack makes a .kulext of the extension folder dir: every file beneath it
// but hidden ones (a name starting with "."), in path order, with fixed
// times and modes so the same folder packs to the same bytes (and so the
// same sha256). A link, or a path ReadPackage would refuse, fails the pack;
// the result is read back with ReadPackage before it is returned.
func Pack(dir string) ([]byte, *Package, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrPackage, err)
	}
	defer root.Close()
	var names []string
	err = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%s is a link; a package holds files only (copy what it points to instead)", p)
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a file", p)
		}
		if err := CheckPath(p); err != nil {
			return err
		}
		names = append(names, p)
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: pack %s: %v", ErrPackage, dir, err)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	stamp := time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, n := range names {
		b, err := root.ReadFile(n)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: pack %s: %v", ErrPackage, dir, err)
		}
		h := &zip.FileHeader{Name: n, Method: zip.Deflate, Modified: stamp}
		h.SetMode(0o644)
		w, err := zw.CreateHeader(h)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %v", ErrPackage, err)
		}
		if _, err := w.Write(b); err != nil {
			return nil, nil, fmt.Errorf("%w: %v", ErrPackage, err)
		}
	}
	if err := zw.Close(); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrPackage, err)
	}
	pkg, err := ReadPackage(buf.Bytes())
	if err != nil {
		return nil, nil, fmt.Errorf("pack %s: %w", dir, err)
	}
	return buf.Bytes(), pkg, nil
}

// ThemeParts are the named parts of the app a theme may colour, as the
// app's style sheet names them (--bg, --panel, …).
var ThemeParts = []string{"bg", "panel", "panel2", "line", "text", "muted", "accent", "accent-text",
	"warn", "warn-bg", "danger", "danger-bg", "ok", "ok-bg", "ask", "ask-bg", "focus", "add", "mod", "del", "mov"}

// ThemeFile is a .kule-theme.json: a name, whether it is dark, and a colour
// for some of ThemeParts.
type ThemeFile struct {
	Name   string            `json:"name"`
	Dark   bool              `json:"dark,omitempty"`
	Colors map[string]string `json:"colors"`
}

// ParseTheme reads a .kule-theme.json strictly: an unknown key, an unknown
// part or a colour that is not "#rrggbb" is an error, so nothing but a
// colour for a named part ever reaches the app's style sheet.
func ParseTheme(data []byte) (*ThemeFile, error) {
	if len(data) > MaxManifestSize {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrTheme, len(data), MaxManifestSize)
	}
	var t ThemeFile
	if err := decodeStrict(data, &t); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTheme, err)
	}
	if t.Name == "" || len(t.Name) > 80 || !printable(t.Name) {
		return nil, fmt.Errorf("%w: name must be 1 to 80 printable characters", ErrTheme)
	}
	if len(t.Colors) == 0 {
		return nil, fmt.Errorf("%w: %q colours no part", ErrTheme, t.Name)
	}
	known := map[string]bool{}
	for _, p := range ThemeParts {
		known[p] = true
	}
	for part, c := range t.Colors {
		if !known[part] {
			return nil, fmt.Errorf("%w: %q is not a part a theme may colour (parts: %s)", ErrTheme, part, strings.Join(ThemeParts, ", "))
		}
		if !isHexColor(c) {
			return nil, fmt.Errorf("%w: %s = %q is not a colour written #rrggbb", ErrTheme, part, c)
		}
	}
	return &t, nil
}

func isHexColor(s string) bool {
	if len(s) != 7 || s[0] != '#' {
		return false
	}
	for _, c := range s[1:] {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') && (c < 'A' || c > 'F') {
			return false
		}
	}
	return true
}
