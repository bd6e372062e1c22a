// Package extensions is the kernel's side of Kule's JavaScript extensions:
// the store of installed .kulext packages in $KULE_HOME/extensions, their
// approvals (in kule.lock, beside plugins' and agent profiles', pinned by id,
// exact version and the sha256 of the package), the permission check on
// every call an extension makes, and the launch of the extension host (an
// out-of-process plugin, `kule-plugins __plugin extension/host`) that runs its
// JavaScript. The kernel never imports extensions/: it talks to the host
// through sdk/extension and sdk/proto/extension/v1 only.
//
// Lifecycle of an extension:
//  1. Install reads a .kulext (sdk/extension.ReadPackage refuses links,
//     absolute or ".." paths, bombs, an oversized manifest, an unknown
//     permission) and copies it to $KULE_HOME/extensions/<id>.kulext,
//     read-only. Nothing runs.
//  2. Until Approve records its id, version and sha256, it waits for
//     approval and Status says why.
//  3. Load reads the installed package once, hashes the bytes it read and
//     hands exactly those bytes on only if the version and hash match the
//     approval and the extension is not disabled. A changed package waits
//     for approval again.
//  4. The host runs it; every call it makes back into Kule is checked by
//     Allowed against the approved manifest's permissions.
//  5. Its agent profiles and MCP servers wait for approvals of their own
//     (ApprovePart), pinned by the part's content and the version.
package extensions

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/kulehq/kule/kernel/internal/atomicfile"
	"github.com/kulehq/kule/kernel/internal/lockfile"
	"github.com/kulehq/kule/sdk/extension"
)

// Sentinel errors.
var (
	// ErrNotInstalled: no extension of that id is installed.
	ErrNotInstalled = errors.New("extension not installed")
	// ErrNotApproved: the extension (or one of its parts) waits for the
	// person's approval.
	ErrNotApproved = errors.New("extension waits for approval")
	// ErrDisabled: the person disabled the extension.
	ErrDisabled = errors.New("extension disabled")
	// ErrStore: the store could not be read or written.
	ErrStore = errors.New("extension store")
	// ErrDenied: the extension asked for something its approved
	// permissions do not allow.
	ErrDenied = errors.New("extension call denied")
)

// Dir is the store under a Kule home.
func Dir(home string) string { return filepath.Join(home, "extensions") }

// Store is the installed extensions under one Kule home.
type Store struct {
	home string
	now  func() time.Time
	// offerUnapproved, in tests only, offers parts without their own
	// approval: the guard taken away.
	offerUnapproved bool
	// AgentApproved says whether the agent profile name, whose TOML file
	// is content, is approved the way a person's profile is (kule agents
	// approve pinned it as it is). The kernel sets it; nil: none is.
	AgentApproved func(name string, content []byte) bool
}

// New returns the store of home ($KULE_HOME).
func New(home string) *Store { return &Store{home: home, now: time.Now} }

// Status is what Kule knows of an installed extension without running it.
type Status struct {
	Manifest *extension.Manifest
	SHA256   string
	// Approved: this exact version and package may run.
	Approved bool
	// Reason says why it waits, when it does ("not approved yet",
	// "package changed since approval (approved 3f2a…, now 9c41…)").
	Reason   string
	Disabled bool
	// ApprovedAt is when it was approved, if it is.
	ApprovedAt time.Time
	// Parts are its agent profiles and MCP servers, each with its own
	// approval.
	Parts []Part
}

// Part is an agent profile or MCP server an extension offers.
type Part struct {
	Kind     string // "agent" | "mcp"
	Name     string
	SHA256   string // of the part's content (a profile's file, a server's command as JSON)
	Approved bool
}

// Key is the part's key in kule.lock: "<id>/<kind>/<name>".
func (p Part) key(id string) string { return id + "/" + p.Kind + "/" + p.Name }

type state struct {
	Disabled bool `json:"disabled,omitempty"`
}

func (s *Store) pkgPath(id string) string   { return filepath.Join(Dir(s.home), id+extension.Ext) }
func (s *Store) statePath(id string) string { return filepath.Join(Dir(s.home), id+".state.json") }

// Install copies a .kulext's bytes into the store. It replaces an older
// install of the same id; the approval stays pinned to what was approved,
// so a new package waits.
func (s *Store) Install(data []byte) (*extension.Package, error) {
	pkg, err := extension.ReadPackage(data)
	if err != nil {
		return nil, fmt.Errorf("ext install: %w; nothing was installed", err)
	}
	if err := os.MkdirAll(Dir(s.home), 0o700); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStore, err)
	}
	if err := atomicfile.Write(s.pkgPath(pkg.Manifest.ID), data, 0o400); err != nil {
		return nil, fmt.Errorf("%w: install %s: %v; nothing was installed", ErrStore, pkg.Manifest.ID, err)
	}
	return pkg, nil
}

