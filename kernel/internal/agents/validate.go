package agents

import (
	"fmt"
	"net"
	"net/netip"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/kulehq/kule/kernel/internal/credentials"
	"github.com/kulehq/kule/kernel/internal/lazyre"
)

// Hidden lists what Kule hides from every sandbox (paths under ~): keys,
// logins and tokens of other tools (credentials.Home, the list the sandbox
// hides). No profile may open them.
var Hidden = credentials.Home

// KuleOwn is Kule's own home and packages: no agent writes or reads them.
var KuleOwn = []string{".kule", ".local/share/kule", ".config/kule"}

// Personal is the directories a person keeps their life in: a profile may
// name something inside one of them, never one whole.
var Personal = []string{
	"Documents", "Desktop", "Downloads", "Pictures", "Music", "Videos", "Public", "Templates",
	"src", "code", "projects", "work", "dev", "go", "bin",
	".config", ".local", ".local/share", ".local/state", ".local/bin", ".cache",
}

var (
	nameRE = lazyre.New(`^[a-z0-9][a-z0-9._-]{0,62}$`)
	varRE  = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*$`)
	hostRE = lazyre.New(`^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$|^localhost$`)
	// An exact version: 1.2.3, 1.2.3-beta.1, 1.2.3+build. No ranges, no tags.
	exactRE   = lazyre.New(`^v?\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)
	modeRE    = lazyre.New(`^[A-Za-z0-9._-]{1,64}$`)
	pkgNameRE = lazyre.New(`^(@[A-Za-z0-9][A-Za-z0-9._~-]*/)?[A-Za-z0-9][A-Za-z0-9._~-]*$`)
	// Variables a profile may never set or pass: they change what runs.
	dangerousEnv = map[string]bool{"LD_PRELOAD": true, "LD_LIBRARY_PATH": true, "LD_AUDIT": true, "NODE_OPTIONS": true, "PATH": true, "HOME": true, "BASH_ENV": true, "ENV": true, "PYTHONPATH": true, "PYTHONSTARTUP": true, "KULE_HOME": true, "SSH_AUTH_SOCK": true, "GIT_ASKPASS": true, "SUDO_ASKPASS": true}
)

func refuse(p Profile, format string, args ...any) error {
	return fmt.Errorf("%w: %s (%s): %s", ErrInvalid, p.Name, p.Source, fmt.Sprintf(format, args...))
}

// within reports whether a is b or lies below it (slash paths).
func within(a, b string) bool { return a == b || strings.HasPrefix(a, b+"/") }

// overlaps reports whether one of a and b contains the other.
func overlaps(a, b string) bool { return within(a, b) || within(b, a) }

