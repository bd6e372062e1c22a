package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/kulehq/kule/kernel/internal/beneath"
	"github.com/kulehq/kule/kernel/internal/credentials"
	"github.com/kulehq/kule/kernel/internal/runner"
)

// plan is everything the helper needs, decided on the host side where the
// person's paths and environment are known. It crosses to the helper over a
// pipe, in plancodec.go's form.
type plan struct {
	Args []string
	Dir  string
	Env  []string

	Copy     string   // mounted writable at its own path
	Tmp      string   // mounted writable at /tmp
	Home     string   // the task's home layer: writable
	Cache    string   // the task's package caches: writable
	Upper    string   // set: Copy is mounted as an overlayfs's lower layer, with this upper
	Work     string   // the overlayfs's work directory (with Upper)
	FSize    int64    // RLIMIT_FSIZE for the command, when positive
	Writable []string // --allow-write, and the folders that hold ReadOnlyInTask: writable at their own paths
	ReadOnly []string // revealed projects and ReadOnlyInTask: read-only at their own paths
	Keep     []string // PATH/SDK folders and the git dir inside hidden areas

	// Strong and Soft are what HideDirs and HideFiles are made from, as
	// Seatbelt reads them; they stay on this side of the pipe (wire:"-").
	Strong    []string `wire:"-"` // hidden for good: credentials, Kule's home, --hide
	Soft      []string `wire:"-"` // hidden, but PATH/SDK folders and reveals inside stay
	Logins    []string `wire:"-"` // agents' logins: hidden, but openings inside stay
	HideDirs  []string // covered with an empty read-only tmpfs
	HideFiles []string // covered with /dev/null
	Links     []link   // symlinks made in hidden tmpfs areas (reveal siblings)
	Devices   []string // names under /dev to give

	NetNS     bool // a network namespace (false only for NetworkOpen)
	ProxyPort int  // >0: listen on 127.0.0.1:ProxyPort and bridge to the host
	NoTCP     bool `wire:"-"` // Seatbelt: no TCP connect at all (on Linux the namespace has no proxy)

	// Landlock is the command's Landlock domain (landlock.go), which the
	// helper makes as it is written here; with nothing handled (weaker
	// isolation accepted) there is none.
	Landlock landlockRuleset

	// Seccomp is the errno the helper's seccomp filter
	// (pid1_seccomp_linux.c's kule_seccomp_filter) refuses system calls with: EPERM. Only attack tests
	// set another (guards.seccompErrno: an errno no refused call answers
	// by itself, to tell the filter's refusals from the kernel's) or 0, no
	// filter (guards.seccomp); no option reaches it.
	Seccomp int

	PTY bool // stdin is the person's terminal: the command gets a pty of its own

	// Shape is planShape() of the kule that wrote the plan: a helper from
	// another build (a stale kule-sandbox beside kule) refuses it rather
	// than read fields it does not know as unset.
	Shape string
}

// planShape names every field of plan that crosses to the helper and its
// type, so that two builds agree on the plan exactly or not at all. Made
// once: every run sends it.
var planShape = sync.OnceValue(func() string {
	var b strings.Builder
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !onWire(f) {
				continue
			}
			b.WriteString(f.Name + ":" + f.Type.String() + ";")
			switch {
			case f.Type.Kind() == reflect.Struct:
				walk(f.Type)
			case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct:
				walk(f.Type.Elem())
			}
		}
	}
	walk(reflect.TypeOf(plan{}))
	return b.String()
})

// onWire says whether a field of plan crosses to the helper.
func onWire(f reflect.StructField) bool { return f.Tag.Get("wire") != "-" }

type link struct{ Path, Target string }

// personalPaths are the person's own folders, hidden under the home; the
// names of one component are matched whatever their case ("documents").
var personalPaths = []string{
	"Documents", "Desktop", "Downloads", "Pictures", "Movies", "Music",
	"Videos", "Dropbox", "Google Drive", "GoogleDrive", "OneDrive",
	"iCloud Drive", "iCloudDrive", "Library/Mobile Documents",
	"Library/CloudStorage", "Nextcloud", "ownCloud", "pCloudDrive",
	"MEGA", "Box", "Sync", "Public", "Templates",
}

// systemSockets are places outside the home where sockets of other programs
// live (the session bus, Docker, container runtimes).
var systemSockets = []string{
	"/run/user", "/var/run/docker.sock", "/run/docker.sock", "/run/docker",
	"/run/podman", "/run/containerd", "/run/dbus", "/var/run/dbus",
	"/run/systemd/private", "/run/snapd.socket",
}

