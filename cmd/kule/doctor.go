package main

import (
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kulehq/kule/cmd/internal/daemon"
	"github.com/kulehq/kule/cmd/internal/daemon/client"
	"github.com/kulehq/kule/kernel"
)

// Statuses of a doctor check. A warning is something that works less well
// (a plain copy instead of reflinks, no agent installed); a failure is
// something that does not work: kule doctor then exits 4.
const (
	checkOK   = "ok"
	checkWarn = "warn"
	checkFail = "fail"
)

// exitCheckFailed is kule doctor's exit code when a check failed.
const exitCheckFailed = 4

// doctorCheck is one line of kule doctor: what was checked, what was
// found and, unless all is well, what to do.
type doctorCheck struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// doctorEnv is what the checks look at. doctorEnvFromSystem fills it from
// this machine; the tests plant each failure in one of its fields.
type doctorEnv struct {
	home        string // KULE_HOME
	folder      string // the folder asked about ("" for none)
	proc        string // where the sysctls are read ("/proc")
	landlockABI int
	exe         string                         // this binary, beside which the helper is looked for
	plugins     string                         // kule-plugins, which serves the built-in plugins
	lookPath    func(string) (string, error)   // exec.LookPath
	output      func(string, ...string) string // a tool's --version output, "" when it fails
	agents      func() ([]kernel.AgentStatus, error)
	daemonUp    func() bool
	// forcedBackend is KULE_BACKEND ("" when unset): the backend every
	// new task gets, whatever its folder.
	forcedBackend string
	// backendFor says which workspace backend a task of the folder gets
	// and why (Kernel.BackendFor); nil: no such line.
	backendFor func(folder string) (name, reason string)
}

func doctorEnvFromSystem(home, folder string) doctorEnv {
	exe, _ := os.Executable()
	return doctorEnv{
		home: home, folder: folder, proc: "/proc",
		forcedBackend: os.Getenv("KULE_BACKEND"),
		backendFor: func(folder string) (string, string) {
			k, err := kernel.New(kernel.Config{Home: home})
			if err != nil {
				return "", err.Error()
			}
			return k.BackendFor(folder)
		},
		landlockABI: kernel.ProbeSandbox().LandlockABI,
		exe:         exe,
		plugins:     pluginsBinary(),
		lookPath:    exec.LookPath,
		output: func(name string, args ...string) string {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, name, args...).Output()
			if err != nil {
				return ""
			}
			return strings.TrimSpace(string(out))
		},
		agents: func() ([]kernel.AgentStatus, error) {
			set, err := kernel.LoadAgents(builtinAgents(), home)
			if err != nil {
				return nil, err
			}
			root, err := kernel.AgentPackagesRoot()
			if err != nil {
				return nil, err
			}
			return kernel.CheckAgent(set, kernel.AgentCheckOptions{KuleHome: home, PackagesRoot: root}), nil
		},
		daemonUp: func() bool { return client.New(home).Running(context.Background()) },
	}
}

// doctorChecks runs every check, in the order a person fixes them: the
// sandbox first, then where tasks live, then secrets, agents, the daemon
// and git.
func doctorChecks(e doctorEnv) []doctorCheck {
	var cs []doctorCheck
	cs = append(cs, checkUserNS(e), checkLandlock(e), checkHelper(e), checkPlugins(e))
	fs := checkFileSystems(e)
	cs = append(cs, fs...)
	// What lives in KULE_HOME is not looked at when it cannot be made: its
	// one failure says what to do.
	homeOK := fs[0].Status != checkFail || !strings.HasPrefix(fs[0].Detail, "cannot make")
	if homeOK {
		cs = append(cs, checkSealing(e))
	}
	cs = append(cs, checkNode(e)...)
	cs = append(cs, checkAgents(e)...)
	if homeOK {
		cs = append(cs, checkDaemon(e), checkAppPort(e))
	}
	return append(cs, checkDesktop(e), checkGit(e))
}

