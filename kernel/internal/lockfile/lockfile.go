// Package lockfile keeps $KULE_HOME/kule.lock: everything a person approved
// to run, plugins and agent profiles alike, each pinned by its exact version
// and by hashes that name their scheme ("sha256:<hex>"), as Terraform's
// provider lock file does. It is the one approval store: kernel/internal/pluginhost
// kernel/internal/agents and kernel/internal/extensions read and change their
// own section through Update.
//
// The file is TOML:
//
//	format = 1
//
//	[plugins.tokei]
//	kind = "differ"
//	version = "1.2.0"
//	hashes = ["sha256:<executable>"]
//	manifest = "sha256:<plugin.toml>"
//	approved = 2026-12-01T23:00:00Z
//
//	[agents.mine]
//	hashes = ["sha256:<canonical profile JSON>"]
//	approved = 2026-12-01T23:00:00Z
//
//	[extensions."me.hello"]
//	version = "0.1.0"
//	hashes = ["sha256:<the .kulext file>"]
//	approved = 2026-12-01T23:00:00Z
//
//	[extensions."me.hello/mcp/search"]     # a part with an approval of its own
//	version = "0.1.0"
//	hashes = ["sha256:<the part's canonical JSON>"]
//	approved = 2026-12-01T23:00:00Z
//
// Before kule.lock, approvals lived in two JSON files, plugins/approvals.json
// and approvals.json. While kule.lock does not exist they are read in its
// place, so no approval is lost; the next write puts their entries into
// kule.lock and sets them aside as <name>.migrated, so that they are never
// read again (removing kule.lock then takes every approval back, as it
// should).
package lockfile

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"golang.org/x/sys/unix"

	"github.com/kulehq/kule/kernel/internal/atomicfile"
)

// Name is the lock file's name in $KULE_HOME.
const Name = "kule.lock"

// Format is the version of the file's layout this package writes and reads.
const Format = 1

// SHA256 is the scheme of the hashes Kule writes.
const SHA256 = "sha256"

// The files read while kule.lock does not exist, relative to $KULE_HOME.
const (
	LegacyPlugins = "plugins/approvals.json"
	LegacyAgents  = "approvals.json"
)

var (
	// ErrDamaged is returned for a lock file (or an older approvals file)
	// that cannot be read as one.
	ErrDamaged = errors.New("lockfile: damaged")
	// ErrNoChange, returned by Update's change, leaves the lock file as it
	// was: Update then writes nothing and returns nil.
	ErrNoChange = errors.New("lockfile: no change")
	// ErrWrite is returned when the lock file could not be written; the
	// file on disk is then as it was.
	ErrWrite = errors.New("lockfile: not written")
)

// Entry is one approval: what was approved, exactly.
type Entry struct {
	// Kind is a plugin's kind ("differ"); empty for an agent profile.
	Kind string `toml:"kind,omitempty"`
	// Version is the exact version approved; empty for an agent profile,
	// whose hash is its version.
	Version string `toml:"version,omitempty"`
	// Hashes pin what runs (a plugin's executable, a profile's canonical
	// JSON), each "<scheme>:<hex>".
	Hashes []string `toml:"hashes"`
	// Manifest pins a plugin's manifest, "<scheme>:<hex>"; empty for an
	// agent profile.
	Manifest string `toml:"manifest,omitempty"`
	// Approved is when the person approved it.
	Approved time.Time `toml:"approved"`
}

// Hash returns the hex digest of e's hash in scheme, or "" when it has none.
func (e Entry) Hash(scheme string) string {
	for _, h := range e.Hashes {
		if s, hx, ok := strings.Cut(h, ":"); ok && s == scheme {
			return hx
		}
	}
	return ""
}

// Sum names a hex digest with its scheme: Sum("sha256", "ab…") is
// "sha256:ab…".
func Sum(scheme, hexDigest string) string { return scheme + ":" + hexDigest }

// Digest returns the hex digest of a "<scheme>:<hex>" sum in scheme, or ""
// when it is in another scheme.
func Digest(scheme, sum string) string {
	if s, hx, ok := strings.Cut(sum, ":"); ok && s == scheme {
		return hx
	}
	return ""
}