// sdkVars name folders a build needs readable even inside hidden areas.
var sdkVars = []string{
	"GOROOT", "GOPATH", "CARGO_HOME", "RUSTUP_HOME", "JAVA_HOME", "NVM_DIR",
	"PYENV_ROOT", "VOLTA_HOME", "BUN_INSTALL", "DENO_INSTALL", "SDKMAN_DIR",
	"DOTNET_ROOT", "ANDROID_HOME", "FLUTTER_ROOT", "GEM_HOME", "RBENV_ROOT",
	"ASDF_DIR", "ASDF_DATA_DIR", "PNPM_HOME",
}

// plan decides, on the host side, everything the helper does for spec. It
// goes in the steps below, each of which may refuse the spec before any
// helper acts on it:
//
//  1. taskDirs: the task's own folders, made and resolved to real paths;
//  2. the proxy's port, when the command reaches the network through it;
//  3. the hides: strong ones (nothing may reopen them) and soft ones
//     (personal folders, projects beside the workspace, the run folders);
//  4. the openings: --allow-write, then --reveal, refused when they would
//     open a strong hide;
//  5. the keeps: PATH and SDK folders inside soft hides;
//  6. the hides as the helper makes them (folders and files), the agents'
//     logins and the sockets among them;
//  7. the devices and the command's environment.
func (s *Sandbox) plan(spec runner.Spec) (*plan, error) {
	if len(spec.Args) == 0 {
		return nil, runner.ErrNoCommand
	}
	pl := &planning{s: s, spec: spec, res: newResolver()}
	if err := pl.taskDirs(); err != nil {
		return nil, err
	}
	d := pl.dirs
	p := &plan{
		Args: spec.Args, Dir: d.work, Copy: d.copy, Tmp: d.tmp, Home: d.home, Cache: d.cache, Upper: d.upper, Work: d.ovlWork, FSize: spec.FileSizeLimit,
		NetNS: spec.Network != runner.NetworkOpen, NoTCP: spec.Network == runner.NetworkNone,
		Seccomp: s.seccompErrno(),
	}
	port, err := proxyPort(spec)
	if err != nil {
		return nil, err
	}
	p.ProxyPort = port
	pl.hostEnv = s.hostEnv()
	pl.personHome = s.home()
	if rh, err := pl.res.realDir(pl.personHome); err == nil {
		pl.personHome = rh // else the home as named: what lies under it is looked up as named too
	}
	pl.strongHides()
	runLinks := pl.softHides()
	if p.Writable, err = pl.writable(); err != nil {
		return nil, err
	}
	if p.ReadOnly, p.Links, err = pl.reveals(); err != nil {
		return nil, err
	}
	p.Keep = pl.keeps()
	pl.hides(p, runLinks)
	// Inside the task's own trees: after the hides, which they neither
	// open nor hide.
	ro, pins, err := pl.readOnlyInTask()
	if err != nil {
		return nil, err
	}
	p.ReadOnly, p.Writable = append(p.ReadOnly, ro...), append(p.Writable, pins...)
	devs, refused, err := s.devices()
	if err != nil {
		if refused != "" {
			s.refuse(spec, Refusal{Kind: DeviceRefused, What: "/dev/" + refused, Why: err.Error(),
				Do: "nothing ran; take the device out of [sandbox] devices in config.toml (disks, memory, input devices and consoles are never given)"})
		}
		return nil, err
	}
	p.Devices = devs
	p.Env = commandEnv(spec, p, !s.off.caEnv)
	return p, nil
}

// planning is one plan in the making: what its steps share.
type planning struct {
	s    *Sandbox
	spec runner.Spec
	res  resolver
	dirs taskDirs

	hostEnv    []string
	personHome string   // the person's home, real when it resolves
	strong     []string // hidden for good
	soft       []string // hidden, with keeps and reveals put back
}

// taskDirs are the task's folders: each as the task names it and as its
// real path (what the helper mounts).
type taskDirs struct {
	copy, tmp, home, cache, kule string // real paths
	upper, ovlWork               string // the overlay's layers, real, or ""
	work                         string // the working directory, real, inside copy
	// As named (home and cache as made from the task's folder): the
	// --allow-write check refuses a link below either form.
	namedHome, namedCache string
}