func readSysctl(proc, name string) (int, bool) {
	b, err := os.ReadFile(filepath.Join(proc, "sys", filepath.FromSlash(strings.ReplaceAll(name, ".", "/"))))
	if err != nil {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return n, err == nil
}

func checkUserNS(e doctorEnv) doctorCheck {
	c := doctorCheck{Name: "user namespaces", Status: checkOK, Detail: "unprivileged user namespaces can be made"}
	if _, err := os.Stat(filepath.Join(e.proc, "self", "ns", "user")); err != nil {
		return doctorCheck{c.Name, checkFail, "this kernel has no user namespaces: the sandbox cannot hide credentials nor isolate processes and network",
			"use a kernel built with CONFIG_USER_NS=y (every Debian, Fedora and Ubuntu kernel has it)"}
	}
	if n, ok := readSysctl(e.proc, "user.max_user_namespaces"); ok && n == 0 {
		return doctorCheck{c.Name, checkFail, "sysctl user.max_user_namespaces is 0: no user namespace can be made",
			"sudo sysctl -w user.max_user_namespaces=15000, and keep it in /etc/sysctl.d/90-kule.conf"}
	}
	if n, ok := readSysctl(e.proc, "kernel.unprivileged_userns_clone"); ok && n == 0 {
		return doctorCheck{c.Name, checkFail, "sysctl kernel.unprivileged_userns_clone is 0: only root may make user namespaces",
			"sudo sysctl -w kernel.unprivileged_userns_clone=1, and keep it in /etc/sysctl.d/90-kule.conf"}
	}
	if n, ok := readSysctl(e.proc, "kernel.apparmor_restrict_unprivileged_userns"); ok && n == 1 {
		return doctorCheck{c.Name, checkFail, "AppArmor restricts unprivileged user namespaces (Ubuntu 23.10 and later: sysctl kernel.apparmor_restrict_unprivileged_userns is 1)",
			"allow kule with an AppArmor profile (docs/install.md has one), or sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"}
	}
	return c
}

func checkLandlock(e doctorEnv) doctorCheck {
	c := doctorCheck{Name: "landlock", Status: checkOK, Detail: fmt.Sprintf("Landlock ABI %d: writes outside the copy are refused by the kernel", e.landlockABI)}
	switch {
	case e.landlockABI < 1:
		c.Status, c.Detail = checkFail, "no Landlock: writes outside the copy would not be refused by the kernel"
		c.Fix = "use Linux 5.19 or later with landlock in the boot parameter lsm= (e.g. lsm=landlock,lockdown,yama,integrity,apparmor), or accept weaker isolation: kule isolation --accept-weaker on"
	case e.landlockABI < 2:
		c.Status, c.Detail = checkFail, fmt.Sprintf("Landlock ABI %d only: the sandbox needs ABI 2 (Linux 5.19) to allow moves inside the copy", e.landlockABI)
		c.Fix = "upgrade to Linux 5.19 or later (Debian 12's 6.1 has ABI 2), or accept weaker isolation: kule isolation --accept-weaker on"
	}
	return c
}

// checkHelper looks at kule-sandbox beside this binary: absent is fine
// (kule then starts the sandbox from itself); present, it must be an
// executable, statically linked, of this machine's architecture.
func checkHelper(e doctorEnv) doctorCheck {
	c := doctorCheck{Name: "sandbox helper", Status: checkOK}
	if e.exe == "" {
		return doctorCheck{c.Name, checkWarn, "cannot find this binary's own path", "run kule by its full path"}
	}
	h := filepath.Join(filepath.Dir(e.exe), kernel.SandboxHelperName)
	fi, err := os.Stat(h)
	if errors.Is(err, os.ErrNotExist) {
		c.Detail = fmt.Sprintf("no %s beside %s: kule starts its sandbox from its own binary, as fast", kernel.SandboxHelperName, e.exe)
		return c
	}
	fix := "reinstall it with make install (or the package), which builds it static"
	if err != nil {
		return doctorCheck{c.Name, checkFail, fmt.Sprintf("%s: %v", h, err), fix}
	}
	if !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		return doctorCheck{c.Name, checkFail, fmt.Sprintf("%s is not an executable file (%v): no command can start in the sandbox", h, fi.Mode()), fix}
	}
	f, err := elf.Open(h)
	if err != nil {
		return doctorCheck{c.Name, checkFail, fmt.Sprintf("%s is not a program for this machine: %v", h, err), fix}
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return doctorCheck{c.Name, checkFail, fmt.Sprintf("%s is linked dynamically: a loader would run inside the sandbox before it", h), fix}
		}
	}
	c.Detail = fmt.Sprintf("%s, static", h)
	return c
}