// Lock is the whole file.
type Lock struct {
	Plugins map[string]Entry
	Agents  map[string]Entry
	// Extensions are JavaScript extensions by id, pinned by version and
	// the sha256 of their .kulext, and the parts of an extension that wait
	// for an approval of their own ("<id>/agent/<name>", "<id>/mcp/<name>").
	Extensions map[string]Entry
}

type doc struct {
	Format     int              `toml:"format"`
	Plugins    map[string]Entry `toml:"plugins,omitempty"`
	Agents     map[string]Entry `toml:"agents,omitempty"`
	Extensions map[string]Entry `toml:"extensions,omitempty"`
}

// Path is $KULE_HOME/kule.lock.
func Path(kuleHome string) string { return filepath.Join(kuleHome, Name) }

// Parse reads a lock file's content. Anything it does not know (a key, a
// format, a hash that names no scheme or a sha256 that is not 64 hex
// digits) is an error, never an approval.
func Parse(data []byte) (*Lock, error) {
	var d doc
	md, err := toml.Decode(string(data), &d)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDamaged, err)
	}
	if un := md.Undecoded(); len(un) > 0 {
		return nil, fmt.Errorf("%w: unknown key %s", ErrDamaged, un[0])
	}
	if d.Format != Format {
		return nil, fmt.Errorf("%w: format %d, this Kule reads format %d", ErrDamaged, d.Format, Format)
	}
	l := &Lock{Plugins: d.Plugins, Agents: d.Agents, Extensions: d.Extensions}
	l.init()
	for section, m := range map[string]map[string]Entry{"plugins": l.Plugins, "agents": l.Agents, "extensions": l.Extensions} {
		for name, e := range m {
			if err := checkEntry(e); err != nil {
				return nil, fmt.Errorf("%w: %s.%s: %v", ErrDamaged, section, name, err)
			}
		}
	}
	return l, nil
}

func checkEntry(e Entry) error {
	if len(e.Hashes) == 0 {
		return errors.New("no hashes")
	}
	for _, h := range e.Hashes {
		if err := checkSum(h); err != nil {
			return err
		}
	}
	if e.Manifest != "" {
		if err := checkSum(e.Manifest); err != nil {
			return fmt.Errorf("manifest: %w", err)
		}
	}
	return nil
}

// checkSum accepts "<scheme>:<digest>"; a sha256 digest must be 64
// lower-case hex digits. Other schemes are kept as they are (a later Kule's)
// but match nothing this one checks.
func checkSum(s string) error {
	scheme, digest, ok := strings.Cut(s, ":")
	if !ok || scheme == "" || digest == "" {
		return fmt.Errorf("hash %q does not name its scheme (want sha256:<hex>)", s)
	}
	for _, c := range scheme {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return fmt.Errorf("hash %q: scheme %q is not lower-case letters and digits", s, scheme)
		}
	}
	if scheme == SHA256 {
		if b, err := hex.DecodeString(digest); err != nil || len(b) != 32 || strings.ToLower(digest) != digest {
			return fmt.Errorf("hash %q is not 64 lower-case hex digits", s)
		}
	}
	return nil
}

func (l *Lock) init() {
	if l.Plugins == nil {
		l.Plugins = map[string]Entry{}
	}
	if l.Agents == nil {
		l.Agents = map[string]Entry{}
	}
	if l.Extensions == nil {
		l.Extensions = map[string]Entry{}
	}
}

// Encode renders the lock file, sorted by section and name.
func (l *Lock) Encode() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("# kule.lock: what a person approved to run, pinned by exact version and hash.\n" +
		"# Kule writes it (kule plugins approve, kule agents approve); removing an\n" +
		"# entry takes that approval back.\n")
	enc := toml.NewEncoder(&b)
	enc.Indent = ""
	if err := enc.Encode(doc{Format: Format, Plugins: l.Plugins, Agents: l.Agents, Extensions: l.Extensions}); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Read returns the approvals under kuleHome: kule.lock, or while it does not
