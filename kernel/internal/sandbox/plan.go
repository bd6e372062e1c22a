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
	FSize    int64    // RLIMIT_FSIZE for the command, when positive
	Writable []string // --allow-write: writable at their own paths
	ReadOnly []string // revealed projects: read-only at their own paths
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

	Landlock bool // apply Landlock (false only with weaker isolation accepted)

	// Seccomp is the errno the helper's seccomp filter (pid1_linux.c's
	// seccomp_filter) refuses system calls with: EPERM. Only attack tests
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
			if f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct {
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

func (s *Sandbox) plan(spec runner.Spec) (*plan, error) {
	if len(spec.Args) == 0 {
		return nil, runner.ErrNoCommand
	}
	res := newResolver()
	t := spec.Task
	for name, p := range map[string]string{"copy": t.Copy, "tmp": t.Tmp, "kule home": t.KuleDir} {
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("%w: task %s path %q is not absolute", ErrBadSpec, name, p)
		}
	}
	copyDir, err := res.realDir(t.Copy)
	if err != nil {
		return nil, fmt.Errorf("%w: the task's copy: %w", ErrBadSpec, err)
	}
	if err := os.MkdirAll(t.Tmp, 0o700); err != nil {
		return nil, fmt.Errorf("%w: the task's tmp: %w", ErrBadSpec, err)
	}
	tmpDir, _ := res.realDir(t.Tmp)
	home := t.Home
	if home == "" {
		home = filepath.Join(t.Dir, "home")
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, fmt.Errorf("%w: the task's home: %w", ErrBadSpec, err)
	}
	homeDir, _ := res.realDir(home)
	cache := filepath.Join(t.Dir, "cache")
	if t.Dir == "" {
		cache = filepath.Join(filepath.Dir(t.Copy), "cache")
	}
	if err := os.MkdirAll(cache, 0o700); err != nil {
		return nil, fmt.Errorf("%w: the task's caches: %w", ErrBadSpec, err)
	}
	cacheDir, _ := res.realDir(cache)
	kule, err := res.realDir(t.KuleDir)
	if err != nil {
		return nil, fmt.Errorf("%w: kule home: %w", ErrBadSpec, err)
	}
	dir := spec.Dir
	if dir == "" {
		dir = t.Copy
	}
	if rd, err := res.realDir(dir); err == nil {
		dir = rd
	}
	if !within(dir, copyDir) {
		return nil, fmt.Errorf("%w: working directory %s is not inside the task's copy %s", ErrBadSpec, spec.Dir, t.Copy)
	}

	p := &plan{
		Args: spec.Args, Dir: dir, Copy: copyDir, Tmp: tmpDir, Home: homeDir, Cache: cacheDir, FSize: spec.FileSizeLimit,
		NetNS: spec.Network != runner.NetworkOpen, NoTCP: spec.Network == runner.NetworkNone,
		Seccomp: s.seccompErrno(),
	}
	if spec.Network == runner.NetworkProxy && spec.ProxyAddr != "" {
		_, port, err := net.SplitHostPort(spec.ProxyAddr)
		n, err2 := strconv.Atoi(port)
		if err != nil || err2 != nil || n <= 0 || n > 65535 {
			return nil, fmt.Errorf("%w: proxy address %q is not host:port", ErrBadSpec, spec.ProxyAddr)
		}
		p.ProxyPort = n
	}
	hostEnv := s.hostEnv()
	personHome := s.home()
	if rh, err := res.realDir(personHome); err == nil {
		personHome = rh
	}

	// Strong hides: nothing kept or revealed may reopen them.
	var strong []string
	addStrong := func(path string) {
		if rp, ok := res.existing(path); ok {
			strong = append(strong, rp)
		}
	}
	if personHome != "" && personHome != "/" {
		if !s.off.credentials {
			for _, c := range credentials.Home {
				addStrong(filepath.Join(personHome, filepath.FromSlash(c)))
			}
		}
	}
	for _, v := range []string{"CARGO_HOME"} {
		if d := lookupEnv(hostEnv, v); d != "" {
			addStrong(filepath.Join(d, "credentials"))
			addStrong(filepath.Join(d, "credentials.toml"))
		}
	}
	if x := lookupEnv(hostEnv, "XDG_RUNTIME_DIR"); x != "" {
		addStrong(x)
	}
	for _, sock := range systemSockets {
		addStrong(sock)
	}
	addStrong(kule)
	for _, h := range spec.Hide {
		rp, ok := res.existing(absFrom(h, dir))
		if !ok {
			continue // nothing there to hide; writes there are refused anyway
		}
		strong = append(strong, rp)
	}

	// Soft hides: personal folders and the projects beside the workspace.
	var soft []string
	if personHome != "" && personHome != "/" {
		soft = append(soft, s.personalFolders(res, personHome, hostEnv)...)
		if t.Folder != "" {
			folder := t.Folder
			if rf, err := res.realDir(folder); err == nil {
				folder = rf
			}
			if d := besideWorkspace(folder, personHome, s.off.siblings); d != "" {
				soft = append(soft, d)
			}
		}
	}
	var runLinks []link
	if !s.off.sockets {
		for _, d := range runDirs {
			rp, ok := res.existing(d)
			if isDir, _ := res.isDir(rp); !ok || !isDir {
				continue
			}
			soft = append(soft, rp)
			runLinks = append(runLinks, topLinks(rp)...)
		}
	}
	underStrong := func(path string) bool {
		for _, h := range strong {
			if within(path, h) {
				return true
			}
		}
		return false
	}
	underAny := func(path string, hides []string) bool {
		for _, h := range hides {
			if within(path, h) && path != h {
				return true
			}
		}
		return false
	}

	for _, w := range spec.AllowWrite {
		abs := absFrom(w, dir)
		// Resolved once, here, outside the sandbox: a link a command put in
		// the task's trees (out -> ~/.config/autostart) is never followed.
		if err := beneath.NoLinkBelow(abs, copyDir, tmpDir, homeDir, cacheDir, t.Copy, t.Tmp, home, cache); err != nil {
			return nil, fmt.Errorf("%w: --allow-write %s: %w; a command in the task made it a link, so it was not opened and nothing ran — remove the link, or name the directory you mean by its own path", ErrBadSpec, w, err)
		}
		rp, err := res.realDir(abs)
		if err != nil {
			return nil, fmt.Errorf("%w: --allow-write %s: %w", ErrBadSpec, w, err)
		}
		if rp != filepath.Clean(w) {
			fmt.Fprintf(s.warn(), "kule: --allow-write %s opens %s\n", w, rp)
		}
		if underStrong(rp) || covers(rp, strong) {
			return nil, s.openingRefused(spec, fmt.Errorf("%w: --allow-write %s would open a hidden path (credentials, Kule's home or another task)", ErrBadSpec, w), "--allow-write", w, hiddenBy(rp, strong))
		}
		p.Writable = append(p.Writable, rp)
	}
	for _, r := range spec.Reveal {
		abs := absFrom(r, dir)
		if t.Folder != "" && !filepath.IsAbs(r) {
			abs = filepath.Join(t.Folder, r) // reveals are relative to the folder
		}
		rp, err := realPath(abs)
		if err != nil {
			return nil, fmt.Errorf("%w: --reveal %s: %w", ErrBadSpec, r, err)
		}
		if underStrong(rp) {
			return nil, s.openingRefused(spec, fmt.Errorf("%w: --reveal %s would open a hidden path (credentials, Kule's home or another task)", ErrBadSpec, r), "--reveal", r, hiddenBy(rp, strong))
		}
		p.ReadOnly = append(p.ReadOnly, rp)
		if t.Folder != "" {
			if rel, err := filepath.Rel(t.Folder, abs); err == nil && strings.HasPrefix(rel, "..") {
				l := filepath.Join(copyDir, rel)
				if within(l, kule) && !within(l, copyDir) && !within(l, tmpDir) && !within(l, homeDir) && !within(l, cacheDir) {
					p.Links = append(p.Links, link{Path: l, Target: rp})
				}
			}
		}
	}

	// Keeps: PATH entries, SDK folders, the person's Go module cache
	// (which the task's GOPROXY reads first), the workspace's git
	// directory.
	var keeps []string
	for _, env := range [][]string{hostEnv, spec.Env} {
		keeps = append(keeps, filepath.SplitList(lookupEnv(env, "PATH"))...)
		keeps = append(keeps, goModCache(env))
		for _, v := range sdkVars {
			keeps = append(keeps, filepath.SplitList(lookupEnv(env, v))...)
		}
	}
	if t.Folder != "" {
		keeps = append(keeps, gitDirs(t.Folder)...)
	}
	keeps = append(keeps, etcLinksIntoRun...)
	seen := map[string]bool{}
	for _, k := range keeps {
		if !filepath.IsAbs(k) {
			continue
		}
		rp, ok := res.existing(k)
		if !ok || seen[rp] || underStrong(rp) || !underAny(rp, soft) {
			continue
		}
		seen[rp] = true
		p.Keep = append(p.Keep, rp)
	}

	logins := s.loginHides(res, personHome, hostEnv, append(append([]string(nil), p.Writable...), p.ReadOnly...))

	var sockets []string
	if !s.off.sockets {
		sockets = s.socketsToHide(spec, res, p, strong, soft, logins)
		p.Links = append(p.Links, runLinks...)
	}

	p.Strong, p.Soft, p.Logins = dedupe(strong), dedupe(soft), dedupe(logins)
	for _, h := range append(append(append(strong, soft...), logins...), sockets...) {
		isDir, ok := res.isDir(h)
		if !ok {
			continue
		}
		if isDir {
			p.HideDirs = append(p.HideDirs, h)
		} else {
			p.HideFiles = append(p.HideFiles, h)
		}
	}
	p.HideDirs, p.HideFiles = dedupe(p.HideDirs), dedupe(p.HideFiles)

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
