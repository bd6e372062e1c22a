// Package extension is the contract of Kule's JavaScript extensions: the
// manifest an extension states (extension.json), the closed list of
// permissions it may ask for, the .kulext package format (a zip read with
// no links, no absolute or ".." paths, and caps on size and inflation), the
// theme shape, and the wire between the kernel and the extension host
// (sdk/proto/extension/v1). The kernel and the host both read packages
// through this package, so what one accepts the other does too.
package extension

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// ManifestName is the manifest's name at the root of an extension's folder
// and package.
const ManifestName = "extension.json"

// MaxManifestSize is the largest manifest read; a bigger one is refused
// before it is parsed.
const MaxManifestSize = 64 << 10

// Sentinel errors.
var (
	// ErrManifest: the manifest does not parse or breaks a rule.
	ErrManifest = errors.New("extension manifest")
	// ErrPermission: the manifest asks for a permission Kule does not know,
	// or uses a contribution without asking for its permission.
	ErrPermission = errors.New("extension permission")
	// ErrPackage: the .kulext package breaks a rule of the format.
	ErrPackage = errors.New("extension package")
	// ErrTheme: a theme file names a part that does not exist or a colour
	// that is not #rrggbb.
	ErrTheme = errors.New("extension theme")
)

// Permission is one thing an extension may do, from a closed list.
type Permission string

// The permissions. Nothing on this list reaches secrets, answers to
// questions, commit, rollback, undo, policies, remembered rules or Kule's
// home: there is no permission for them, so no extension can ask.
const (
	PermTasksRead   Permission = "tasks.read"
	PermReviewRead  Permission = "review.read"
	PermReviewNotes Permission = "review.notes"
	PermFilesRead   Permission = "files.read"
	PermCommands    Permission = "commands"
	PermPanels      Permission = "panels"
	PermThemes      Permission = "themes"
	PermSettings    Permission = "settings"
	PermNotify      Permission = "notify"
	PermAgents      Permission = "agents"
	PermMCP         Permission = "mcp"
)

// Permissions is the closed list, each in a person's words (kule ext show).
var Permissions = map[Permission]string{
	PermTasksRead:   "see the list of tasks: their ids, names, folders and states",
	PermReviewRead:  "read a task's effects: which files it added, changed, moved or deleted, and the entities named in them",
	PermReviewNotes: "add notes under a file or entity of a task's review (shown by kule status and the Review tab)",
	PermFilesRead:   "read files in a task's copy (beneath the copy, never through a link; never the real folder or Kule's home)",
	PermCommands:    "add commands to the command palette and `kule ext run`",
	PermPanels:      "show panels of its own in the control room, in a sandboxed frame with no network",
	PermThemes:      "offer colour themes (checked #rrggbb colours for named parts only)",
	PermSettings:    "keep settings of its own, shown in Settings → Extensions",
	PermNotify:      "show a short notice to you",
	PermAgents:      "offer agent profiles, each of which waits for its own approval (kule agents approve)",
	PermMCP:         "offer MCP servers to agents, each of which waits for its own approval and runs in the task's sandbox",
}

// Describe is a permission in a person's words, or "" for an unknown one.
func (p Permission) Describe() string { return Permissions[p] }

// Manifest is extension.json.
type Manifest struct {
	// ID is publisher.name, lower-case letters, digits and '-': "me.hello".
	ID string `json:"id"`
	// Name is shown to people.
	Name string `json:"name"`
	// Version is MAJOR.MINOR.PATCH.
	Version     string `json:"version"`
	Description string `json:"description,omitempty"`
	// Main is the script the host runs, a path in the package; "main.js".
	Main        string       `json:"main,omitempty"`
	Permissions []Permission `json:"permissions"`
	Commands    []Command    `json:"commands,omitempty"`
	Panels      []Panel      `json:"panels,omitempty"`
	Themes      []Theme      `json:"themes,omitempty"`
	Settings    []Setting    `json:"settings,omitempty"`
	// ReviewNotes says main's review-notes hook is to be called for each
	// review (it needs review.notes and review.read).
	ReviewNotes bool        `json:"review_notes,omitempty"`
	Agents      []Agent     `json:"agents,omitempty"`
	MCPServers  []MCPServer `json:"mcp_servers,omitempty"`
}

