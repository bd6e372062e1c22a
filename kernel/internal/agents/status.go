package agents

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// nodeVersion is the major version of the node on PATH, 0 when unknown
// (asked once for each PATH).
var nodeVersion = func() int {
	path := os.Getenv("PATH")
	nodeMu.Lock()
	defer nodeMu.Unlock()
	if v, ok := nodeSeen[path]; ok {
		return v
	}
	v := 0
	if out, err := exec.Command("node", "--version").Output(); err == nil {
		v = majorOf(strings.TrimSpace(string(out)))
	}
	nodeSeen[path] = v
	return v
}

var (
	nodeMu   sync.Mutex
	nodeSeen = map[string]int{}
)

func majorOf(v string) int {
	v = strings.TrimPrefix(strings.TrimSpace(v), "v")
	n, err := strconv.Atoi(strings.SplitN(v, ".", 2)[0])
	if err != nil {
		return 0
	}
	return n
}

// NodeNeed says when p's package needs a newer Node than the one here —
// the profile's node, or the installed package's engines.node (">=22" and
// the like; other forms are not judged) — and "" otherwise. An agent
// started on an older Node dies with a raw stack trace, so the first
// screen and the run both refuse it with this.
func NodeNeed(p Profile, root string) string {
	pkg, ok, err := PackageOf(p.Command)
	if err != nil || !ok || pkg.Runner != "npx" {
		return ""
	}
	if w := nodeWarning(root, pkg, nodeVersion); w != "" {
		return w
	}
	if got := nodeVersion(); p.Node > 0 && got > 0 && got < p.Node {
		return fmt.Sprintf("node %d or newer: %s@%s needs it and this machine has node %d (nodejs.org, or your distribution's backports)", p.Node, pkg.Name, pkg.Version, got)
	}
	return ""
}

// nodeWarning says when the installed package's engines.node asks for a
// newer Node than the one here (">=22" and the like; other forms are not
// judged), "" otherwise.
func nodeWarning(root string, pkg Package, have func() int) string {
	b, err := os.ReadFile(filepath.Join(PackageDir(root, pkg), "node_modules", filepath.FromSlash(pkg.Name), "package.json"))
	if err != nil {
		return ""
	}
	var pj struct {
		Engines struct {
			Node string `json:"node"`
		} `json:"engines"`
	}
	if json.Unmarshal(b, &pj) != nil {
		return ""
	}
	want := pj.Engines.Node
	rest, ok := strings.CutPrefix(strings.TrimSpace(want), ">=")
	if !ok || strings.ContainsAny(rest, " |<") {
		return ""
	}
	need, got := majorOf(rest), have()
	if need == 0 || got == 0 || got >= need {
		return ""
	}
	return fmt.Sprintf("node %d or newer: %s@%s asks for node %s and this machine has node %d, on which it would die as it starts", need, pkg.Name, pkg.Version, want, got)
}

// Status is what the first screen of `kule agents` says of one agent.
type Status struct {
	Profile   Profile
	Problem   error    // the profile is refused (it cannot start until fixed)
	Approved  bool     // a built-in, or a person's profile pinned at this hash
	Missing   []string // what to install before it can start
	Package   *Package // the npx package it runs, if any
	Installed bool     // that package is installed already
	Auth      []string // how it could log in here: keys set, logins found
	Warnings  []string // what may stop it at start though nothing is missing (a Node older than its package asks for)
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
			if w := NodeNeed(p, packagesRoot); w != "" {
				s.Missing = append(s.Missing, w)
			}
			if UnderTmp(packagesRoot) {
				s.Missing = append(s.Missing, fmt.Sprintf("the sandbox replaces %s with each task's own, and its package would lie in %s there (the agent would die with \"Cannot find module\"): set XDG_DATA_HOME to a folder outside %s", SandboxTmp, packagesRoot, SandboxTmp))
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
		if home != "" && UnderTmp(home) {
			s.Warnings = append(s.Warnings, fmt.Sprintf("your home %s is under %s, which the sandbox replaces with each task's own: inside it the agent finds no home of yours (its own home, own_home, is kept elsewhere)", home, SandboxTmp))
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
			if p.OwnHome != "" && packagesRoot != "" {
				// A login made in a run is kept in the home Kule keeps
				// for the agent; one of the person's is placed in the
				// run's home (agentrun).
				if rel, ok := p.OwnRel(l); ok {
					if _, err := os.Stat(filepath.Join(filepath.Dir(packagesRoot), "agent-homes", p.Name, filepath.FromSlash(rel))); err == nil {
						s.Auth = append(s.Auth, "its login made in kule found")
						continue
					}
				} else {
					continue
				}
			}
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