// Validate checks one profile against the rules, and against the others in
// all (its state and login may not touch another agent's).
func Validate(p Profile, all []Profile) error {
	if !nameRE.MatchString(p.Name) {
		return refuse(p, "the name %q must be lower-case letters, digits, '.', '_' or '-'", p.Name)
	}
	if len(p.Command) == 0 || p.Command[0] == "" {
		return refuse(p, "no command")
	}
	if err := checkPackageRunner(p); err != nil {
		return err
	}
	type named struct{ field, path string }
	var paths []named
	for _, f := range []struct {
		field string
		list  []string
	}{{"state", p.State}, {"login", p.Login}, {"read_only", p.ReadOnly}} {
		for _, raw := range f.list {
			clean, err := homePath(raw)
			if err != nil {
				return refuseOpening(p, f.field, raw, ": %v", err)
			}
			paths = append(paths, named{f.field, clean})
		}
	}
	for _, n := range paths {
		for _, h := range Hidden {
			if overlaps(n.path, h) {
				return refuseOpening(p, n.field, n.path, "would open ~/%s, whose credentials Kule hides from every agent", h)
			}
		}
		for _, k := range KuleOwn {
			if overlaps(n.path, k) {
				return refuseOpening(p, n.field, n.path, "would open Kule's own home ~/%s", k)
			}
		}
		for _, d := range Personal {
			if n.path == d {
				return refuseOpening(p, n.field, n.path, "is a whole personal directory; name the files or the subdirectory the agent needs")
			}
		}
	}
	for _, q := range all {
		if q.Name == p.Name {
			continue
		}
		for _, n := range paths {
			if n.field == "read_only" {
				continue
			}
			for _, o := range append(append([]string(nil), q.State...), q.Login...) {
				if c, err := homePath(o); err == nil && overlaps(n.path, c) {
					return refuseOpening(p, n.field, n.path, "overlaps ~/%s, which belongs to the agent %q", c, q.Name)
				}
			}
		}
	}
	for _, h := range p.Hosts {
		if _, _, ok := Endpoint(h); ok {
			continue
		}
		if !hostRE.MatchString(h) {
			return refuse(p, "host %q is not a host name or a host:port endpoint (no scheme, path or bare wildcard; an address needs its port: \"127.0.0.1:11434\")", h)
		}
	}
	for v, hosts := range p.Keys {
		if !varRE.MatchString(v) || dangerousEnv[v] {
			return refuse(p, "keys: %q cannot hold a key", v)
		}
		if len(hosts) == 0 {
			return refuse(p, "keys: %s names no host its key may go to", v)
		}
		for _, h := range hosts {
			if _, _, ok := Endpoint(h); ok {
				continue
			}
			if !hostRE.MatchString(h) || strings.HasPrefix(h, "*.") {
				return refuse(p, "keys: %s: %q must be one exact host name or a host:port endpoint", v, h)
			}
		}
	}
	for _, v := range p.PassEnv {
		if !varRE.MatchString(v) || dangerousEnv[v] {
			return refuse(p, "pass_env: %q may not be passed", v)
		}
		if _, ok := p.Keys[v]; ok {
			return refuse(p, "pass_env: %s is a key; keys never reach the agent as they are", v)
		}
		up := strings.ToUpper(v)
		for _, w := range []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL"} {
			if strings.Contains(up, w) {
				return refuse(p, "pass_env: %s looks like a secret; put it under keys so the proxy adds it and the agent never holds it", v)
			}
		}
	}
	for v := range p.Env {
		if !varRE.MatchString(v) || dangerousEnv[v] {
			return refuse(p, "env: %q may not be set", v)
		}
		if _, ok := p.Keys[v]; ok {
			return refuse(p, "env: %s is a key", v)
		}
	}
	if v := p.EndpointEnv; v != "" {
		if !varRE.MatchString(v) || dangerousEnv[v] || IsProxyVar(v) {
			return refuse(p, "endpoint_env: %q cannot point the agent at an endpoint", v)
		}
		if _, ok := p.Keys[v]; ok {
			return refuse(p, "endpoint_env: %s is a key", v)
		}
	}
	if p.EndpointKey != "" && (p.EndpointEnv == "" || !varRE.MatchString(p.EndpointKey)) {
		return refuse(p, "endpoint_key: %q needs endpoint_env, and is a name of letters, digits and '_'", p.EndpointKey)
	}
	if p.Mode != "" && !modeRE.MatchString(p.Mode) {
		return refuse(p, "mode %q is not an ACP mode id", p.Mode)
	}
	if p.Auth != "" && !modeRE.MatchString(p.Auth) {
		return refuse(p, "auth %q is not an ACP auth method id", p.Auth)
	}
	switch p.OwnHome {
	case "", "HOME", "CODEX_HOME", "CLAUDE_CONFIG_DIR", "GEMINI_CLI_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME":
	default:
		return refuse(p, "own_home %q: it may be HOME, CODEX_HOME, CLAUDE_CONFIG_DIR, GEMINI_CLI_HOME, XDG_CONFIG_HOME or XDG_DATA_HOME", p.OwnHome)
	}
	for _, sw := range p.SelfWritten {
		c, err := homePath(sw)
		if err != nil {
			return refuse(p, "self_written %q: %v", sw, err)
		}
		if !slices.ContainsFunc(p.ReadOnly, func(ro string) bool { r, err := homePath(ro); return err == nil && within(c, r) }) {
			return refuse(p, "self_written %q lies in none of read_only", sw)
		}
	}
	if p.Node < 0 || p.Node > 999 {
		return refuse(p, "node %d is not a Node major version", p.Node)
	}
	if p.HomeOf != "" {
		if p.OwnHome == "" {
			return refuse(p, "home_of says what own_home stands for; it needs own_home")
		}
		if _, err := homePath(p.HomeOf); err != nil {
			return refuse(p, "home_of %q: %v", p.HomeOf, err)
		}
	}
	return nil
}