// checkPlugins looks for kule-plugins, which serves the built-in differs,
// previewers, chat transports and the extension host: without it kule
// still runs commands and commits, but none of those start.
func checkPlugins(e doctorEnv) doctorCheck {
	c := doctorCheck{Name: "built-in plugins", Status: checkOK, Detail: e.plugins}
	fix := "reinstall Kule (make install, or the package), which puts kule-plugins beside kule"
	fi, err := os.Stat(e.plugins)
	switch {
	case err != nil:
		return doctorCheck{c.Name, checkFail, fmt.Sprintf("%v: structured diffs, previews, chat transports and extensions cannot start", err), fix}
	case !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0:
		return doctorCheck{c.Name, checkFail, fmt.Sprintf("%s is not an executable file (%v): no built-in plugin can start", e.plugins, fi.Mode()), fix}
	}
	return c
}

// gib says a size in GiB or MiB, as doctor's lines do.
func gib(n uint64) string {
	if n >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
	if n >= 1<<20 {
		return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.0f KiB", float64(n)/(1<<10))
}

// minFree is the room below which KULE_HOME is said to be nearly full:
// a task's metadata, checkpoints and logs need some even with reflinks.
const minFree = 1 << 30

func checkFileSystems(e doctorEnv) []doctorCheck {
	name := "KULE_HOME"
	if err := os.MkdirAll(e.home, 0o700); err != nil {
		return []doctorCheck{{name, checkFail, fmt.Sprintf("cannot make %s: %v", e.home, err), "set KULE_HOME to a folder you can write"}}
	}
	hi, err := kernel.ProbeFileSystem(e.home, true)
	if err != nil {
		return []doctorCheck{{name, checkFail, err.Error(), "set KULE_HOME to a folder you can write, on a file system with room"}}
	}
	home := doctorCheck{Name: name, Status: checkOK}
	if hi.Reflinks {
		home.Detail = fmt.Sprintf("%s on %s with reflinks (a task's copy takes no extra space), %s free", e.home, hi.Type, gib(hi.Free))
	} else {
		home.Status = checkWarn
		home.Detail = fmt.Sprintf("%s on %s without reflinks: each task's copy takes as much space as its folder, %s free", e.home, hi.Type, gib(hi.Free))
		home.Fix = "put KULE_HOME (and your folders) on XFS or Btrfs: copies are then instant and take no space"
	}
	if hi.Free < minFree {
		home.Status = checkFail
		home.Detail = fmt.Sprintf("%s on %s has %s free: tasks, checkpoints and logs need room", e.home, hi.Type, gib(hi.Free))
		home.Fix = "free some space there, or set KULE_HOME to a file system with room"
	}
	cs := []doctorCheck{home}
	if e.folder == "" {
		// A forced backend is every new task's: a misspelt one would make
		// each kule new fail, so it is checked without a folder to ask
		// about (against KULE_HOME, which exists by now).
		if e.forcedBackend != "" && e.backendFor != nil {
			f := e
			f.folder = e.home
			cs = append(cs, checkBackend(f))
		}
		return cs
	}
	name = "folder"
	fi, err := kernel.ProbeFileSystem(e.folder, false)
	if err != nil {
		return append(cs, doctorCheck{name, checkFail, err.Error(), "give a folder that exists and that you can read"})
	}
	size, files, _ := kernel.FolderSize(e.folder)
	same := fi.Device == hi.Device
	c := doctorCheck{Name: name, Status: checkOK}
	switch {
	case same && hi.Reflinks:
		c.Detail = fmt.Sprintf("%s: %s in %s on %s, the file system of KULE_HOME: reflink copies, no extra space", e.folder, gib(uint64(size)), plural(files, "file"), fi.Type)
	case uint64(size) > hi.Free:
		c.Status = checkFail
		c.Detail = fmt.Sprintf("%s: a copy takes %s (%s) and KULE_HOME has %s free", e.folder, gib(uint64(size)), plural(files, "file"), gib(hi.Free))
		c.Fix = "free space where KULE_HOME is, or set KULE_HOME to a file system with room (the folder's own, on XFS or Btrfs, makes copies free)"
	default:
		why := "another file system than KULE_HOME's"
		if same {
			why = fi.Type + ", which has no reflinks"
		}
		c.Status = checkWarn
		c.Detail = fmt.Sprintf("%s is on %s: a task's copy takes %s (%s) of KULE_HOME's %s free, and time to make", e.folder, why, gib(uint64(size)), plural(files, "file"), gib(hi.Free))
		c.Fix = "keep the folder and KULE_HOME on one XFS or Btrfs file system"
	}
	cs = append(cs, c)
	if e.backendFor != nil {
		cs = append(cs, checkBackend(e))
	}
	return cs
}

// checkBackend says which workspace backend a task of the folder gets and
// why, and whether the overlay backend could be had instead.
func checkBackend(e doctorEnv) doctorCheck {
	name, why := e.backendFor(e.folder)
	if name == "" {
		return doctorCheck{"backend", checkFail, why, "unset KULE_BACKEND, or set it to reflink, copy or overlay"}
	}
	c := doctorCheck{Name: "backend", Status: checkOK, Detail: name + ": " + why}
	if name != "overlay" && !strings.Contains(why, "overlay backend") { // BackendFor may say it
		if err := kernel.OverlayAvailable(); err != nil {
			c.Detail += "; the overlay backend is not available here (" + err.Error() + "), so the copy backend remains"
		} else {
			c.Detail += "; KULE_BACKEND=overlay would run each command over an overlay of the copy"
		}
	}
	return c
}

func checkSealing(e doctorEnv) doctorCheck {
	s := kernel.ProbeSealing(e.home)
	c := doctorCheck{Name: "secrets", Status: checkOK}
	switch {
	case s.Problem != "":
		c.Status, c.Detail, c.Fix = checkFail, s.Problem, s.Fix
	case !s.Recorded && s.Kind == "secret-service":
		c.Detail = "no secret kept yet: the first is sealed with a key in the Secret Service of this session, if it answers, else in a key file"
	case !s.Recorded:
		c.Detail = "no secret kept yet, and no session bus: the first is sealed with the key file " + s.KeyFile
	case s.Kind == "secret-service":
		c.Detail = "sealed with a key in the Secret Service, which answers"
	default:
		c.Detail = "sealed with the key file " + s.KeyFile + " (0600)"
	}
	return c
}

var nodeVersion = regexp.MustCompile(`^v(\d+)\.`)

// minNode is the oldest node the agents' packages run on.
const minNode = 18

func checkNode(e doctorEnv) []doctorCheck {
	fix := "install Node.js 18 or later with npm (Debian: apt install nodejs npm); agents run through npm packages"
	node := doctorCheck{Name: "node", Status: checkOK}
	if p, err := e.lookPath("node"); err != nil {
		node.Status, node.Detail, node.Fix = checkWarn, "node is not on PATH: no agent can run (kule exec works without it)", fix
	} else {
		v := e.output(p, "--version")
		m := nodeVersion.FindStringSubmatch(v)
		if n, _ := strconv.Atoi(safeGroup(m, 1)); m == nil || n < minNode {
			node.Status, node.Detail, node.Fix = checkWarn, fmt.Sprintf("%s is %q: agents need node %d or later", p, v, minNode), fix
		} else {
			node.Detail = p + " " + v
		}
	}
	npm := doctorCheck{Name: "npm", Status: checkOK}
	if p, err := e.lookPath("npm"); err != nil {
		npm.Status, npm.Detail, npm.Fix = checkWarn, "npm is not on PATH: agents' packages cannot be installed", fix
	} else {
		npm.Detail = p + " " + e.output(p, "--version")
	}
	return []doctorCheck{node, npm}
}

func safeGroup(m []string, i int) string {
	if i < len(m) {
		return m[i]
	}
	return ""
}

func checkAgents(e doctorEnv) []doctorCheck {
	sts, err := e.agents()
	if err != nil {
		return []doctorCheck{{"agents", checkFail, err.Error(), "fix the file it names (kule agents show NAME shows a profile)"}}
	}
	var cs []doctorCheck
	for _, s := range sts {
		c := doctorCheck{Name: "agent " + s.Profile.Name, Status: checkOK}
		switch {
		case s.Problem != nil:
			c.Status, c.Detail, c.Fix = checkWarn, "refused: "+s.Problem.Error(), "kule agents show "+s.Profile.Name
		case !s.Approved:
			c.Status, c.Detail, c.Fix = checkWarn, "waits for approval", "kule agents show "+s.Profile.Name+", then kule agents approve "+s.Profile.Name
		case len(s.Missing) > 0:
			c.Status, c.Detail, c.Fix = checkWarn, "cannot start: needs "+strings.Join(s.Missing, ", "), "install what it needs, then kule agents"
		default:
			var parts []string
			if s.Package != nil {
				state := "installed"
				if !s.Installed {
					state = "installed at its first run"
				}
				parts = append(parts, fmt.Sprintf("%s@%s %s", s.Package.Name, s.Package.Version, state))
			}
			if len(s.Auth) > 0 {
				parts = append(parts, "logs in with "+strings.Join(s.Auth, "; "))
			} else if len(s.Profile.Keys) > 0 {
				c.Status = checkWarn
				parts = append(parts, "no key or login found")
				c.Fix = "log in to it once, or keep its key with kule secrets add (kule agents says which)"
			}
			c.Detail = strings.Join(parts, "; ")
			if c.Detail == "" {
				c.Detail = "can start"
			}
		}
		cs = append(cs, c)
	}
	return cs
}

func checkDaemon(e doctorEnv) doctorCheck {
	c := doctorCheck{Name: "daemon", Status: checkOK}
	sock := daemon.SocketPath(e.home)
	if e.daemonUp() {
		c.Detail = "running, answering on " + sock
		return c
	}
	fi, err := os.Lstat(sock)
	switch {
	case errors.Is(err, os.ErrNotExist):
		c.Detail = "not running: kule app starts it (or systemctl --user enable --now kule)"
	case err != nil:
		c.Status, c.Detail, c.Fix = checkFail, fmt.Sprintf("cannot look at %s: %v", sock, err), "check the permissions of KULE_HOME"
	case fi.Mode()&os.ModeSocket == 0:
		c.Status, c.Detail, c.Fix = checkFail, sock+" is not a socket: no daemon can listen there", "remove "+sock+" (Kule made no such file), then kule app"
	default:
		c.Status, c.Detail, c.Fix = checkFail, sock+" is there but no daemon answers on it (a daemon that crashed?)", "see "+filepath.Join(e.home, "kuled.log")+", then start it again: kule app"
	}
	return c
}

// checkAppPort: with no daemon running, nothing else may hold the home's
// loopback address and port the app was last served on.
func checkAppPort(e doctorEnv) doctorCheck {
	c := doctorCheck{Name: "app port", Status: checkOK}
	b, err := os.ReadFile(daemon.AppAddressPath(e.home))
	if errors.Is(err, os.ErrNotExist) {
		c.Detail = "no address chosen yet: the daemon picks a loopback address of this home's own when it first starts"
		return c
	}
	if err != nil {
		return doctorCheck{c.Name, checkFail, err.Error(), "check the permissions of KULE_HOME"}
	}
	ip, err := daemon.ParseAppAddress(b)
	if err != nil {
		return doctorCheck{c.Name, checkFail, fmt.Sprintf("%s: %v", daemon.AppAddressPath(e.home), err), "remove " + daemon.AppAddressPath(e.home) + ": the daemon picks a new one"}
	}
	if e.daemonUp() {
		c.Detail = "the app is served on " + ip.String()
		return c
	}
	// The daemon binds ip on a free port; another server that listens on
	// the whole of 127.0.0.0/8 at that address would be reached instead.
	l, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		return doctorCheck{c.Name, checkFail, fmt.Sprintf("cannot listen on %s: %v", ip, err), "check the loopback interface (ip addr show lo)"}
	}
	l.Close()
	c.Detail = ip.String() + " is free for the app"
	return c
}