// taskDirs makes the task's tmp, home and caches and resolves every folder
// of the task; a folder that is missing, not absolute or not a directory
// refuses the spec.
func (pl *planning) taskDirs() error {
	t := pl.spec.Task
	for name, p := range map[string]string{"copy": t.Copy, "tmp": t.Tmp, "kule home": t.KuleDir} {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("%w: task %s path %q is not absolute", ErrBadSpec, name, p)
		}
	}
	d := &pl.dirs
	var err error
	if d.copy, err = pl.res.realDir(t.Copy); err != nil {
		return fmt.Errorf("%w: the task's copy: %w", ErrBadSpec, err)
	}
	if d.tmp, err = pl.madeDir("the task's tmp", t.Tmp); err != nil {
		return err
	}
	d.namedHome = t.Home
	if d.namedHome == "" {
		d.namedHome = filepath.Join(t.Dir, "home")
	}
	if d.home, err = pl.madeDir("the task's home", d.namedHome); err != nil {
		return err
	}
	d.namedCache = filepath.Join(t.Dir, "cache")
	if t.Dir == "" {
		d.namedCache = filepath.Join(filepath.Dir(t.Copy), "cache")
	}
	if d.cache, err = pl.madeDir("the task's caches", d.namedCache); err != nil {
		return err
	}
	if (t.Upper == "") != (t.Work == "") {
		return fmt.Errorf("%w: an overlay needs both an upper and a work directory", ErrBadSpec)
	}
	if t.Upper != "" {
		if d.upper, err = pl.res.realDir(t.Upper); err != nil {
			return fmt.Errorf("%w: the overlay's upper layer: %w", ErrBadSpec, err)
		}
		if d.ovlWork, err = pl.res.realDir(t.Work); err != nil {
			return fmt.Errorf("%w: the overlay's work directory: %w", ErrBadSpec, err)
		}
		if within(d.upper, d.copy) || within(d.copy, d.upper) || within(d.ovlWork, d.copy) {
			return fmt.Errorf("%w: the overlay's layers %s and %s must lie outside the copy %s", ErrBadSpec, t.Upper, t.Work, t.Copy)
		}
	}
	if d.kule, err = pl.res.realDir(t.KuleDir); err != nil {
		return fmt.Errorf("%w: kule home: %w", ErrBadSpec, err)
	}
	d.work = pl.spec.Dir
	if d.work == "" {
		d.work = t.Copy
	}
	if rd, err := pl.res.realDir(d.work); err == nil {
		d.work = rd // else as named: the check below refuses it unless it lies in the copy as named
	}
	if !within(d.work, d.copy) {
		return fmt.Errorf("%w: working directory %s is not inside the task's copy %s", ErrBadSpec, pl.spec.Dir, t.Copy)
	}
	return nil
}

// madeDir makes dir (what: the task's folder it is) and returns its real
// path.
func (pl *planning) madeDir(what, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("%w: %s: %w", ErrBadSpec, what, err)
	}
	rd, err := pl.res.realDir(dir)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w", ErrBadSpec, what, err)
	}
	return rd, nil
}

// proxyPort is the port the command's proxy listens on inside the sandbox,
// 0 when the command does not reach the network through the proxy.
func proxyPort(spec runner.Spec) (int, error) {
	if spec.Network != runner.NetworkProxy || spec.ProxyAddr == "" {
		return 0, nil
	}
	_, port, err := net.SplitHostPort(spec.ProxyAddr)
	n, err2 := strconv.Atoi(port)
	if err != nil || err2 != nil || n <= 0 || n > 65535 {
		return 0, fmt.Errorf("%w: proxy address %q is not host:port", ErrBadSpec, spec.ProxyAddr)
	}
	return n, nil
}

// strongHides are hidden for good: nothing kept or revealed may reopen
// them (credentials, the session's sockets, Kule's home, --hide).
func (pl *planning) strongHides() {
	add := func(path string) {
		if rp, ok := pl.res.existing(path); ok {
			pl.strong = append(pl.strong, rp)
		}
	}
	if pl.personHome != "" && pl.personHome != "/" && !pl.s.off.credentials {
		for _, c := range credentials.Home {
			add(filepath.Join(pl.personHome, filepath.FromSlash(c)))
		}
	}
	if d := lookupEnv(pl.hostEnv, "CARGO_HOME"); d != "" {
		add(filepath.Join(d, "credentials"))
		add(filepath.Join(d, "credentials.toml"))
	}
	if x := lookupEnv(pl.hostEnv, "XDG_RUNTIME_DIR"); x != "" {
		add(x)
	}
	for _, sock := range systemSockets {
		add(sock)
	}
	add(pl.dirs.kule)
	for _, h := range pl.spec.Hide {
		add(absFrom(h, pl.dirs.work)) // nothing there: nothing to hide, and writes there are refused anyway
	}
}

