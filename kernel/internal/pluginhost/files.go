package pluginhost

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/kulehq/kule/kernel/internal/atomicfile"
	"golang.org/x/sys/unix"
)

// maxExecutable is the largest plugin executable accepted, in bytes.
const maxExecutable = 1 << 30

// Errors of openRegular, wrapped by its callers.
var (
	errSymlink    = errors.New("is a symlink; Kule reads only the regular files it installed")
	errNotRegular = errors.New("is not a regular file")
)

// openRegular opens path for reading without following a symlink in its last
// element and checks it is a regular file.
func openRegular(path string) (*os.File, os.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, nil, fmt.Errorf("%s %w", path, errSymlink)
	}
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("%s %w", path, errNotRegular)
	}
	return f, fi, nil
}

// readRegular reads a regular file (not through a symlink), at most max bytes.
func readRegular(path string, max int64) ([]byte, error) {
	f, _, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, max))
}

// hashRegular is the sha256 of the regular file at path.
func hashRegular(path string) (string, error) {
	f, _, err := openRegular(path)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrExecutable, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(f, maxExecutable)); err != nil {
		return "", fmt.Errorf("%w: %s: %w", ErrExecutable, path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// sealedCopy reads the executable at path once into a sealed in-memory file
// and returns it with the sha256 of exactly what it holds: what the host
// checks is what it executes, whatever happens to path afterwards.
func sealedCopy(name, path string) (*os.File, string, error) {
	src, _, err := openRegular(path)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %w", ErrExecutable, err)
	}
	defer src.Close()
	fd, err := unix.MemfdCreate("kule-plugin-"+name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|unix.MFD_EXEC)
	if errors.Is(err, unix.EINVAL) { // kernels before 6.3 lack MFD_EXEC
		fd, err = unix.MemfdCreate("kule-plugin-"+name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	}
	if err != nil {
		return nil, "", fmt.Errorf("%w: in-memory copy of %s: %v", ErrExecutable, path, err)
	}
	mem := os.NewFile(uintptr(fd), "kule-plugin-"+name)
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(mem, h), io.LimitReader(src, maxExecutable+1))
	if err == nil && n > maxExecutable {
		err = fmt.Errorf("larger than %d bytes", maxExecutable)
	}
	if err == nil {
		_, err = unix.FcntlInt(mem.Fd(), unix.F_ADD_SEALS, unix.F_SEAL_SEAL|unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE)
	}
	if err != nil {
		mem.Close()
		return nil, "", fmt.Errorf("%w: in-memory copy of %s: %v", ErrExecutable, path, err)
	}
	return mem, hex.EncodeToString(h.Sum(nil)), nil
}

// Install copies the plugin at src (a directory holding plugin.toml, or the
// plugin.toml itself) into $KULE_HOME/plugins/<name>/, read-only. The
// executable must match the sha256 its manifest states. Nothing is executed;
// the plugin then waits for approval. An existing install of the same name is
// replaced (its approval stays pinned to the old hash, so the new one waits).
func (h *Host) Install(src string) (Manifest, error) {
	manifestPath := src
	if fi, err := os.Stat(src); err == nil && fi.IsDir() {
		manifestPath = filepath.Join(src, ManifestFile)
	}
	data, err := os.ReadFile(manifestPath)
	if err != nil {
		return Manifest{}, fmt.Errorf("plugins: install: %w", err)
	}
	m, err := ParseManifest(data)
	if err != nil {
		return Manifest{}, fmt.Errorf("plugins: install %s: %w; nothing was installed", manifestPath, err)
	}
	exePath := filepath.Join(filepath.Dir(manifestPath), m.Executable)
	exe, err := os.Open(exePath) // the person's own path: follow a symlink here
	if err != nil {
		return Manifest{}, fmt.Errorf("plugins: install %s: %w; nothing was installed", m.Name, err)
	}
	defer exe.Close()
	if err := os.MkdirAll(h.pluginsDir(), 0o700); err != nil {
		return Manifest{}, fmt.Errorf("plugins: install %s: %w", m.Name, err)
	}
	tmp, err := os.MkdirTemp(h.pluginsDir(), ".install-")
	if err != nil {
		return Manifest{}, fmt.Errorf("plugins: install %s: %w", m.Name, err)
	}
	defer removeTree(tmp)
	out, err := os.OpenFile(filepath.Join(tmp, m.Executable), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o700)
	if err != nil {
		return Manifest{}, fmt.Errorf("plugins: install %s: %w", m.Name, err)
	}
	hs := sha256.New()
	_, err = io.Copy(io.MultiWriter(out, hs), io.LimitReader(exe, maxExecutable))
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Manifest{}, fmt.Errorf("plugins: install %s: copy executable: %w; nothing was installed", m.Name, err)
	}
	if sum := hex.EncodeToString(hs.Sum(nil)); sum != m.SHA256 {
		return Manifest{}, fmt.Errorf("%w: install %s: %s has sha256 %s but its manifest states %s; nothing was installed", ErrExecutable, m.Name, exePath, sum, m.SHA256)
	}
	if err := atomicfile.Write(filepath.Join(tmp, ManifestFile), data, 0o400); err != nil {
		return Manifest{}, fmt.Errorf("plugins: install %s: %w", m.Name, err)
	}
	for _, c := range []struct {
		p    string
		mode os.FileMode
	}{{filepath.Join(tmp, m.Executable), 0o500}, {filepath.Join(tmp, ManifestFile), 0o400}, {tmp, 0o500}} {
		if err := os.Chmod(c.p, c.mode); err != nil {
			return Manifest{}, fmt.Errorf("plugins: install %s: %w", m.Name, err)
		}
	}
	dest := h.Dir(m.Name)
	if _, err := os.Lstat(dest); err == nil {
		old := dest + ".old"
		_ = removeTree(old)
		if err := os.Rename(dest, old); err != nil {
			return Manifest{}, fmt.Errorf("plugins: install %s: move the old install aside: %w; the old install is kept", m.Name, err)
		}
		defer removeTree(old)
	}
	if err := os.Rename(tmp, dest); err != nil {
		return Manifest{}, fmt.Errorf("plugins: install %s: %w", m.Name, err)
	}
	if err := atomicfile.SyncDir(h.pluginsDir()); err != nil {
		return Manifest{}, fmt.Errorf("plugins: install %s: %w (it is installed, but a crash now may lose it: install it again)", m.Name, err)
	}
	h.opts.Logger.Info("plugin installed", "plugin", m.Name, "version", m.Version, "sha256", m.SHA256)
	return m, nil
}