// Endpoint reads a profile host that names one endpoint, host:port: a host
// name ("localhost", "llm.corp.example"), an IPv4 address or a bracketed
// IPv6 one, and a port from 1 to 65535. A model on this machine or the
// person's network is named this way: the proxy dials such an endpoint on
// loopback or a private network because it is named, and no other port.
func Endpoint(s string) (host string, port int, ok bool) {
	h, ps, err := net.SplitHostPort(s)
	if err != nil || ps == "" || ps[0] == '0' || len(ps) > 5 {
		return "", 0, false
	}
	n, err := strconv.Atoi(ps)
	if err != nil || n < 1 || n > 65535 {
		return "", 0, false
	}
	if a, err := netip.ParseAddr(h); err == nil {
		if a.Zone() != "" || (a.Is6() && !strings.HasPrefix(s, "[")) {
			return "", 0, false
		}
		return a.String(), n, a.String() == h || a.Is6()
	}
	if !hostRE.MatchString(h) || strings.HasPrefix(h, "*.") {
		return "", 0, false
	}
	return h, n, true
}

// IsProxyVar reports whether v is one of the proxy variables the sandbox
// sets: no profile may point them elsewhere.
func IsProxyVar(v string) bool {
	switch strings.ToUpper(v) {
	case "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY":
		return true
	}
	return false
}

// homePath cleans a path relative to ~ and refuses what is not one.
func homePath(raw string) (string, error) {
	s := strings.TrimPrefix(strings.TrimPrefix(raw, "~/"), "$HOME/")
	if s == "" || strings.HasPrefix(s, "/") || strings.HasPrefix(s, "~") || strings.Contains(s, "$") {
		return "", fmt.Errorf("must be a path under ~, written relative to it")
	}
	c := path.Clean(s)
	if c == "." {
		return "", fmt.Errorf("that is the whole home directory")
	}
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("leads out of the home directory")
	}
	return c, nil
}

// Package is what an npx or uvx command fetches: its name and exact version.
type Package struct {
	Runner  string // npx, uvx
	Name    string
	Version string
	Args    []string // what follows the package on the command line
}

// PackageOf finds the package a command fetches, if it fetches one.
func PackageOf(cmd []string) (Package, bool, error) {
	if len(cmd) == 0 {
		return Package{}, false, nil
	}
	runner := programName(cmd[0])
	switch runner {
	case "npx", "uvx", "bunx", "pnpx":
	case "pnpm", "yarn", "bun":
		if len(cmd) > 1 && (cmd[1] == "dlx" || cmd[1] == "x") {
			return Package{}, true, fmt.Errorf("%s %s: use npx with an exact version instead", cmd[0], cmd[1])
		}
		return Package{}, false, nil
	default:
		return Package{}, false, nil
	}
	i := 1
	for i < len(cmd) && strings.HasPrefix(cmd[i], "-") {
		switch cmd[i] {
		case "-y", "--yes", "-q", "--quiet":
			i++
		default:
			return Package{}, true, fmt.Errorf("%s option %q: only -y is allowed before the package", runner, cmd[i])
		}
	}
	if i == len(cmd) {
		return Package{}, true, fmt.Errorf("%s names no package", runner)
	}
	spec := cmd[i]
	var name, ver string
	if runner == "uvx" {
		name, ver, _ = strings.Cut(spec, "==")
	} else {
		at := strings.LastIndex(spec, "@")
		if at > 0 {
			name, ver = spec[:at], spec[at+1:]
		} else {
			name = spec
		}
	}
	if !exactRE.MatchString(ver) {
		if ver == "" {
			return Package{}, true, fmt.Errorf("package %q names no version; write %s@1.2.3 (one exact version)", spec, name)
		}
		return Package{}, true, fmt.Errorf("package %q: %q is not one exact version (no ranges, tags or latest)", spec, ver)
	}
	if !pkgNameRE.MatchString(name) {
		return Package{}, true, fmt.Errorf("package %q: only registry packages by name (no git, file or URL specs)", spec)
	}
	return Package{Runner: runner, Name: name, Version: ver, Args: cmd[i+1:]}, true, nil
}

func checkPackageRunner(p Profile) error {
	if err := checkCommand(p.Command); err != nil {
		return refuse(p, "command: %v", err)
	}
	if _, _, err := PackageOf(p.Command); err != nil {
		return refuse(p, "command: %v", err)
	}
	return nil
}
