package agents

import (
	"encoding/json"
	"fmt"
	"runtime"
	"sort"
	"strings"
)

// Registry is the ACP agent registry:
// {"version":"1.0.0","agents":[{id,name,version,description,distribution}]}.
type Registry struct {
	Version string          `json:"version"`
	Agents  []RegistryEntry `json:"agents"`
}

// RegistryEntry is one agent the registry lists.
type RegistryEntry struct {
	ID           string       `json:"id"`
	Name         string       `json:"name"`
	Version      string       `json:"version"`
	Description  string       `json:"description"`
	Repository   string       `json:"repository,omitempty"`
	License      string       `json:"license,omitempty"`
	Distribution Distribution `json:"distribution"`
}

// Distribution says how an agent is fetched. Kinds Kule does not know yet
// are kept in Other.
type Distribution struct {
	Npx    *PackageDist               `json:"npx,omitempty"`
	Uvx    *PackageDist               `json:"uvx,omitempty"`
	Binary map[string]BinaryDist      `json:"binary,omitempty"`
	Other  map[string]json.RawMessage `json:"-"`
}

// PackageDist is an npx or uvx distribution.
type PackageDist struct {
	Package string            `json:"package"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
}

// BinaryDist is an archive for one platform.
type BinaryDist struct {
	Archive string            `json:"archive"`
	Cmd     string            `json:"cmd"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
}

// UnmarshalJSON keeps distribution kinds Kule does not know.
func (d *Distribution) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	type plain Distribution
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*d = Distribution(p)
	for k, v := range m {
		if k != "npx" && k != "uvx" && k != "binary" {
			if d.Other == nil {
				d.Other = map[string]json.RawMessage{}
			}
			d.Other[k] = v
		}
	}
	return nil
}

// ParseRegistry reads the registry's JSON. Entries are sorted by id.
func ParseRegistry(b []byte) (*Registry, error) {
	var r Registry
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrRegistry, err)
	}
	if !strings.HasPrefix(r.Version, "1.") {
		return nil, fmt.Errorf("%w: format version %q, Kule reads 1.x", ErrRegistry, r.Version)
	}
	sort.Slice(r.Agents, func(i, j int) bool { return r.Agents[i].ID < r.Agents[j].ID })
	return &r, nil
}

// Find returns the entry with this id (or, failing that, this name).
func (r *Registry) Find(name string) (RegistryEntry, bool) {
	for _, e := range r.Agents {
		if e.ID == name {
			return e, true
		}
	}
	for _, e := range r.Agents {
		if strings.EqualFold(e.Name, name) {
			return e, true
		}
	}
	return RegistryEntry{}, false
}

// Platform is the registry's name for this machine: linux-x86_64, darwin-aarch64, …
func Platform() string {
	arch := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[runtime.GOARCH]
	if arch == "" {
		arch = runtime.GOARCH
	}
	return runtime.GOOS + "-" + arch
}

// How says in a few words how an entry is fetched.
func (e RegistryEntry) How() string {
	switch {
	case e.Distribution.Npx != nil:
		return "npx " + e.Distribution.Npx.Package
	case e.Distribution.Uvx != nil:
		return "uvx " + e.Distribution.Uvx.Package
	case e.Distribution.Binary != nil:
		if _, ok := e.Distribution.Binary[Platform()]; ok {
			return "binary for " + Platform()
		}
		return "binary (none for " + Platform() + ")"
	}
	return "unknown distribution"
}

// Draft makes a profile from a registry entry. It opens nothing but the
// command: state, login and hosts are for the person to fill in (or for
// `kule agents try` to find), and the profile waits for approval. Notes
// say what the person must still do.
func Draft(e RegistryEntry) (Profile, []string, error) {
	p := Profile{Name: strings.ToLower(e.ID), Description: e.Name + ": " + e.Description}
	var notes []string
	var env map[string]string
	switch d := e.Distribution; {
	case d.Npx != nil:
		p.Command = append([]string{"npx", "-y", d.Npx.Package}, d.Npx.Args...)
		env = d.Npx.Env
	case d.Uvx != nil:
		pkg := d.Uvx
		spec := pkg.Package
		if name, ver, ok := strings.Cut(spec, "@"); ok && !strings.HasPrefix(spec, "@") {
			spec = name + "==" + ver
		}
		p.Command = append([]string{"uvx", spec}, pkg.Args...)
		env = pkg.Env
		notes = append(notes, "uvx agents are not installed by Kule yet: uv must be on PATH")
	case d.Binary != nil:
		b, ok := d.Binary[Platform()]
		if !ok {
			return Profile{}, nil, fmt.Errorf("%w: %s ships no binary for %s", ErrRegistry, e.ID, Platform())
		}
		cmd := strings.TrimPrefix(b.Cmd, "./")
		p.Command = append([]string{cmd}, b.Args...)
		env = b.Env
		notes = append(notes, fmt.Sprintf("install %s %s yourself from %s so that %q is on PATH (Kule does not download archives yet)", e.Name, e.Version, b.Archive, cmd))
	default:
		return Profile{}, nil, fmt.Errorf("%w: %s: no distribution Kule knows", ErrRegistry, e.ID)
	}
	if len(env) > 0 {
		p.Env = map[string]string{}
		for k, v := range env {
			p.Env[k] = v
		}
	}
	notes = append(notes, "fill in state (what it writes under ~), login, keys and hosts; then `kule agents approve "+p.Name+"`")
	return p, notes, nil
}