// exist the older approvals files; nothing approved when there is none.
func Read(kuleHome string) (*Lock, error) {
	data, err := os.ReadFile(Path(kuleHome))
	if errors.Is(err, fs.ErrNotExist) {
		return readLegacy(kuleHome)
	}
	if err != nil {
		return nil, fmt.Errorf("lockfile: %w", err)
	}
	l, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s: fix it, or remove the entry or the file; whatever it names then waits for approval again)", err, Path(kuleHome))
	}
	return l, nil
}

// Update reads the approvals, lets change alter them and writes kule.lock
// atomically (readable by its owner only), one Update at a time under
// kuleHome. An error from change writes nothing.
func Update(kuleHome string, change func(*Lock) error) error {
	if err := os.MkdirAll(kuleHome, 0o700); err != nil {
		return fmt.Errorf("%w: %v", ErrWrite, err)
	}
	// The lock file is replaced by rename, so the exclusive lock is taken
	// on a file beside it that stays.
	lk, err := os.OpenFile(filepath.Join(kuleHome, "."+Name+".writing"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrWrite, err)
	}
	defer lk.Close()
	if err := unix.Flock(int(lk.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("%w: lock %s: %v", ErrWrite, lk.Name(), err)
	}
	defer unix.Flock(int(lk.Fd()), unix.LOCK_UN)
	_, err = os.Lstat(Path(kuleHome))
	migrating := errors.Is(err, fs.ErrNotExist)
	l, err := Read(kuleHome)
	if err != nil {
		return err
	}
	if err := change(l); errors.Is(err, ErrNoChange) {
		return nil
	} else if err != nil {
		return err
	}
	data, err := l.Encode()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrWrite, err)
	}
	if err := atomicfile.Write(Path(kuleHome), data, 0o600); err != nil {
		return fmt.Errorf("%w: %v; every approval is as it was", ErrWrite, err)
	}
	if migrating {
		for _, rel := range []string{LegacyPlugins, LegacyAgents} {
			old := filepath.Join(kuleHome, rel)
			if err := os.Rename(old, old+".migrated"); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("lockfile: the approvals are in %s now, but %s could not be set aside: %w (remove it by hand)", Path(kuleHome), old, err)
			}
		}
	}
	return nil
}

// The older files' layouts.
type legacyPlugin struct {
	Kind           string    `json:"kind"`
	Version        string    `json:"version"`
	SHA256         string    `json:"sha256"`
	ManifestSHA256 string    `json:"manifest_sha256"`
	ApprovedAt     time.Time `json:"approved_at"`
}

type legacyAgent struct {
	Hash     string    `json:"sha256"`
	Approved time.Time `json:"approved"`
}

// readLegacy reads plugins/approvals.json and approvals.json into a Lock;
// a missing file approves nothing.
func readLegacy(kuleHome string) (*Lock, error) {
	l := &Lock{}
	var plugins struct {
		Plugins map[string]legacyPlugin `json:"plugins"`
	}
	if err := readJSON(filepath.Join(kuleHome, LegacyPlugins), &plugins); err != nil {
		return nil, err
	}
	var agents struct {
		Agents map[string]legacyAgent `json:"agents"`
	}
	if err := readJSON(filepath.Join(kuleHome, LegacyAgents), &agents); err != nil {
		return nil, err
	}
	l.init()
	// An entry whose hashes are not sha256 digests could never match what
	// it names; it is left out rather than written into kule.lock.
	for name, p := range plugins.Plugins {
		e := Entry{Kind: p.Kind, Version: p.Version, Hashes: []string{Sum(SHA256, p.SHA256)},
			Manifest: Sum(SHA256, p.ManifestSHA256), Approved: p.ApprovedAt.UTC()}
		if checkEntry(e) == nil {
			l.Plugins[name] = e
		}
	}
	for name, a := range agents.Agents {
		e := Entry{Hashes: []string{Sum(SHA256, a.Hash)}, Approved: a.Approved.UTC()}
		if checkEntry(e) == nil {
			l.Agents[name] = e
		}
	}
	return l, nil
}

func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("lockfile: %w", err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%w: %s: %v (fix or remove it; whatever it approved then waits for approval again)", ErrDamaged, path, err)
	}
	return nil
}