// softHides are the personal folders, the projects beside the workspace
// and the run folders; it returns the links the run folders' hides make
// again (their top-level links).
func (pl *planning) softHides() (runLinks []link) {
	if pl.personHome != "" && pl.personHome != "/" {
		pl.soft = append(pl.soft, pl.s.personalFolders(pl.res, pl.personHome, pl.hostEnv)...)
		if folder := pl.spec.Task.Folder; folder != "" {
			if rf, err := pl.res.realDir(folder); err == nil {
				folder = rf // else as named: a folder that is gone has no siblings to find
			}
			if d := besideWorkspace(folder, pl.personHome, pl.s.off.siblings); d != "" {
				pl.soft = append(pl.soft, d)
			}
		}
	}
	if pl.s.off.sockets {
		return nil
	}
	for _, d := range runDirs {
		rp, ok := pl.res.existing(d)
		if !ok {
			continue
		}
		if isDir, known := pl.res.isDir(rp); !known || !isDir {
			continue
		}
		pl.soft = append(pl.soft, rp)
		runLinks = append(runLinks, topLinks(rp)...)
	}
	return runLinks
}

// underStrong reports whether path lies in a strong hide.
func (pl *planning) underStrong(path string) bool {
	for _, h := range pl.strong {
		if within(path, h) {
			return true
		}
	}
	return false
}

// underSoft reports whether path lies strictly inside a soft hide.
func (pl *planning) underSoft(path string) bool {
	for _, h := range pl.soft {
		if within(path, h) && path != h {
			return true
		}
	}
	return false
}

// writable resolves --allow-write, refusing a link a command made in the
// task's trees and an opening of a strong hide.
func (pl *planning) writable() ([]string, error) {
	var out []string
	d := pl.dirs
	t := pl.spec.Task
	for _, w := range pl.spec.AllowWrite {
		abs := absFrom(w, d.work)
		// Resolved once, here, outside the sandbox: a link a command put in
		// the task's trees (out -> ~/.config/autostart) is never followed.
		if err := beneath.NoLinkBelow(abs, d.copy, d.tmp, d.home, d.cache, t.Copy, t.Tmp, d.namedHome, d.namedCache); err != nil {
			return nil, fmt.Errorf("%w: --allow-write %s: %w; a command in the task made it a link, so it was not opened and nothing ran — remove the link, or name the directory you mean by its own path", ErrBadSpec, w, err)
		}
		rp, err := pl.res.realDir(abs)
		if err != nil {
			return nil, fmt.Errorf("%w: --allow-write %s: %w", ErrBadSpec, w, err)
		}
		if rp != filepath.Clean(w) {
			fmt.Fprintf(pl.s.warn(), "kule: --allow-write %s opens %s\n", w, rp)
		}
		if pl.underStrong(rp) || covers(rp, pl.strong) {
			return nil, pl.s.openingRefused(pl.spec, fmt.Errorf("%w: --allow-write %s would open a hidden path (credentials, Kule's home or another task)", ErrBadSpec, w), "--allow-write", w, hiddenBy(rp, pl.strong))
		}
		out = append(out, rp)
	}
	return out, nil
}

// reveals resolves --reveal (relative to the task's folder), refusing an
// opening of a strong hide; a revealed project beside the folder gets a
// link beside the copy, as it lies beside the folder.
func (pl *planning) reveals() (readOnly []string, links []link, err error) {
	d := pl.dirs
	t := pl.spec.Task
	for _, r := range pl.spec.Reveal {
		abs := absFrom(r, d.work)
		if t.Folder != "" && !filepath.IsAbs(r) {
			abs = filepath.Join(t.Folder, r) // reveals are relative to the folder
		}
		rp, err := realPath(abs)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: --reveal %s: %w", ErrBadSpec, r, err)
		}
		if pl.underStrong(rp) {
			return nil, nil, pl.s.openingRefused(pl.spec, fmt.Errorf("%w: --reveal %s would open a hidden path (credentials, Kule's home or another task)", ErrBadSpec, r), "--reveal", r, hiddenBy(rp, pl.strong))
		}
		readOnly = append(readOnly, rp)
		if t.Folder == "" {
			continue
		}
		rel, err := filepath.Rel(t.Folder, abs)
		if err != nil || !strings.HasPrefix(rel, "..") {
			continue // inside the folder (or not relative to it): the copy holds it already
		}
		l := filepath.Join(d.copy, rel)
		if within(l, d.kule) && !within(l, d.copy) && !within(l, d.tmp) && !within(l, d.home) && !within(l, d.cache) {
			links = append(links, link{Path: l, Target: rp})
		}
	}
	return readOnly, links, nil
}

