package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/kulehq/kule/kernel/internal/atomicfile"
)

// PackagesRoot is ~/.local/share/kule/packages (or under $XDG_DATA_HOME):
// where npx agents are installed, once per exact version. No sandbox can
// write it. The sandbox gives each task its own /tmp, so a root there would
// be empty inside it: with a home under /tmp the root is a folder of the
// person's own in /var/tmp instead (UnderTmp tells when even that fails).
func PackagesRoot() (string, error) {
	root := ""
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		root = filepath.Join(d, "kule", "packages")
	} else {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("agents: packages: %w", err)
		}
		root = filepath.Join(home, ".local", "share", "kule", "packages")
	}
	if !UnderTmp(root) {
		return root, nil
	}
	if alt, err := outsideTmp(); err == nil {
		return filepath.Join(alt, "packages"), nil
	}
	return root, nil // kule agents says it cannot start there
}

// SandboxTmp is where the sandbox puts each task's own /tmp.
const SandboxTmp = "/tmp"

// UnderTmp reports whether p (resolved as far as it exists) lies in
// SandboxTmp, which the sandbox replaces with the task's own.
func UnderTmp(p string) bool {
	p = filepath.Clean(p)
	rest := ""
	for cur := p; ; cur = filepath.Dir(cur) {
		if real, err := filepath.EvalSymlinks(cur); err == nil {
			p = filepath.Join(real, rest)
			break
		}
		if cur == filepath.Dir(cur) {
			break
		}
		rest = filepath.Join(filepath.Base(cur), rest)
	}
	tmp := SandboxTmp
	if real, err := filepath.EvalSymlinks(tmp); err == nil {
		tmp = real
	}
	return p == tmp || strings.HasPrefix(p, tmp+"/")
}

// outsideTmp is /var/tmp/kule-UID, made 0700 if missing: Kule's folder
// for agents when the home is under /tmp. /var/tmp is shared by every
// user, so one that is not a plain folder of this user's, closed to
// others, is refused.
func outsideTmp() (string, error) {
	dir := filepath.Join("/var/tmp", fmt.Sprintf("kule-%d", os.Getuid()))
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Getuid() || fi.Mode().Perm()&0o077 != 0 || UnderTmp(dir) {
		return "", fmt.Errorf("agents: %s is not a folder of yours closed to others", dir)
	}
	return dir, nil
}

// PackageDir is where pkg is (or will be) installed under root.
func PackageDir(root string, pkg Package) string {
	return filepath.Join(root, strings.ReplaceAll(pkg.Name, "/", "+")+"@"+pkg.Version)
}

// Installed reports whether pkg is installed under root.
func Installed(root string, pkg Package) bool {
	_, err := os.Stat(filepath.Join(PackageDir(root, pkg), ".kule-installed"))
	return err == nil
}

// Install installs an npx package once, outside any sandbox, without running
// its install scripts: npm install --ignore-scripts --prefix DIR name@version.
// A second call finds it installed. out receives npm's output.
func Install(ctx context.Context, root string, pkg Package, out io.Writer) (string, error) {
	if pkg.Runner != "npx" {
		return "", fmt.Errorf("%w: %s packages are not installed by Kule yet; install %s==%s yourself and name its command", ErrNotInstall, pkg.Runner, pkg.Name, pkg.Version)
	}
	if _, err := exec.LookPath("npm"); err != nil {
		return "", fmt.Errorf("%w: %s@%s needs npm (and node): install them (Debian: apt-get install nodejs npm)", ErrNotInstall, pkg.Name, pkg.Version)
	}
	dir := PackageDir(root, pkg)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("agents: install: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".kule-lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", fmt.Errorf("agents: install: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("agents: install: %w", err)
	}
	if Installed(root, pkg) {
		return dir, nil
	}
	cmd := exec.CommandContext(ctx, "npm", "install", "--ignore-scripts", "--no-audit", "--no-fund", "--save-exact", "--prefix", dir, pkg.Name+"@"+pkg.Version)
	cmd.Env = append(os.Environ(), "npm_config_update_notifier=false")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%w: npm install %s@%s into %s: %v (nothing was started; run again when the network allows)", ErrNotInstall, pkg.Name, pkg.Version, dir, err)
	}
	if err := atomicfile.Write(filepath.Join(dir, ".kule-installed"), []byte(pkg.Name+"@"+pkg.Version+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("agents: install: %w", err)
	}
	return dir, nil
}

