package agents

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
)

// Status is what the first screen of `kule agents` says of one agent.
type Status struct {
	Profile   Profile
	Problem   error    // the profile is refused (it cannot start until fixed)
	Approved  bool     // a built-in, or a person's profile pinned at this hash
	Missing   []string // what to install before it can start
	Package   *Package // the npx package it runs, if any
	Installed bool     // that package is installed already
	Auth      []string // how it could log in here: keys set, logins found
}

// CanStart reports whether the agent can start here now (an npx package
// not yet installed is installed at the first run).
func (s Status) CanStart() bool { return s.Problem == nil && s.Approved && len(s.Missing) == 0 }

// CheckOptions are what Check needs beyond the profiles.
type CheckOptions struct {
	KuleHome     string
	PackagesRoot string
	Home         string // the person's home (default the process's)
	// HasKey reports whether a key is found outside the environment (in
	// Kule's secrets store); nil: only the environment is looked at.
	HasKey func(name string) bool
	// Isolation lists what this machine lacks to run agents isolated
	// (empty: the sandbox works, or weaker isolation is accepted). Every
	// agent runs in the sandbox, so each then cannot start.
	Isolation []string
}

// Check looks at every profile: refused, approved, what is missing, how it
// would log in.
func Check(set *Set, o CheckOptions) []Status {
	home := o.Home
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	kuleHome, packagesRoot := o.KuleHome, o.PackagesRoot
	var out []Status
	for _, p := range set.Profiles {
		s := Status{Profile: p, Problem: set.Problems[p.Name]}
		for _, m := range o.Isolation {
			s.Missing = append(s.Missing, "the sandbox here lacks "+m+" (kule isolation says more)")
		}
		if s.Problem == nil {
			ok, err := Approved(kuleHome, p)
			s.Approved, s.Problem = ok, err
		}
		pkg, isPkg, err := PackageOf(p.Command)
		switch {
		case err != nil:
		case isPkg && pkg.Runner == "npx":
			s.Package = &pkg
			s.Installed = Installed(packagesRoot, pkg)
			for _, tool := range []string{"node", "npm"} {
				if _, err := exec.LookPath(tool); err != nil {
					s.Missing = append(s.Missing, tool+" (Debian: apt-get install nodejs npm; macOS: brew install node)")
				}
			}
		case isPkg:
			s.Package = &pkg
			if _, err := exec.LookPath(pkg.Runner); err != nil {
				s.Missing = append(s.Missing, pkg.Runner+" (uv: https://docs.astral.sh/uv)")
			}
		default:
			if _, err := exec.LookPath(p.Command[0]); err != nil {
				s.Missing = append(s.Missing, p.Command[0]+" on PATH")
			}
		}
		keys := make([]string, 0, len(p.Keys))
		for k := range p.Keys {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			switch {
			case os.Getenv(k) != "":
				s.Auth = append(s.Auth, k+" is set")
			case o.HasKey != nil && o.HasKey(k):
				s.Auth = append(s.Auth, k+" is in kule secrets")
			}
		}
		for _, l := range p.Login {
			if home != "" && p.OwnHome == "" {
				if _, err := os.Stat(filepath.Join(home, l)); err == nil {
					s.Auth = append(s.Auth, "login ~/"+l+" found")
				}
			}
		}
		out = append(out, s)
	}
	return out
}
