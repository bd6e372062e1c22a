// Package agents keeps the profiles of the agents Kule can run over ACP: the
// built-in ones and a person's own ($KULE_HOME/agents.toml), the checks that
// refuse a profile opening too much, the approvals that pin each person's
// profile by hash, the ACP registry a profile can be drafted from, and the
// once-per-version install of an npx agent.
package agents

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/kulehq/kule/kernel/internal/atomicfile"
)

// Errors a caller can test for.
var (
	ErrNoAgent     = errors.New("agents: no such agent")
	ErrInvalid     = errors.New("agents: profile refused")
	ErrNotApproved = errors.New("agents: profile not approved")
	ErrDuplicate   = errors.New("agents: two profiles with one name")
	ErrNotInstall  = errors.New("agents: cannot install")
	ErrRegistry    = errors.New("agents: registry")
	ErrNode        = errors.New("agents: this machine's node is too old")
)

// Profile says how to start one agent and what it may open in the sandbox.
// Paths in State, Login and ReadOnly are relative to the person's home.
type Profile struct {
	Name        string              `toml:"name" json:"name"`
	Description string              `toml:"description,omitempty" json:"description,omitempty"`
	Command     []string            `toml:"command" json:"command"`
	State       []string            `toml:"state,omitempty" json:"state,omitempty"`               // what it may write, under ~
	Login       []string            `toml:"login,omitempty" json:"login,omitempty"`               // its login; hidden from every other agent
	ReadOnly    []string            `toml:"read_only,omitempty" json:"read_only,omitempty"`       // its settings, hooks, instructions: read-only inside
	Keys        map[string][]string `toml:"keys,omitempty" json:"keys,omitempty"`                 // variable → hosts its key is put into by the proxy
	Hosts       []string            `toml:"hosts,omitempty" json:"hosts,omitempty"`               // HTTPS hosts it reaches while it runs
	PassEnv     []string            `toml:"pass_env,omitempty" json:"pass_env,omitempty"`         // variables passed as they are
	Env         map[string]string   `toml:"env,omitempty" json:"env,omitempty"`                   // variables set for it
	OwnHome     string              `toml:"own_home,omitempty" json:"own_home,omitempty"`         // HOME, CODEX_HOME, CLAUDE_CONFIG_DIR: a home of its own in Kule, one for each task
	HomeOf      string              `toml:"home_of,omitempty" json:"home_of,omitempty"`           // the folder under ~ that own_home stands for (".codex"); "" for ~ itself
	SelfWritten []string            `toml:"self_written,omitempty" json:"self_written,omitempty"` // parts of read_only the agent writes itself as it starts (its bundled skills): taken out after each run like the rest, without a word
	Mode        string              `toml:"mode,omitempty" json:"mode,omitempty"`                 // the ACP session mode to set (session/set_mode)
	Auth        string              `toml:"auth,omitempty" json:"auth,omitempty"`                 // the ACP auth method to use when the agent asks for a login
	EndpointEnv string              `toml:"endpoint_env,omitempty" json:"endpoint_env,omitempty"` // the variable that points it at another endpoint (ANTHROPIC_BASE_URL); kule agents set NAME base_url=URL sets it
	Node        int                 `toml:"node,omitzero" json:"node,omitempty"`                  // the oldest Node major version its package runs on (22); the installed package's engines.node is read too
	EndpointKey string              `toml:"endpoint_key,omitempty" json:"endpoint_key,omitempty"` // when set, endpoint_env holds a JSON object with the URL under this key (Codex's CODEX_CONFIG: openai_base_url)

	// Builtin is true for the profiles that ship with Kule; Source names
	// the file a profile came from.
	Builtin bool   `toml:"-" json:"-"`
	Source  string `toml:"-" json:"-"`
	// Setting says what `kule agents set` changed ("base_url=…"), "" when
	// nothing: a built-in with a setting runs once approved, as a
	// person's profile does.
	Setting string   `toml:"-" json:"-"`
	unset   *Profile // the profile before its setting, to set it anew
}