// read reads the installed package of id once, never through a link.
func (s *Store) read(id string) (*extension.Package, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(s.pkgPath(id), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s (kule ext list shows what is installed)", ErrNotInstalled, id)
	}
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%w: %s is a link; Kule reads only the packages it installed (remove it and install again)", ErrStore, s.pkgPath(id))
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStore, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrStore, s.pkgPath(id))
	}
	data, err := io.ReadAll(io.LimitReader(f, extension.MaxPackageSize+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStore, err)
	}
	pkg, err := extension.ReadPackage(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w (remove it with kule ext remove %s)", s.pkgPath(id), err, id)
	}
	if pkg.Manifest.ID != id {
		return nil, fmt.Errorf("%w: %s holds extension %q", ErrStore, s.pkgPath(id), pkg.Manifest.ID)
	}
	return pkg, nil
}

func checkID(id string) error {
	m := extension.Manifest{ID: id, Name: "x", Version: "0.0.0"}
	if err := m.Validate(); err != nil {
		return fmt.Errorf("%w: %q is not an extension id (publisher.name)", ErrNotInstalled, id)
	}
	return nil
}

func (s *Store) readState(id string) (state, error) {
	var st state
	data, err := os.ReadFile(s.statePath(id))
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("%w: %v", ErrStore, err)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return st, fmt.Errorf("%w: %s: %v (remove it; the extension is then enabled)", ErrStore, s.statePath(id), err)
	}
	return st, nil
}

// List is every installed extension's status, by id.
func (s *Store) List() ([]Status, error) {
	ents, err := os.ReadDir(Dir(s.home))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStore, err)
	}
	var out []Status
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), extension.Ext)
		if !ok {
			continue
		}
		st, err := s.Status(id)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Manifest.ID < out[j].Manifest.ID })
	return out, nil
}

// Status reads the installed extension id and its approval.
func (s *Store) Status(id string) (Status, error) {
	pkg, err := s.read(id)
	if err != nil {
		return Status{}, err
	}
	return s.status(pkg)
}