// readOnlyInTask resolves spec.ReadOnlyInTask: each path must lie in the
// task's home layer or caches and be reached without a link below them (a
// command of the task could have planted one). It is shown read-only at
// its own path, so that a write to it fails inside the sandbox. Every
// folder between it and the task's tree is a pin, mounted writable over
// itself as it already is: a mount point cannot be renamed, so the command
// cannot move a folder that holds the read-only path aside and make a
// writable one of the same name in its place.
func (pl *planning) readOnlyInTask() (ro, pins []string, err error) {
	d := pl.dirs
	seen := map[string]bool{}
	for _, p := range pl.spec.ReadOnlyInTask {
		if !filepath.IsAbs(p) {
			return nil, nil, fmt.Errorf("%w: read-only path %q in the task is not absolute", ErrBadSpec, p)
		}
		if err := beneath.NoLinkBelow(p, d.home, d.cache, d.namedHome, d.namedCache); err != nil {
			return nil, nil, fmt.Errorf("%w: read-only path %s in the task: %w; a command in the task made it a link, so nothing ran — the next run places it anew", ErrBadSpec, p, err)
		}
		rp, err := realPath(p)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: read-only path in the task: %w (nothing ran)", ErrBadSpec, err)
		}
		root := ""
		for _, r := range []string{d.home, d.cache} {
			if within(rp, r) && rp != r {
				root = r
			}
		}
		if root == "" {
			return nil, nil, fmt.Errorf("%w: read-only path %s lies outside the task's home and caches (nothing ran)", ErrBadSpec, p)
		}
		ro = append(ro, rp)
		if pl.s.off.pins {
			continue
		}
		for dir := filepath.Dir(rp); dir != root && within(dir, root); dir = filepath.Dir(dir) {
			if !seen[dir] {
				seen[dir] = true
				pins = append(pins, dir)
			}
		}
	}
	return ro, pins, nil
}

// keeps are the folders put back inside soft hides: PATH entries, SDK
// folders, the person's Go module cache (which the task's GOPROXY reads
// first), the workspace's git directory and what /etc links into /run.
func (pl *planning) keeps() []string {
	var cands []string
	for _, env := range [][]string{pl.hostEnv, pl.spec.Env} {
		cands = append(cands, filepath.SplitList(lookupEnv(env, "PATH"))...)
		cands = append(cands, goModCache(env))
		for _, v := range sdkVars {
			cands = append(cands, filepath.SplitList(lookupEnv(env, v))...)
		}
	}
	if pl.spec.Task.Folder != "" {
		cands = append(cands, gitDirs(pl.spec.Task.Folder)...)
	}
	cands = append(cands, etcLinksIntoRun...)
	var out []string
	seen := map[string]bool{}
	for _, k := range cands {
		if !filepath.IsAbs(k) {
			continue
		}
		rp, ok := pl.res.existing(k)
		if !ok || seen[rp] || pl.underStrong(rp) || !pl.underSoft(rp) {
			continue
		}
		seen[rp] = true
		out = append(out, rp)
	}
	return out
}

// hides sets the plan's hidden folders and files: the strong and soft
// hides, the agents' logins not opened by name, and the sockets left in
// reach; runLinks join the plan's links when the run folders are hidden.
func (pl *planning) hides(p *plan, runLinks []link) {
	logins := pl.s.loginHides(pl.res, pl.personHome, pl.hostEnv, append(append([]string(nil), p.Writable...), p.ReadOnly...))
	var sockets []string
	if !pl.s.off.sockets {
		sockets = pl.s.socketsToHide(pl.spec, pl.res, p, pl.strong, pl.soft, logins)
		p.Links = append(p.Links, runLinks...)
	}
	p.Strong, p.Soft, p.Logins = dedupe(pl.strong), dedupe(pl.soft), dedupe(logins)
	for _, h := range append(append(append(pl.strong, pl.soft...), logins...), sockets...) {
		isDir, ok := pl.res.isDir(h)
		if !ok {
			continue // gone since it was found: nothing to cover
		}
		if isDir {
			p.HideDirs = append(p.HideDirs, h)
		} else {
			p.HideFiles = append(p.HideFiles, h)
		}
	}
	p.HideDirs, p.HideFiles = dedupe(p.HideDirs), dedupe(p.HideFiles)
}

