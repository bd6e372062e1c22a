package pluginhost

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/kulehq/kule/kernel/internal/lazyre"
)

// ManifestFile is the name of a plugin's manifest beside its executable.
const ManifestFile = "plugin.toml"

// maxManifest is the largest manifest read, in bytes.
const maxManifest = 64 << 10

// Manifest is a plugin's plugin.toml: what the person approves, together with
// the executable's sha256.
//
//	name = "ini"
//	kind = "differ"
//	version = "0.1.0"
//	executable = "kule-differ-ini"   # beside plugin.toml; defaults to name
//	sha256 = "…64 hex digits…"
//	permissions = []                 # a differ asks for none
//	description = "INI sections and keys"
//
//	[differ]
//	patterns = ["*.ini", "*.cfg"]    # file names it may read; required
//
// A previewer names its files the same way in a [previewer] section.
type Manifest struct {
	Name        string       `toml:"name"`
	Kind        string       `toml:"kind"`
	Version     string       `toml:"version"`
	Executable  string       `toml:"executable"`
	SHA256      string       `toml:"sha256"`
	Permissions []string     `toml:"permissions"`
	Description string       `toml:"description"`
	Differ      DifferConfig `toml:"differ"`
	Previewer   DifferConfig `toml:"previewer"`
}

// DifferConfig is the [differ] section of a differ's manifest.
type DifferConfig struct {
	// Patterns are path.Match patterns on the file's base name ("*.ini"), or
	// on its slash path relative to the folder when they hold a "/". The host
	// starts the differ only for files that match one.
	Patterns []string `toml:"patterns"`
}

var (
	nameRe    = lazyre.New(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	versionRe = lazyre.New(`^v?[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.+-]{1,64})?$`)
	sha256Re  = lazyre.New(`^[0-9a-f]{64}$`)
	exeRe     = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
	// permissionRe is the shape of a permission; which ones a kind may ask
	// for is in kindPermissions.
	permissionRe = lazyre.New(`^network:[a-z0-9.-]{1,253}(:[0-9]{1,5})?$`)
)

// kindPermissions says which permissions each kind may ask for: a differ and
// a previewer get bytes over gRPC and nothing else; a transport may reach its
// own hosts.
var kindPermissions = map[string]func(string) bool{
	"differ":    func(string) bool { return false },
	"previewer": func(string) bool { return false },
	"transport": permissionRe.MatchString,
}

// ParseManifest reads a plugin.toml. Unknown keys, a name or version of the
// wrong shape, a missing sha256, an unknown kind, or a permission the kind
// cannot have are errors (ErrManifest) that say which.
func ParseManifest(data []byte) (Manifest, error) {
	var m Manifest
	if len(data) > maxManifest {
		return m, fmt.Errorf("%w: larger than %d bytes", ErrManifest, maxManifest)
	}
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&m)
	if err != nil {
		return Manifest{}, fmt.Errorf("%w: %v", ErrManifest, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		keys := make([]string, len(und))
		for i, k := range und {
			keys[i] = k.String()
		}
		sort.Strings(keys)
		return Manifest{}, fmt.Errorf("%w: unknown keys %s", ErrManifest, strings.Join(keys, ", "))
	}
	if m.Executable == "" {
		m.Executable = m.Name
	}
	if err := m.check(); err != nil {
		return Manifest{}, err
	}
	return m, nil
}

func (m Manifest) check() error {
	allowed, knownKind := kindPermissions[m.Kind]
	switch {
	case !nameRe.MatchString(m.Name):
		return fmt.Errorf("%w: name %q: use 1-64 of a-z, 0-9, '-', '_'", ErrManifest, m.Name)
	case !knownKind:
		return fmt.Errorf("%w: kind %q: want differ, previewer or transport", ErrManifest, m.Kind)
	case !versionRe.MatchString(m.Version):
		return fmt.Errorf("%w: version %q: want MAJOR.MINOR.PATCH", ErrManifest, m.Version)
	case !sha256Re.MatchString(m.SHA256):
		return fmt.Errorf("%w: sha256 %q: want 64 lower-case hex digits of the executable's sha256", ErrManifest, m.SHA256)
	case !exeRe.MatchString(m.Executable):
		return fmt.Errorf("%w: executable %q: want a file name beside plugin.toml", ErrManifest, m.Executable)
	case m.Executable == ManifestFile:
		return fmt.Errorf("%w: executable cannot be %s", ErrManifest, ManifestFile)
	case len(m.Description) > 1024:
		return fmt.Errorf("%w: description longer than 1024 bytes", ErrManifest)
	}
	for _, p := range m.Permissions {
		if !allowed(p) {
			return fmt.Errorf("%w: permission %q: a %s cannot ask for it", ErrManifest, p, m.Kind)
		}
	}
	if m.Kind == "differ" {
		if len(m.Differ.Patterns) == 0 {
			return fmt.Errorf("%w: [differ] patterns: name the files the differ reads, e.g. [\"*.ini\"]", ErrManifest)
		}
		for _, p := range m.Differ.Patterns {
			if _, err := path.Match(p, ""); err != nil || p == "" || len(p) > 256 {
				return fmt.Errorf("%w: [differ] pattern %q is not a valid pattern", ErrManifest, p)
			}
		}
	} else if len(m.Differ.Patterns) > 0 {
		return fmt.Errorf("%w: a %s has no [differ] section", ErrManifest, m.Kind)
	}
	if m.Kind == "previewer" {
		if len(m.Previewer.Patterns) == 0 {
			return fmt.Errorf("%w: [previewer] patterns: name the files the previewer reads, e.g. [\"*.ini\"]", ErrManifest)
		}
		for _, p := range m.Previewer.Patterns {
			if _, err := path.Match(p, ""); err != nil || p == "" || len(p) > 256 {
				return fmt.Errorf("%w: [previewer] pattern %q is not a valid pattern", ErrManifest, p)
			}
		}
	} else if len(m.Previewer.Patterns) > 0 {
		return fmt.Errorf("%w: a %s has no [previewer] section", ErrManifest, m.Kind)
	}
	return nil
}

// Matches says whether a differ's (or a previewer's) patterns take the file at rel (a slash
// path relative to the folder).
func (m Manifest) Matches(rel string) bool {
	pats := m.Differ.Patterns
	if m.Kind == "previewer" {
		pats = m.Previewer.Patterns
	}
	for _, p := range pats {
		subject := path.Base(rel)
		if strings.Contains(p, "/") {
			subject = rel
		}
		if ok, _ := path.Match(p, subject); ok {
			return true
		}
	}
	return false
}

// hashBytes is the lower-case hex sha256 of b.
func hashBytes(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
