package kernel

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/kulehq/kule/kernel/internal/sandbox"
	"github.com/kulehq/kule/kernel/internal/secrets"
)

// FileSystemInfo is what kule doctor says about the file system a folder
// (or KULE_HOME) is on: what it is, how much room is left and whether a
// task's copy there shares blocks with what it copies.
type FileSystemInfo struct {
	Path     string `json:"path"`
	Type     string `json:"type"`     // "xfs", "btrfs", "ext4", "tmpfs", … or "0x…" for one not named here
	Free     uint64 `json:"free"`     // bytes an unprivileged writer may still use
	Device   uint64 `json:"device"`   // st_dev: two paths share a file system when equal
	Reflinks bool   `json:"reflinks"` // a clone (FICLONE) works here; only probed where Kule may write (ProbeFileSystem's probe)
}

// ErrFileSystemProbe: the file system of a path could not be read.
var ErrFileSystemProbe = errors.New("file system")

// fsNames are the statfs magic numbers of the file systems a person is
// likely to keep folders on (linux/magic.h).
var fsNames = map[int64]string{
	0xEF53:     "ext4",
	0x58465342: "xfs",
	0x9123683E: "btrfs",
	0x01021994: "tmpfs",
	0x794C7630: "overlayfs",
	0x2FC12FC1: "zfs",
	0xCA451A4E: "bcachefs",
	0xF2F52010: "f2fs",
	0x6969:     "nfs",
	0xFF534D42: "cifs",
	0x65735546: "fuse",
	0x4D44:     "vfat",
	0x5346544E: "ntfs",
}

// ProbeFileSystem reads the file system of path. With probe true it also
// tries one reflink there: it makes two small files in path (a directory
// Kule owns, such as KULE_HOME, never a person's folder), clones one into
// the other and removes both. A folder on the same device as KULE_HOME
// gets reflink copies exactly when KULE_HOME's file system clones.
func ProbeFileSystem(path string, probe bool) (FileSystemInfo, error) {
	info := FileSystemInfo{Path: path}
	var sfs unix.Statfs_t
	if err := unix.Statfs(path, &sfs); err != nil {
		return info, fmt.Errorf("%w: %s: %w", ErrFileSystemProbe, path, err)
	}
	info.Type = fsNames[int64(sfs.Type)]
	if info.Type == "" {
		info.Type = fmt.Sprintf("0x%X", uint64(sfs.Type))
	}
	info.Free = sfs.Bavail * uint64(sfs.Bsize)
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return info, fmt.Errorf("%w: %s: %w", ErrFileSystemProbe, path, err)
	}
	info.Device = uint64(st.Dev)
	if probe {
		ok, err := cloneWorks(path)
		if err != nil {
			return info, err
		}
		info.Reflinks = ok
	}
	return info, nil
}

// cloneWorks makes a 4 KiB file in dir and clones it (FICLONE) into a
// second one, removing both. An error is one of making the files (dir is
// full or not writable); a refused clone is false.
func cloneWorks(dir string) (bool, error) {
	src, err := os.CreateTemp(dir, ".reflink-probe-*")
	if err != nil {
		return false, fmt.Errorf("%w: %s: cannot make a probe file: %w", ErrFileSystemProbe, dir, err)
	}
	defer os.Remove(src.Name())
	defer src.Close()
	if _, err := src.Write(make([]byte, 4096)); err != nil {
		return false, fmt.Errorf("%w: %s: cannot write a probe file: %w", ErrFileSystemProbe, dir, err)
	}
	dst, err := os.CreateTemp(dir, ".reflink-probe-*")
	if err != nil {
		return false, fmt.Errorf("%w: %s: cannot make a probe file: %w", ErrFileSystemProbe, dir, err)
	}
	defer os.Remove(dst.Name())
	defer dst.Close()
	return unix.IoctlFileClone(int(dst.Fd()), int(src.Fd())) == nil, nil
}