// checkDesktop finds the desktop window, which is optional, and sees it
// start far enough to say its version: a kule-desktop whose WebKitGTK or
// GTK libraries are missing fails in the loader before that.
func checkDesktop(e doctorEnv) doctorCheck {
	c := doctorCheck{Name: "desktop window", Status: checkOK}
	p := filepath.Join(filepath.Dir(e.exe), "kule-desktop")
	if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() {
		if p, err = e.lookPath("kule-desktop"); err != nil {
			c.Detail = "kule-desktop is not installed (optional: the kule-desktop package, or make install-desktop; kule app opens the same control room in a browser)"
			return c
		}
	}
	v := e.output(p, "--version")
	if !strings.HasPrefix(v, "kule-desktop ") {
		return doctorCheck{c.Name, checkWarn, p + " does not start: the libraries it links (WebKitGTK 4.1, GTK 3) may be missing",
			"install them (Debian: apt install libwebkit2gtk-4.1-0; Fedora: dnf install webkit2gtk4.1), or reinstall the kule-desktop package; kule app opens the control room in a browser meanwhile"}
	}
	c.Detail = p + ", " + strings.TrimPrefix(v, "kule-desktop ")
	return c
}

var gitVersion = regexp.MustCompile(`git version (\d+)\.(\d+)`)

