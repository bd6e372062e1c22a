package sandbox

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/kulehq/kule/kernel/internal/runner"
)

// runDirs are where the system's services keep their sockets (a database's
// in /run/postgresql, systemd-resolved's and nscd's, which would let DNS
// leave past the proxy): hidden whole, their top-level links made again
// inside the hide (/run/shm, NixOS's /run/current-system), and PATH
// entries and /etc's links into them (resolv.conf) kept. Landlock cannot
// refuse connecting to a named socket on the kernels Kule runs on (no ABI
// up to 7 handles it), so sockets are hidden by what the command sees.
var runDirs = []string{"/run", "/var/run"}

// etcLinksIntoRun are /etc's files that distributions make links into
// /run; what they point at is kept readable.
var etcLinksIntoRun = []string{"/etc/resolv.conf", "/etc/machine-id", "/etc/localtime"}

// procNetUnix lists the named unix sockets bound on the system (in kule's
// network namespace): each one outside what the sandbox already hides is
// covered, so that a socket in the home (a database's, a container
// runtime's) is out of reach too.
var procNetUnix = "/proc/net/unix"

// boundSockets reads the paths of /proc/net/unix: the socket's path is the
// eighth field, the rest of the line (it may hold spaces); abstract
// sockets (@name) and unnamed ones are left out, and so is a path that is
// not absolute and clean (one bound relative to another process's working
// directory, or by a process in another mount namespace, names nothing
// here for certain).
func boundSockets(b []byte) []string {
	var out []string
	lines := strings.Split(string(b), "\n")
	for i, line := range lines {
		if i == 0 {
			continue // the header
		}
		rest := line
		for f := 0; f < 7; f++ {
			rest = strings.TrimLeft(rest, " ")
			sp := strings.IndexByte(rest, ' ')
			if sp < 0 {
				rest = ""
				break
			}
			rest = rest[sp:]
		}
		p := strings.TrimLeft(rest, " ")
		if p == "" || p[0] != '/' || filepath.Clean(p) != p || strings.IndexByte(p, 0) >= 0 {
			continue
		}
		out = append(out, p)
	}
	return out
}

// socketHides are the bound named sockets (boundSockets) to cover with
// /dev/null, and those left in reach: the ones inside the task's own
// folders and --allow-write folders, where covering would stop the command
// from removing what is there. hidden reports whether a path is hidden
// already and not put back by a tree the command sees.
func socketHides(sockets []string, open []string, hidden func(string) bool) (hide, reachable []string) {
	seen := map[string]bool{}
next:
	for _, s := range sockets {
		if seen[s] {
			continue
		}
		seen[s] = true
		for _, o := range open {
			if within(s, o) {
				if isSocket(s) {
					reachable = append(reachable, s)
				}
				continue next
			}
		}
		if hidden(s) || !isSocket(s) {
			continue
		}
		hide = append(hide, s)
	}
	return hide, reachable
}

// socketsToHide is socketHides for a plan: the sockets /proc/net/unix
// lists, by their real paths, with the task's own folders and
// --allow-write as what stays open. Those left in reach are told to
// s.Refused (the task's sandbox log), so the run says which they are.
func (s *Sandbox) socketsToHide(spec runner.Spec, res resolver, p *plan, strong, soft, logins []string) []string {
	b, err := os.ReadFile(procNetUnix)
	if err != nil {
		return nil // no /proc/net/unix (no unix sockets): nothing to cover
	}
	open := append([]string{p.Copy, p.Tmp, p.Home, p.Cache}, p.Writable...)
	shown := append(append([]string(nil), p.ReadOnly...), p.Keep...)
	hidden := func(path string) bool {
		for _, t := range shown {
			if within(path, t) {
				return false // a tree put back over the hides
			}
		}
		for _, hs := range [][]string{strong, soft, logins} {
			for _, h := range hs {
				if within(path, h) {
					return true
				}
			}
		}
		return false
	}
	// Most sockets lie in /run, hidden already: those are passed over by
	// their path as bound, without a look at the disk; the rest are
	// resolved (a link on the way, /var/run) and looked at.
	var real []string
	for _, sk := range boundSockets(b) {
		if hidden(sk) && !under(sk, open) {
			continue
		}
		if rp, ok := res.existing(sk); ok {
			real = append(real, rp)
		}
	}
	hide, reachable := socketHides(real, open, hidden)
	if len(reachable) > 0 {
		s.refuse(spec, Refusal{Kind: SocketsReachable, What: strings.Join(reachable, ", "),
			Why: "these named unix sockets lie in the task's own folders or in an --allow-write folder, which the command may change, so they are not covered",
			Do:  "nothing to do if they are the task's own; otherwise run without the --allow-write that holds them"})
	}
	return hide
}

// topLinks are the symbolic links directly in dir, to be made again inside
// its hide.
func topLinks(dir string) []link {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []link
	for _, e := range entries {
		if e.Type()&os.ModeSymlink == 0 {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if target, err := os.Readlink(path); err == nil {
			out = append(out, link{Path: path, Target: target})
		}
	}
	return out
}

// under reports whether path lies in one of dirs.
func under(path string, dirs []string) bool {
	for _, d := range dirs {
		if within(path, d) {
			return true
		}
	}
	return false
}

func isSocket(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode()&os.ModeSocket != 0
}