// checkNode, when false, lets Launch start a package on a Node older than
// it needs (the tests' knob).
var checkNode = true

type profileFile struct {
	Agent []Profile `toml:"agent"`
}

// Hash is the sha256 of the profile's canonical JSON: what an approval pins.
// Any change to anything the profile opens changes it.
func (p Profile) Hash() string {
	b, _ := json.Marshal(p) // struct order, map keys sorted: canonical
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// TOML renders the profile in the format agents.toml uses.
func (p Profile) TOML() string {
	var b bytes.Buffer
	enc := toml.NewEncoder(&b)
	enc.Indent = ""
	_ = enc.Encode(profileFile{Agent: []Profile{p}})
	return b.String()
}

// Parse reads a file of [[agent]] tables. Unknown keys are refused: a typo in
// a profile must not quietly open nothing, or something else.
func Parse(data []byte, source string) ([]Profile, error) {
	var f profileFile
	md, err := toml.Decode(string(data), &f)
	if err != nil {
		return nil, fmt.Errorf("agents: %s: %w", source, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		keys := make([]string, len(und))
		for i, k := range und {
			keys[i] = k.String()
		}
		return nil, fmt.Errorf("%w: %s: unknown keys %s (the keys are name, description, command, state, login, read_only, keys, hosts, pass_env, env, own_home, home_of, self_written, node, mode, auth, endpoint_env, endpoint_key)", ErrInvalid, source, strings.Join(keys, ", "))
	}
	for i := range f.Agent {
		f.Agent[i].Source = source
	}
	return f.Agent, nil
}

// Set is every profile Kule knows: built-ins first, then the person's.
// A profile that fails its checks is kept in Problems, never hiding others.
type Set struct {
	Profiles []Profile
	Problems map[string]error // by name ("" when a file as a whole failed)
	Skipped  []error          // profiles dropped because their name was taken
	Personal string           // the path of agents.toml
}

// PersonalPath is $KULE_HOME/agents.toml.
func PersonalPath(kuleHome string) string { return filepath.Join(kuleHome, "agents.toml") }

// Load reads the built-in profiles (each *.toml in builtins) and the
// person's agents.toml in kuleHome (missing is fine), and checks each.
func Load(builtins fs.FS, kuleHome string) (*Set, error) {
	return LoadWith(builtins, kuleHome, nil)
}

// LoadWith is Load with more profiles after the person's: approved
// extensions' (kernel.Agents hands them). They are checked, named and
// approved as a person's are (never built-in), and their names come last:
// one cannot take a built-in's or a person's name.
func LoadWith(builtins fs.FS, kuleHome string, extra []Profile) (*Set, error) {
	s := &Set{Problems: map[string]error{}, Personal: PersonalPath(kuleHome)}
	names, err := fs.Glob(builtins, "*.toml")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	for _, n := range names {
		b, err := fs.ReadFile(builtins, n)
		if err != nil {
			return nil, err
		}
		ps, err := Parse(b, "built-in "+n)
		if err != nil {
			return nil, err // a broken built-in is Kule's bug
		}
		for _, p := range ps {
			p.Builtin = true
			s.Profiles = append(s.Profiles, p)
		}
	}
	b, err := os.ReadFile(s.Personal)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		s.Problems[""] = fmt.Errorf("agents: %w", err)
	default:
		ps, err := Parse(b, s.Personal)
		if err != nil {
			s.Problems[""] = err
		}
		s.Profiles = append(s.Profiles, ps...)
	}
	for _, p := range extra {
		p.Builtin, p.Setting, p.unset = false, "", nil
		s.Profiles = append(s.Profiles, p)
	}
	seen := map[string]bool{}
	kept := s.Profiles[:0]
	for _, p := range s.Profiles {
		if seen[p.Name] {
			s.Skipped = append(s.Skipped, fmt.Errorf("%w: %q in %s is ignored (the name is taken; rename it)", ErrDuplicate, p.Name, p.Source))
			continue
		}
		seen[p.Name] = true
		kept = append(kept, p)
	}
	s.Profiles = kept
	if settings, err := ReadSettings(kuleHome); err != nil {
		s.Problems[""] = err
	} else {
		for name, st := range settings {
			i := slices.IndexFunc(s.Profiles, func(p Profile) bool { return p.Name == name })
			if i < 0 {
				s.Skipped = append(s.Skipped, fmt.Errorf("%w: %s names %q, which is no profile (kule agents set %s base_url= takes it back)", ErrSetting, SettingsPath(kuleHome), name, name))
				continue
			}
			p, err := applySetting(s.Profiles[i], st, kuleHome)
			if err != nil {
				s.Problems[name] = err
			}
			s.Profiles[i] = p
		}
	}
	var shipped []Profile
	for _, p := range s.Profiles {
		if p.Builtin {
			shipped = append(shipped, p)
		}
	}
	for _, p := range s.Profiles {
		if p.Builtin && p.Setting == "" {
			// A built-in is checked against the built-ins alone: a
			// person's profile that overlaps one is that profile's
			// problem (Validate names the built-in), never the built-in's,
			// which would stop every command.
			if err := Validate(p, shipped); err != nil {
				return nil, err
			}
			continue
		}
		if err := Validate(p, s.Profiles); err != nil {
			s.Problems[p.Name] = err
		}
	}
	return s, nil
}

// Get returns the profile called name, or ErrNoAgent (naming those there are).
func (s *Set) Get(name string) (Profile, error) {
	for _, p := range s.Profiles {
		if p.Name == name {
			if err := s.Problems[name]; err != nil {
				return p, err
			}
			return p, nil
		}
	}
	var names []string
	for _, p := range s.Profiles {
		names = append(names, p.Name)
	}
	return Profile{}, fmt.Errorf("%w: %q (there are: %s; `kule agents registry` lists more)", ErrNoAgent, name, strings.Join(names, ", "))
}

// CheckAppend returns why AppendPersonal would refuse p, nil if it would
// take it: `agents add --dry-run` and `add` say the same.
func CheckAppend(p Profile, all []Profile) error {
	for _, q := range all {
		if q.Name == p.Name {
			return fmt.Errorf("%w: %q is already a profile (%s)", ErrDuplicate, p.Name, q.Source)
		}
	}
	return Validate(p, all)
}

// AppendPersonal adds a profile to agents.toml (creating it), after the
// same checks Load makes. The profile then waits for approval.
func AppendPersonal(kuleHome string, p Profile, all []Profile) error {
	if err := CheckAppend(p, all); err != nil {
		return err
	}
	path := PersonalPath(kuleHome)
	if err := os.MkdirAll(kuleHome, 0o700); err != nil {
		return fmt.Errorf("agents: %w", err)
	}
	// The file is written anew with the profile at its end, so a crash
	// leaves it as it was or with the whole profile, never half of one. A
	// person's link (agents.toml kept with their dotfiles) is followed and
	// the file it names is the one replaced, as an append wrote through it.
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	old, err := os.ReadFile(path)
	perm := os.FileMode(0o600)
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	} else if fi, serr := os.Stat(path); serr == nil {
		perm = fi.Mode().Perm()
	}
	if err != nil {
		return fmt.Errorf("agents: %w", err)
	}
	if err := atomicfile.Write(path, append(old, []byte("\n"+p.TOML())...), perm); err != nil {
		return fmt.Errorf("agents: write %s: %w; it is as it was", path, err)
	}
	return nil
}

// OwnRel is where rel, a path under ~ the profile names, lies in the
// agent's own home: rel itself when own_home stands for ~, rel below
// home_of otherwise; false when it lies outside what own_home stands for.
func (p Profile) OwnRel(rel string) (string, bool) {
	c, err := homePath(rel)
	if err != nil {
		return "", false
	}
	if p.HomeOf == "" {
		return c, true
	}
	base, err := homePath(p.HomeOf)
	if err != nil {
		return "", false
	}
	r, ok := strings.CutPrefix(c, base+"/")
	return r, ok
}