// gitDirs finds the git directory of folder when it lies outside the folder
// (a worktree's .git file names it, and its commondir).
func gitDirs(folder string) []string {
	b, err := os.ReadFile(filepath.Join(folder, ".git"))
	if err != nil {
		return []string{filepath.Join(folder, ".git")}
	}
	line := strings.TrimSpace(string(b))
	gd, ok := strings.CutPrefix(line, "gitdir: ")
	if !ok {
		return nil
	}
	if !filepath.IsAbs(gd) {
		gd = filepath.Join(folder, gd)
	}
	out := []string{gd}
	if c, err := os.ReadFile(filepath.Join(gd, "commondir")); err == nil {
		cd := strings.TrimSpace(string(c))
		if !filepath.IsAbs(cd) {
			cd = filepath.Join(gd, cd)
		}
		out = append(out, filepath.Clean(cd))
	}
	return out
}

func absFrom(p, dir string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

// resolver resolves the symlinks of many paths that share directories
// (every credential path lies under the same home) with one lstat per new
// path instead of one per component: every path once resolved is kept, with
// its type when lstat found it (a plan looks up the same folders several
// times: the copy as the copy and as the working directory, PATH from two
// environments). One resolver serves one plan, so nothing it keeps
// outlives the moment; a path is looked up only once it is made.
type resolver struct {
	paths map[string]resolved    // clean absolute path -> what it resolves to
	modes map[string]fs.FileMode // real path -> its type, for those lstat found
}

type resolved struct {
	real string
	ok   bool
}

func newResolver() resolver {
	return resolver{paths: map[string]resolved{}, modes: map[string]fs.FileMode{}}
}

// existing resolves path's symlinks; ok is false when nothing is there.
func (r resolver) existing(path string) (string, bool) {
	path = filepath.Clean(path)
	if !filepath.IsAbs(path) || path == "/" {
		rp, err := filepath.EvalSymlinks(path)
		return rp, err == nil
	}
	if v, seen := r.paths[path]; seen {
		return v.real, v.ok
	}
	v := r.lookup(path)
	r.paths[path] = v
	return v.real, v.ok
}

func (r resolver) lookup(path string) resolved {
	dir, base := filepath.Split(path)
	rd, ok := r.existing(filepath.Clean(dir))
	if !ok {
		return resolved{}
	}
	full := filepath.Join(rd, base)
	fi, err := os.Lstat(full)
	if err != nil {
		return resolved{}
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		rp, err := filepath.EvalSymlinks(full)
		return resolved{rp, err == nil}
	}
	r.modes[full] = fi.Mode().Type()
	return resolved{full, true}
}

// isDir reports whether path (a real path) is a directory, from what
// existing found when it can.
func (r resolver) isDir(path string) (dir, ok bool) {
	if m, seen := r.modes[path]; seen {
		return m.IsDir(), true
	}
	fi, err := os.Stat(path)
	if err != nil {
		return false, false
	}
	return fi.IsDir(), true
}

// realDir is realDir (below) through the resolver.
func (r resolver) realDir(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	rp, ok := r.existing(abs)
	if !ok {
		return realDir(path) // for its error, which says what is missing
	}
	isDir, ok := r.isDir(rp)
	if !ok {
		return realDir(path)
	}
	if !isDir {
		return "", fmt.Errorf("%s is not a directory", path)
	}
	return rp, nil
}

func realPath(path string) (string, error) {
	rp, err := filepath.EvalSymlinks(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("%s does not exist", path)
		}
		return "", err
	}
	return filepath.Abs(rp)
}

func realDir(path string) (string, error) {
	rp, err := realPath(path)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(rp)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", path)
	}
	return rp, nil
}

// within reports whether path is dir or lies beneath it.
func within(path, dir string) bool {
	if dir == "/" {
		return true
	}
	return path == dir || strings.HasPrefix(path, dir+"/")
}

// covers reports whether path contains one of paths (opening path would
// open them too).
func covers(path string, paths []string) bool {
	for _, h := range paths {
		if within(h, path) {
			return true
		}
	}
	return false
}

func dedupe(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