// FolderSize is the bytes and files under folder, as a copy of it would
// hold them (regular files' sizes; links and directories count as files
// of no size). Entries it cannot read are skipped: it estimates.
func FolderSize(folder string) (bytes int64, files int, err error) {
	return FolderSizeUpTo(folder, 0, 0)
}

// FolderSizeUpTo is FolderSize that stops once the bytes pass maxBytes or
// the files pass maxFiles (0: no bound), so a check against a bound does
// not walk all of a huge folder.
func FolderSizeUpTo(folder string, maxBytes int64, maxFiles int) (bytes int64, files int, err error) {
	err = filepath.WalkDir(folder, func(_ string, d os.DirEntry, err error) error {
		if (maxBytes > 0 && bytes > maxBytes) || (maxFiles > 0 && files > maxFiles) {
			return filepath.SkipAll
		}
		if err != nil {
			if d != nil && d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		files++
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				bytes += fi.Size()
			}
		}
		return nil
	})
	return bytes, files, err
}

// SealingInfo is how the secrets of a Kule home are sealed, as kule doctor
// reports it.
type SealingInfo struct {
	Kind     string `json:"kind"`     // "key-file", "secret-service", or "" when no secret was kept yet
	Recorded bool   `json:"recorded"` // the choice is written in secrets/sealing
	KeyFile  string `json:"key_file,omitempty"`
	Problem  string `json:"problem,omitempty"` // what is wrong; "" when the key can be had
	Fix      string `json:"fix,omitempty"`     // what to do about Problem
}

// ProbeSealing looks at the home's sealing without writing anything (it
// never makes a key file, unlike the store's first use): the recorded
// choice and whether its key can be had, or which choice the first secret
// would make.
func ProbeSealing(home string) SealingInfo {
	info := SealingInfo{KeyFile: secrets.KeyFilePath(home)}
	b, err := os.ReadFile(filepath.Join(home, "secrets", "sealing"))
	if errors.Is(err, os.ErrNotExist) {
		if os.Getenv("DBUS_SESSION_BUS_ADDRESS") != "" {
			info.Kind = secrets.SecretService
		} else {
			info.Kind = secrets.KeyFile
		}
		return info
	}
	if err != nil {
		info.Problem = fmt.Sprintf("cannot read %s: %v", filepath.Join(home, "secrets", "sealing"), err)
		info.Fix = "check the permissions of " + home
		return info
	}
	info.Recorded = true
	info.Kind = strings.TrimSpace(string(b))
	switch info.Kind {
	case secrets.KeyFile:
		fi, err := os.Stat(info.KeyFile)
		switch {
		case errors.Is(err, os.ErrNotExist):
			info.Problem = fmt.Sprintf("the secrets are sealed with the key file %s, which is gone: they cannot be opened", info.KeyFile)
			info.Fix = fmt.Sprintf("restore it from a backup, or remove %s and add the secrets again", filepath.Join(home, "secrets"))
		case err != nil:
			info.Problem = fmt.Sprintf("cannot read the key file: %v", err)
			info.Fix = "check the permissions of " + filepath.Dir(info.KeyFile)
		case fi.Mode().Perm()&0o077 != 0:
			info.Problem = fmt.Sprintf("the key file %s is %v, readable by others: kule refuses to use it", info.KeyFile, fi.Mode().Perm())
			info.Fix = fmt.Sprintf("run `chmod 600 %s` (and think whether someone read it)", info.KeyFile)
		}
	case secrets.SecretService:
		if _, err := secrets.OpenSealer(home, false); err != nil {
			info.Problem = err.Error()
			info.Fix = "unlock the keyring, or log in to a desktop session, then run kule doctor again"
		}
	default:
		info.Problem = fmt.Sprintf("%s names an unknown sealing %q", filepath.Join(home, "secrets", "sealing"), info.Kind)
		info.Fix = "write key-file or secret-service in it, whichever sealed the secrets"
	}
	return info
}

// SandboxHelperName is the sandbox's helper binary, looked for beside the
// kule executable. See [sandbox.HelperName].
const SandboxHelperName = sandbox.HelperName