// BinOf returns the script an installed package's bin names: the bin named
// like the package, or its only one.
func BinOf(root string, pkg Package) (string, error) {
	pdir := filepath.Join(PackageDir(root, pkg), "node_modules", filepath.FromSlash(pkg.Name))
	b, err := os.ReadFile(filepath.Join(pdir, "package.json"))
	if err != nil {
		return "", fmt.Errorf("agents: %s@%s: %w", pkg.Name, pkg.Version, err)
	}
	var pj struct {
		Version string          `json:"version"`
		Bin     json.RawMessage `json:"bin"`
	}
	if err := json.Unmarshal(b, &pj); err != nil {
		return "", fmt.Errorf("agents: %s@%s: package.json: %w", pkg.Name, pkg.Version, err)
	}
	if strings.TrimPrefix(pkg.Version, "v") != pj.Version {
		return "", fmt.Errorf("agents: %s: installed %s, want %s", pkg.Name, pj.Version, pkg.Version)
	}
	var one string
	if json.Unmarshal(pj.Bin, &one) == nil && one != "" {
		return filepath.Join(pdir, filepath.FromSlash(one)), nil
	}
	var many map[string]string
	if err := json.Unmarshal(pj.Bin, &many); err != nil || len(many) == 0 {
		return "", fmt.Errorf("agents: %s@%s has no program to start (no bin in package.json)", pkg.Name, pkg.Version)
	}
	if s, ok := many[path.Base(pkg.Name)]; ok {
		return filepath.Join(pdir, filepath.FromSlash(s)), nil
	}
	if len(many) == 1 {
		for _, s := range many {
			return filepath.Join(pdir, filepath.FromSlash(s)), nil
		}
	}
	names := make([]string, 0, len(many))
	for n := range many {
		names = append(names, n)
	}
	sort.Strings(names)
	return "", fmt.Errorf("agents: %s@%s has several programs (%s); name one in the command", pkg.Name, pkg.Version, strings.Join(names, ", "))
}

// Launch returns the argv that starts the profile's agent: an npx package
// becomes node and its installed script (installing it first when install
// is true); any other command is returned as it is.
func Launch(ctx context.Context, p Profile, root string, install bool, out io.Writer) ([]string, error) {
	pkg, ok, err := PackageOf(p.Command)
	if err != nil {
		return nil, refuse(p, "command: %v", err)
	}
	if !ok {
		return append([]string(nil), p.Command...), nil
	}
	if pkg.Runner != "npx" {
		return append([]string(nil), p.Command...), nil
	}
	if need := NodeNeed(p, root); need != "" && checkNode {
		return nil, fmt.Errorf("%w: %s cannot start here: install %s (nothing was started)", ErrNode, p.Name, need)
	}
	if !Installed(root, pkg) {
		if !install {
			return nil, fmt.Errorf("%w: %s@%s is not installed yet", ErrNotInstall, pkg.Name, pkg.Version)
		}
		if _, err := Install(ctx, root, pkg, out); err != nil {
			return nil, err
		}
	}
	bin, err := BinOf(root, pkg)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(bin); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("agents: %s@%s: its program %s is missing; delete %s to install it again", pkg.Name, pkg.Version, bin, PackageDir(root, pkg))
	}
	if need := NodeNeed(p, root); need != "" && checkNode {
		return nil, fmt.Errorf("%w: %s cannot start here: install %s (nothing was started)", ErrNode, p.Name, need)
	}
	return append([]string{"node", bin}, pkg.Args...), nil
}