// Command is a command the extension adds: `kule ext run ID.COMMAND`.
type Command struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

// Panel is a page of the extension's own shown in the control room.
type Panel struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	// Page is an HTML file in the package.
	Page string `json:"page"`
}

// Theme is a colour theme: a .kule-theme.json file in the package.
type Theme struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	File  string `json:"file"`
}

// Setting is one setting of the extension's own.
type Setting struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	// Type is "string", "bool" or "number".
	Type    string `json:"type"`
	Default any    `json:"default,omitempty"`
}

// Agent is an agent profile the extension offers: a TOML file in the
// package, in the shape of agents.toml's profiles. It waits for its own
// approval.
type Agent struct {
	Name string `json:"name"`
	File string `json:"file"`
}

// MCPServer is an MCP server the extension offers to agents: a command run
// inside the task's sandbox. It waits for its own approval.
type MCPServer struct {
	Name    string   `json:"name"`
	Command []string `json:"command"`
}

// Compiled at their first use: a program that links the package but reads
// no manifest (every kule command) does not pay for them at start.
var (
	idRE      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,30}\.[a-z0-9][a-z0-9-]{0,30}$`) })
	partRE    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`) })
	versionRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(0|[1-9][0-9]{0,5})\.(0|[1-9][0-9]{0,5})\.(0|[1-9][0-9]{0,5})$`)
	})
)

// ParseManifest reads extension.json strictly: an unknown key, an unknown
// permission, a contribution whose permission is not asked for, or a file
// name that is not a clean package path is an error.
func ParseManifest(data []byte) (*Manifest, error) {
	if len(data) > MaxManifestSize {
		return nil, fmt.Errorf("%w: %s is %d bytes, more than the %d allowed", ErrManifest, ManifestName, len(data), MaxManifestSize)
	}
	var m Manifest
	if err := decodeStrict(data, &m); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrManifest, ManifestName, err)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// Validate checks m's rules (ParseManifest calls it).
func (m *Manifest) Validate() error {
	bad := func(f string, a ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrManifest, ManifestName, fmt.Sprintf(f, a...))
	}
	if !idRE().MatchString(m.ID) {
		return bad("id %q is not publisher.name (lower-case letters, digits and '-', each part at most 31)", m.ID)
	}
	if !versionRE().MatchString(m.Version) {
		return bad("version %q is not MAJOR.MINOR.PATCH", m.Version)
	}
	if m.Name == "" || len(m.Name) > 80 || !printable(m.Name) {
		return bad("name must be 1 to 80 printable characters")
	}
	if len(m.Description) > 500 || !printable(m.Description) {
		return bad("description must be at most 500 printable characters")
	}
	if m.Main == "" {
		m.Main = "main.js"
	}
	if err := CheckPath(m.Main); err != nil {
		return bad("main: %v", err)
	}
	asked := map[Permission]bool{}
	for _, p := range m.Permissions {
		if _, ok := Permissions[p]; !ok {
			return fmt.Errorf("%w: %s asks for %q, which is not a permission Kule knows (known: %s); the package is refused", ErrPermission, ManifestName, p, strings.Join(PermissionNames(), ", "))
		}
		if asked[p] {
			return bad("permission %q is asked for twice", p)
		}
		asked[p] = true
	}
	need := func(what string, n int, p Permission) error {
		if n > 0 && !asked[p] {
			return fmt.Errorf("%w: %s adds %s but does not ask for %q", ErrPermission, ManifestName, what, p)
		}
		return nil
	}
	for _, e := range []error{
		need("commands", len(m.Commands), PermCommands),
		need("panels", len(m.Panels), PermPanels),
		need("themes", len(m.Themes), PermThemes),
		need("settings", len(m.Settings), PermSettings),
		need("agent profiles", len(m.Agents), PermAgents),
		need("MCP servers", len(m.MCPServers), PermMCP),
	} {
		if e != nil {
			return e
		}
	}
	if m.ReviewNotes && (!asked[PermReviewNotes] || !asked[PermReviewRead]) {
		return fmt.Errorf("%w: %s has a review-notes hook but does not ask for both %q and %q", ErrPermission, ManifestName, PermReviewRead, PermReviewNotes)
	}
	ids := map[string]bool{}
	part := func(kind, id, title string) error {
		if !partRE().MatchString(id) {
			return bad("%s id %q is not lower-case letters, digits and '-' (at most 32)", kind, id)
		}
		if ids[kind+"/"+id] {
			return bad("%s %q is named twice", kind, id)
		}
		ids[kind+"/"+id] = true
		if title == "" || len(title) > 80 || !printable(title) {
			return bad("%s %q: title must be 1 to 80 printable characters", kind, id)
		}
		return nil
	}
	for _, c := range m.Commands {
		if err := part("command", c.ID, c.Title); err != nil {
			return err
		}
	}
	for _, p := range m.Panels {
		if err := part("panel", p.ID, p.Title); err != nil {
			return err
		}
		if err := CheckPath(p.Page); err != nil || !strings.HasSuffix(p.Page, ".html") {
			return bad("panel %q: page %q must be an .html file in the package", p.ID, p.Page)
		}
	}
	for _, t := range m.Themes {
		if err := part("theme", t.ID, t.Title); err != nil {
			return err
		}
		if err := CheckPath(t.File); err != nil || !strings.HasSuffix(t.File, ".kule-theme.json") {
			return bad("theme %q: file %q must be a .kule-theme.json file in the package", t.ID, t.File)
		}
	}
	for _, s := range m.Settings {
		if err := part("setting", s.ID, s.Title); err != nil {
			return err
		}
		ok := false
		switch s.Type {
		case "string":
			_, ok = s.Default.(string)
		case "bool":
			_, ok = s.Default.(bool)
		case "number":
			_, ok = s.Default.(float64)
		default:
			return bad("setting %q: type %q is not string, bool or number", s.ID, s.Type)
		}
		if s.Default != nil && !ok {
			return bad("setting %q: default is not a %s", s.ID, s.Type)
		}
	}
	for _, a := range m.Agents {
		if err := part("agent", a.Name, a.Name); err != nil {
			return err
		}
		if err := CheckPath(a.File); err != nil || !strings.HasSuffix(a.File, ".toml") {
			return bad("agent %q: file %q must be a .toml file in the package", a.Name, a.File)
		}
	}
	for _, s := range m.MCPServers {
		if err := part("mcp server", s.Name, s.Name); err != nil {
			return err
		}
		if len(s.Command) == 0 || s.Command[0] == "" {
			return bad("mcp server %q has no command", s.Name)
		}
	}
	return nil
}

// Has reports whether m asks for p.
func (m *Manifest) Has(p Permission) bool {
	for _, q := range m.Permissions {
		if q == p {
			return true
		}
	}
	return false
}

// Command returns m's command id, if it has one.
func (m *Manifest) Command(id string) (Command, bool) {
	for _, c := range m.Commands {
		if c.ID == id {
			return c, true
		}
	}
	return Command{}, false
}

// PermissionNames lists the known permissions, sorted.
func PermissionNames() []string {
	var out []string
	for p := range Permissions {
		out = append(out, string(p))
	}
	sort.Strings(out)
	return out
}

func printable(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029' || (r >= '\u202a' && r <= '\u202e') || (r >= '\u2066' && r <= '\u2069') {
			return false
		}
	}
	return true
}

// decodeStrict decodes one JSON object into v: unknown keys and anything
// after the object are errors.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("more after the object")
	}
	return nil
}
