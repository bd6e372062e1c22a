package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/kulehq/kule/kernel/internal/credentials"
)

// guards are the parts of the plan an attack test takes away one at a time,
// to show the attack working without them. They are unexported and set only
// by tests: no option, configuration or flag reaches them.
type guards struct {
	credentials  bool // hide nothing of credentials.Home
	logins       bool // hide no agent's login
	siblings     bool // hide only the workspace's parent, not every project beside its ancestors
	userDirs     bool // hide the personal folders by their English names only, as spelled
	seccomp      bool // no seccomp filter in the command
	seccompErrno int  // the filter's answer, when not 0 (EPERM when 0)
	sockets      bool // hide no sockets beyond the fixed list
	caEnv        bool // the person's certificate variables win over the task's
	pins         bool // no pins over the folders that hold ReadOnlyInTask
	// landlock changes the command's Landlock ruleset before it goes to
	// the helper: a test hands it rules of its own, to show the helper
	// applies those and no others.
	landlock func(*landlockRuleset)
}

// seccompErrno is the plan's Seccomp: EPERM, unless a test changed the
// filter's answer or took the filter away.
func (s *Sandbox) seccompErrno() int {
	switch {
	case s.off.seccomp:
		return 0
	case s.off.seccompErrno != 0:
		return s.off.seccompErrno
	}
	return int(syscall.EPERM)
}

// besideWorkspace is the folder to hide so that no project beside the
// workspace folder, nor beside any of its ancestors up to the home, is in
// reach: the folder's ancestor just below the home (~/projects for
// ~/projects/clientA/app). Below a dot folder of the home (~/.local/src/a/b)
// it is the one below that (~/.local/src): the dot folder itself holds the
// person's settings and tools. Empty when nothing is to be hidden: the
// folder lies directly in the home (its siblings are the home's own
// entries) or outside it. parentOnly is the guard taken away: the
// workspace's immediate parent only.
func besideWorkspace(folder, home string, parentOnly bool) string {
	if home == "" || home == "/" || folder == home || !within(folder, home) {
		return ""
	}
	rel, err := filepath.Rel(home, folder)
	if err != nil {
		return ""
	}
	parts := strings.Split(rel, string(filepath.Separator))
	if parentOnly {
		parent := filepath.Dir(folder)
		if parent == home || strings.HasPrefix(parts[0], ".") {
			return ""
		}
		return parent
	}
	n := 1
	if strings.HasPrefix(parts[0], ".") {
		n = 2
	}
	if len(parts) <= n {
		return "" // the folder is that ancestor itself
	}
	return filepath.Join(home, filepath.Join(parts[:n]...))
}

// personalFolders are the person's own folders under home: the XDG user
// directories by what they are (user-dirs.dirs names them in the person's
// language: ~/Dokumente, ~/Téléchargements), and the folders of
// personalPaths whatever the case of their name.
func (s *Sandbox) personalFolders(res resolver, home string, env []string) []string {
	var out []string
	add := func(p string) {
		if rp, ok := res.existing(p); ok && rp != home && !within(home, rp) {
			out = append(out, rp)
		}
	}
	var oneName []string
	for _, c := range personalPaths {
		if strings.Contains(c, "/") {
			add(filepath.Join(home, c))
		} else {
			oneName = append(oneName, c)
		}
	}
	if s.off.userDirs {
		for _, c := range oneName {
			add(filepath.Join(home, c))
		}
		return out
	}
	if entries, err := os.ReadDir(home); err == nil {
		for _, e := range entries {
			for _, c := range oneName {
				if strings.EqualFold(e.Name(), c) {
					add(filepath.Join(home, e.Name()))
					break
				}
			}
		}
	}
	config := lookupEnv(env, "XDG_CONFIG_HOME")
	if !filepath.IsAbs(config) {
		config = filepath.Join(home, ".config")
	}
	if b, err := os.ReadFile(filepath.Join(config, "user-dirs.dirs")); err == nil && len(b) < 1<<20 {
		for _, d := range parseUserDirs(b, home) {
			add(d)
		}
	}
	return out
}

// parseUserDirs reads xdg-user-dirs' user-dirs.dirs: lines of
// XDG_<NAME>_DIR="<path>", where the path is absolute or starts with
// $HOME/. It returns the absolute, clean paths inside the home, leaving
// out what names the home itself (a directory set to "$HOME/" is turned
// off), what lies outside it (hiding a folder like /etc or /data would
// take what the command runs on away) and what it cannot read as such a
// line. Comments (#) and blank lines are skipped.
func parseUserDirs(b []byte, home string) []string {
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		if !ok || !strings.HasPrefix(name, "XDG_") || !strings.HasSuffix(name, "_DIR") || len(name) <= len("XDG__DIR") {
			continue
		}
		if len(value) < 2 || value[0] != '"' || value[len(value)-1] != '"' {
			continue
		}
		value = value[1 : len(value)-1]
		if strings.ContainsAny(value, "\"\x00") {
			continue
		}
		value = strings.ReplaceAll(value, `\\`, `\`)
		var p string
		switch {
		case value == "$HOME" || strings.HasPrefix(value, "$HOME/"):
			p = filepath.Join(home, value[len("$HOME"):])
		case strings.HasPrefix(value, "/"):
			p = filepath.Clean(value)
		default:
			continue
		}
		if h := filepath.Clean(home); p == h || !within(p, h) {
			continue // the home itself, or outside it: never a system folder
		}
		out = append(out, p)
	}
	return out
}

// loginHides are the agents' logins (credentials.AgentLogins, and the homes
// Kule keeps for agents) that exist under home, but for those an opening
// names exactly: an agent's run opens its own login by its path, and only
// that agent's. A login inside a wider opening stays hidden, and an opening
// inside a hidden login (one agent's own home among them all) is put back
// over the hide.
func (s *Sandbox) loginHides(res resolver, home string, env, openings []string) []string {
	if s.off.logins || home == "" || home == "/" {
		return nil
	}
	cands := make([]string, 0, len(credentials.AgentLogins)+1)
	for _, l := range credentials.AgentLogins {
		cands = append(cands, filepath.Join(home, filepath.FromSlash(l)))
	}
	cands = append(cands, credentials.AgentHomes(home, lookupEnv(env, "XDG_DATA_HOME")))
	var out []string
next:
	for _, c := range cands {
		rp, ok := res.existing(c)
		if !ok {
			continue
		}
		for _, o := range openings {
			if o == rp {
				continue next
			}
		}
		out = append(out, rp)
	}
	return out
}
