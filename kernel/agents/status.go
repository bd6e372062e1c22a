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

// Check looks at every profile: refused, approved, what is missing, how it
// would log in.
func Check(set *Set, kuleHome, packagesRoot string) []Status {
	home, _ := os.UserHomeDir()
	var out []Status
	for _, p := range set.Profiles {
		s := Status{Profile: p, Problem: set.Problems[p.Name]}
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
			if os.Getenv(k) != "" {
				s.Auth = append(s.Auth, k+" is set")
			}
		}
		for _, l := range p.Login {
			if home != "" {
				if _, err := os.Stat(filepath.Join(home, l)); err == nil {
					s.Auth = append(s.Auth, "login ~/"+l+" found")
				}
			}
		}
		out = append(out, s)
	}
	return out
}
