// Package reveal finds the projects beside a folder that its builds read:
// `replace ../x` in go.mod, `path = "../x"` in Cargo.toml, `file:../x` in
// package.json and ProjectReference in .csproj files. Kule only suggests
// them (`kule reveal`); a person opens one with `kule reveal add`.
package reveal

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
)

// Errors a caller can test for.
var (
	ErrManifest = errors.New("reveal: manifest does not parse")
)

// Suggestion is one project outside the folder that a manifest refers to.
type Suggestion struct {
	Path     string // absolute, cleaned
	Rel      string // relative to the folder ("../shared")
	Manifest string // the manifest that names it, relative to the folder
}

// skipDirs are never walked for manifests.
var skipDirs = map[string]bool{
	".git": true, "node_modules": true, "target": true, "vendor": true,
	"bin": true, "obj": true, "dist": true, "build": true, ".venv": true,
}

const maxDepth = 4

// Suggest walks folder (to a small depth) for manifests and returns the
// paths outside folder they refer to, sorted and without repeats. A manifest
// that does not parse is reported in errs and skipped; it never hides the
// others.
func Suggest(folder string) (out []Suggestion, errs []error) {
	folder = filepath.Clean(folder)
	seen := map[string]bool{}
	filepath.WalkDir(folder, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(folder, p)
		if d.IsDir() {
			if p != folder && (skipDirs[d.Name()] || strings.Count(rel, string(filepath.Separator)) >= maxDepth) {
				return filepath.SkipDir
			}
			return nil
		}
		parse := parserFor(d.Name())
		if parse == nil {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			errs = append(errs, err)
			return nil
		}
		refs, err := parse(b)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: %s: %w", ErrManifest, rel, err))
			return nil
		}
		for _, r := range refs {
			abs := filepath.Clean(filepath.Join(filepath.Dir(p), r))
			if filepath.IsAbs(r) {
				abs = filepath.Clean(r)
			}
			rf, err := filepath.Rel(folder, abs)
			if err != nil || !strings.HasPrefix(rf, "..") || seen[abs] {
				continue
			}
			seen[abs] = true
			out = append(out, Suggestion{Path: abs, Rel: rf, Manifest: rel})
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, errs
}

func parserFor(name string) func([]byte) ([]string, error) {
	switch {
	case name == "go.mod":
		return GoMod
	case name == "Cargo.toml":
		return CargoToml
	case name == "package.json":
		return PackageJSON
	case strings.HasSuffix(name, ".csproj") || strings.HasSuffix(name, ".fsproj") || strings.HasSuffix(name, ".vbproj"):
		return CSProj
	}
	return nil
}

// GoMod returns the local paths of go.mod's replace directives.
func GoMod(b []byte) ([]string, error) {
	var out []string
	inBlock := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		switch {
		case inBlock && line == ")":
			inBlock = false
			continue
		case line == "replace (":
			inBlock = true
			continue
		case strings.HasPrefix(line, "replace ") || strings.HasPrefix(line, "replace\t"):
			line = strings.TrimSpace(line[len("replace"):])
		case !inBlock:
			continue
		}
		_, target, ok := strings.Cut(line, "=>")
		if !ok {
			continue
		}
		f := strings.Fields(target)
		if len(f) == 0 {
			continue
		}
		p := strings.Trim(f[0], "\"`")
		if strings.HasPrefix(p, "./") || strings.HasPrefix(p, "../") || filepath.IsAbs(p) || p == "." || p == ".." {
			out = append(out, p)
		}
	}
	return out, sc.Err()
}

// CargoToml returns the `path` of every dependency and patch in Cargo.toml.
func CargoToml(b []byte) ([]string, error) {
	var doc map[string]any
	if err := toml.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	var out []string
	var walk func(v any, inDeps bool)
	walk = func(v any, inDeps bool) {
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		if inDeps {
			if p, ok := m["path"].(string); ok && p != "" {
				out = append(out, p)
			}
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			walk(m[k], inDeps || strings.Contains(k, "dependencies") || k == "patch" || k == "replace")
		}
	}
	walk(doc, false)
	return out, nil
}

// PackageJSON returns the file: and link: dependencies of package.json.
func PackageJSON(b []byte) ([]string, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	var out []string
	for _, k := range []string{"dependencies", "devDependencies", "peerDependencies", "optionalDependencies", "overrides", "resolutions"} {
		var deps map[string]any
		if json.Unmarshal(doc[k], &deps) != nil {
			continue
		}
		names := make([]string, 0, len(deps))
		for n := range deps {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			v, _ := deps[n].(string)
			for _, pre := range []string{"file:", "link:", "portal:"} {
				if p, ok := strings.CutPrefix(v, pre); ok && p != "" {
					out = append(out, p)
				}
			}
		}
	}
	return out, nil
}

// CSProj returns the directories of a project file's ProjectReferences.
func CSProj(b []byte) ([]string, error) {
	d := xml.NewDecoder(bytes.NewReader(b))
	d.Strict = false
	var out []string
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		se, ok := tok.(xml.StartElement)
		if !ok || se.Name.Local != "ProjectReference" {
			continue
		}
		for _, a := range se.Attr {
			if a.Name.Local == "Include" && a.Value != "" {
				p := strings.ReplaceAll(a.Value, `\`, "/")
				out = append(out, filepath.Dir(p))
			}
		}
	}
}