func checkGit(e doctorEnv) doctorCheck {
	c := doctorCheck{Name: "git", Status: checkOK}
	fix := "install git 2.30 or later (Debian: apt install git)"
	p, err := e.lookPath("git")
	if err != nil {
		return doctorCheck{c.Name, checkWarn, "git is not on PATH: a repository's .git in a task is copied but not judged by branch", fix}
	}
	v := e.output(p, "--version")
	m := gitVersion.FindStringSubmatch(v)
	if m == nil {
		return doctorCheck{c.Name, checkWarn, fmt.Sprintf("%s says %q, not a version", p, v), fix}
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	if major < 2 || (major == 2 && minor < 30) {
		return doctorCheck{c.Name, checkWarn, fmt.Sprintf("%s is %s.%s: Kule needs 2.30 or later", p, m[1], m[2]), fix}
	}
	c.Detail = fmt.Sprintf("%s %s.%s", p, m[1], m[2])
	return c
}

func printDoctor(w io.Writer, cs []doctorCheck) {
	marks := map[string]string{checkOK: "ok  ", checkWarn: "warn", checkFail: "FAIL"}
	for _, c := range cs {
		fmt.Fprintf(w, "%s  %-18s %s\n", marks[c.Status], c.Name, safeText(c.Detail))
		if c.Fix != "" {
			fmt.Fprintf(w, "      %-18s fix: %s\n", "", safeText(c.Fix))
		}
	}
	var warn, fail int
	for _, c := range cs {
		switch c.Status {
		case checkWarn:
			warn++
		case checkFail:
			fail++
		}
	}
	switch {
	case fail > 0:
		fmt.Fprintf(w, "\n%s failed, %s: fix the first failure first; kule doctor says again.\n", plural(fail, "check"), plural(warn, "warning"))
	case warn > 0:
		fmt.Fprintf(w, "\nEverything needed works; %s.\n", plural(warn, "warning"))
	default:
		fmt.Fprintln(w, "\nEverything works.")
	}
}

func doctorCommand() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "doctor [FOLDER] [--json]",
		Short: "Check what Kule needs here, each line with what to do about what does not work",
		Long: `Checks, one line each: user namespaces (and the sysctls that turn them off),
Landlock, the sandbox's helper, the file system of KULE_HOME (reflinks, free
space) and of FOLDER when given (what a task's copy of it costs), the backend
a task gets (of FOLDER, or the one KULE_BACKEND forces), how secrets are
sealed, node and npm and each agent, the daemon and its socket, the app's
address, and git. It exits 0 when nothing failed (warnings are fine) and 4
when a check failed.`,
		Example: `  kule doctor
  kule doctor ~/src/project     # also: what a task's copy of this folder costs
  kule doctor --json | jq '.checks[] | select(.status != "ok")'`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			home, err := kernel.DefaultHome()
			if err != nil {
				return err
			}
			folder := ""
			if len(args) == 1 {
				if folder, err = filepath.Abs(args[0]); err != nil {
					return err
				}
			}
			cs := doctorChecks(doctorEnvFromSystem(home, folder))
			failed := false
			for _, c := range cs {
				failed = failed || c.Status == checkFail
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(struct {
					OK      bool          `json:"ok"`
					Version versionInfo   `json:"version"`
					Checks  []doctorCheck `json:"checks"`
				}{!failed, currentVersion(), cs}); err != nil {
					return err
				}
			} else {
				printDoctor(out, cs)
			}
			if failed {
				return exitCode(exitCheckFailed)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, `print {"ok", "version", "checks": [{"name", "status": "ok"|"warn"|"fail", "detail", "fix"}]}`)
	return c
}