func (s *Store) status(pkg *extension.Package) (Status, error) {
	lk, err := lockfile.Read(s.home)
	if err != nil {
		return Status{}, err
	}
	st, err := s.readState(pkg.Manifest.ID)
	if err != nil {
		return Status{}, err
	}
	out := Status{Manifest: pkg.Manifest, SHA256: pkg.SHA256, Disabled: st.Disabled}
	e, ok := lk.Extensions[pkg.Manifest.ID]
	switch {
	case !ok:
		out.Reason = "not approved yet (kule ext show " + pkg.Manifest.ID + " says what it asks for; kule ext approve " + pkg.Manifest.ID + ")"
	case e.Version != pkg.Manifest.Version:
		out.Reason = fmt.Sprintf("version changed since approval (approved %s, now %s)", e.Version, pkg.Manifest.Version)
	case e.Hash(lockfile.SHA256) != pkg.SHA256:
		out.Reason = fmt.Sprintf("package changed since approval (approved %s…, now %s…)", short(e.Hash(lockfile.SHA256)), short(pkg.SHA256))
	default:
		out.Approved = true
		out.ApprovedAt = e.Approved
	}
	for _, p := range parts(pkg) {
		if p.Kind == "agent" {
			p.Approved = s.AgentApproved != nil && s.AgentApproved(p.Name, agentFile(pkg, p.Name))
		} else {
			pe, ok := lk.Extensions[p.key(pkg.Manifest.ID)]
			p.Approved = ok && pe.Version == pkg.Manifest.Version && pe.Hash(lockfile.SHA256) == p.SHA256
		}
		out.Parts = append(out.Parts, p)
	}
	return out, nil
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// parts are the agent profiles and MCP servers of pkg, each hashed by its
// content.
func parts(pkg *extension.Package) []Part {
	var out []Part
	for _, a := range pkg.Manifest.Agents {
		sum := sha256.Sum256(pkg.Files[a.File])
		out = append(out, Part{Kind: "agent", Name: a.Name, SHA256: hex.EncodeToString(sum[:])})
	}
	for _, m := range pkg.Manifest.MCPServers {
		b, _ := json.Marshal(m)
		sum := sha256.Sum256(b)
		out = append(out, Part{Kind: "mcp", Name: m.Name, SHA256: hex.EncodeToString(sum[:])})
	}
	return out
}

func agentFile(pkg *extension.Package, name string) []byte {
	for _, a := range pkg.Manifest.Agents {
		if a.Name == name {
			return pkg.Files[a.File]
		}
	}
	return nil
}

// Approve approves exactly the installed package of id: its version and
// the sha256 of its bytes. It does not approve its agent profiles or MCP
// servers (ApprovePart does). want, when not "", is the sha256 the person
// saw (kule ext show): a package that changed since is not approved.
func (s *Store) Approve(id, want string) (Status, error) {
	pkg, err := s.read(id)
	if err != nil {
		return Status{}, err
	}
	if want != "" && want != pkg.SHA256 {
		return Status{}, fmt.Errorf("%w: %s changed since you looked (you saw %s…, it is now %s…); nothing was approved: look again with kule ext show %s", ErrNotApproved, id, short(want), short(pkg.SHA256), id)
	}
	err = lockfile.Update(s.home, func(l *lockfile.Lock) error {
		l.Extensions[id] = lockfile.Entry{Kind: "extension", Version: pkg.Manifest.Version,
			Hashes: []string{lockfile.Sum(lockfile.SHA256, pkg.SHA256)}, Approved: s.now().UTC().Truncate(time.Second)}
		return nil
	})
	if err != nil {
		return Status{}, err
	}
	return s.status(pkg)
}

// ApprovePart approves one MCP server of id (kind "mcp"), pinned by its
// content and the extension's version. The extension itself must be
// approved first. An agent profile (kind "agent") is not approved here: it
// waits for `kule agents approve NAME`, like a profile a person writes.
func (s *Store) ApprovePart(id, kind, name string) (Part, error) {
	if kind == "agent" {
		return Part{}, fmt.Errorf("%w: an extension's agent profile is approved as any profile is: kule agents show %s, then kule agents approve %s", ErrNotApproved, name, name)
	}
	pkg, err := s.read(id)
	if err != nil {
		return Part{}, err
	}
	st, err := s.status(pkg)
	if err != nil {
		return Part{}, err
	}
	if !st.Approved {
		return Part{}, fmt.Errorf("%w: %s: %s; approve the extension before its parts", ErrNotApproved, id, st.Reason)
	}
	for _, p := range st.Parts {
		if p.Kind == kind && p.Name == name {
			err := lockfile.Update(s.home, func(l *lockfile.Lock) error {
				l.Extensions[p.key(id)] = lockfile.Entry{Kind: "extension-" + kind, Version: pkg.Manifest.Version,
					Hashes: []string{lockfile.Sum(lockfile.SHA256, p.SHA256)}, Approved: s.now().UTC().Truncate(time.Second)}
				return nil
			})
			p.Approved = err == nil
			return p, err
		}
	}
	return Part{}, fmt.Errorf("%w: %s offers no %s named %q", ErrNotInstalled, id, kind, name)
}

// UsePart returns the part kind/name of id only when it and its extension
// are approved and the extension is enabled; otherwise ErrNotApproved says
// why. An agent profile's content (the TOML file) comes with it.
func (s *Store) UsePart(id, kind, name string) (Part, []byte, error) {
	pkg, st, err := s.loadable(id)
	if err != nil {
		return Part{}, nil, err
	}
	for _, p := range st.Parts {
		if p.Kind != kind || p.Name != name {
			continue
		}
		if !p.Approved {
			how := fmt.Sprintf("kule ext approve %s --%s %s", id, kind, name)
			if kind == "agent" {
				how = "kule agents approve " + name
			}
			return Part{}, nil, fmt.Errorf("%w: %s %q of %s has no approval of its own yet (%s); it was not offered to any agent", ErrNotApproved, kind, name, id, how)
		}
		var content []byte
		if kind == "agent" {
			for _, a := range pkg.Manifest.Agents {
				if a.Name == name {
					content = pkg.Files[a.File]
				}
			}
		}
		return p, content, nil
	}
	return Part{}, nil, fmt.Errorf("%w: %s offers no %s named %q", ErrNotInstalled, id, kind, name)
}

// OfferedAgent is an agent profile an approved, enabled extension offers:
// its TOML file (agents.toml's shape, one [[agent]]). It runs only once
// approved as any profile a person writes is (kule agents approve NAME).
type OfferedAgent struct {
	Extension string
	Name      string
	File      string
	Content   []byte
}

// OfferedAgents are the agent profiles of approved, enabled extensions.
func (s *Store) OfferedAgents() ([]OfferedAgent, error) {
	list, err := s.List()
	if err != nil {
		return nil, err
	}
	var out []OfferedAgent
	for _, st := range list {
		if !st.Approved || st.Disabled || len(st.Manifest.Agents) == 0 {
			continue
		}
		pkg, err := s.Load(st.Manifest.ID)
		if err != nil {
			continue // changed since List read it: it waits for approval
		}
		for _, a := range pkg.Manifest.Agents {
			out = append(out, OfferedAgent{Extension: pkg.Manifest.ID, Name: a.Name, File: a.File, Content: pkg.Files[a.File]})
		}
	}
	return out, nil
}

// OfferedMCP is an MCP server Kule may offer to agents.
type OfferedMCP struct {
	Extension string
	extension.MCPServer
}

// OfferedMCP are the MCP servers agents may be offered: those of approved,
// enabled extensions whose own approval (ApprovePart) pins each as it is
// now. A server waiting for its approval is left out and named in waiting,
// so the person can be told why it is not there.
func (s *Store) OfferedMCP() (offered []OfferedMCP, waiting []string, err error) {
	list, err := s.List()
	if err != nil {
		return nil, nil, err
	}
	for _, st := range list {
		if !st.Approved || st.Disabled {
			continue
		}
		for _, m := range st.Manifest.MCPServers {
			ok := false
			for _, p := range st.Parts {
				if p.Kind == "mcp" && p.Name == m.Name {
					ok = p.Approved || s.offerUnapproved
				}
			}
			if !ok {
				waiting = append(waiting, fmt.Sprintf("MCP server %q of %s waits for its own approval (kule ext approve %s --mcp %s); it was not offered", m.Name, st.Manifest.ID, st.Manifest.ID, m.Name))
				continue
			}
			offered = append(offered, OfferedMCP{Extension: st.Manifest.ID, MCPServer: m})
		}
	}
	return offered, waiting, nil
}

// Load returns the installed package of id, read once, only if it is
// approved as it is and enabled: the bytes checked are the bytes returned.
func (s *Store) Load(id string) (*extension.Package, error) {
	pkg, _, err := s.loadable(id)
	return pkg, err
}

func (s *Store) loadable(id string) (*extension.Package, Status, error) {
	pkg, err := s.read(id)
	if err != nil {
		return nil, Status{}, err
	}
	st, err := s.status(pkg)
	if err != nil {
		return nil, Status{}, err
	}
	if !st.Approved {
		return nil, Status{}, fmt.Errorf("%w: %s: %s; nothing of it ran", ErrNotApproved, id, st.Reason)
	}
	if st.Disabled {
		return nil, Status{}, fmt.Errorf("%w: %s (kule ext enable %s turns it back on); nothing of it ran", ErrDisabled, id, id)
	}
	return pkg, st, nil
}

// SetDisabled disables (or enables) id; its approval stays.
func (s *Store) SetDisabled(id string, disabled bool) error {
	if _, err := s.read(id); err != nil {
		return err
	}
	data, _ := json.Marshal(state{Disabled: disabled})
	if err := atomicfile.Write(s.statePath(id), data, 0o600); err != nil {
		return fmt.Errorf("%w: %v", ErrStore, err)
	}
	return nil
}

// Remove uninstalls id and forgets its approvals and its parts'.
func (s *Store) Remove(id string) error {
	if err := checkID(id); err != nil {
		return err
	}
	if _, err := os.Lstat(s.pkgPath(id)); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s", ErrNotInstalled, id)
	}
	err := lockfile.Update(s.home, func(l *lockfile.Lock) error {
		changed := false
		for k := range l.Extensions {
			if k == id || strings.HasPrefix(k, id+"/") {
				delete(l.Extensions, k)
				changed = true
			}
		}
		if !changed {
			return lockfile.ErrNoChange
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, p := range []string{s.pkgPath(id), s.statePath(id), s.settingsPath(id)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: %v (its approval is forgotten; remove %s by hand)", ErrStore, err, p)
		}
	}
	return atomicfile.SyncDir(Dir(s.home))
}

// Theme returns the theme themeID of the approved, enabled extension id,
// checked again (named parts, #rrggbb colours only) as it is handed out.
func (s *Store) Theme(id, themeID string) (*extension.ThemeFile, error) {
	pkg, _, err := s.loadable(id)
	if err != nil {
		return nil, err
	}
	if !pkg.Manifest.Has(extension.PermThemes) {
		return nil, fmt.Errorf("%w: %s has no %q permission", ErrDenied, id, extension.PermThemes)
	}
	for _, t := range pkg.Manifest.Themes {
		if t.ID == themeID {
			return extension.ParseTheme(pkg.Files[t.File])
		}
	}
	return nil, fmt.Errorf("%w: %s has no theme %q", ErrNotInstalled, id, themeID)
}
