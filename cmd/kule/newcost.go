package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/term"

	"github.com/kulehq/kule/kernel"
)

// Above these, kule new of a folder that gets a plain copy (no reflinks
// between it and KULE_HOME) says what the copy costs and asks first.
const (
	askBytes = 10 << 30
	askFiles = 200_000
)

// copyCost says what a plain copy of folder into home costs when it is
// over maxBytes or maxFiles, or "" when it is not (or shares blocks).
func copyCost(folder, home string, maxBytes int64, maxFiles int) (string, error) {
	abs, err := filepath.Abs(folder)
	if err != nil {
		return "", err
	}
	// A folder kule new refuses, or one that is not there, is said by
	// kule new itself, before anything is measured.
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return "", nil
	}
	personHome, _ := os.UserHomeDir()
	if kernel.CheckTaskFolder(abs, personHome, home) != nil {
		return "", nil
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return "", err
	}
	hi, err := kernel.ProbeFileSystem(home, true)
	if err != nil {
		return "", err
	}
	fi, err := kernel.ProbeFileSystem(abs, false)
	if err != nil {
		return "", nil // kule new says what is wrong with the folder
	}
	if hi.Reflinks && fi.Device == hi.Device {
		return "", nil
	}
	bytes, files, err := kernel.FolderSizeUpTo(abs, maxBytes, maxFiles)
	if err != nil || (bytes <= maxBytes && files <= maxFiles) {
		return "", nil
	}
	size, n := gib(uint64(bytes)), plural(files, "file")
	if bytes > maxBytes || files > maxFiles {
		size, n = "over "+size, "over "+n
	}
	return fmt.Sprintf("%s holds %s (%s) and gets a plain copy: %s is on %s, which has no reflinks to share blocks with it, so the task takes that space (%s free) and time to copy",
		abs, size, n, home, hi.Type, gib(hi.Free)), nil
}

// confirm asks a yes-or-no question on the terminal; anything but y or
// yes is no.
func confirm(in io.Reader, out io.Writer, q string) bool {
	fmt.Fprint(out, q+" [y/N] ")
	line, _ := bufio.NewReader(in).ReadString('\n')
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "y" || a == "yes"
}

// checkCopyCost stops kule new of a large folder that would be copied
// whole, unless the person says yes (on a terminal) or gave --yes.
func checkCopyCost(folder string, yes bool, in io.Reader, out io.Writer) error {
	return askCopyCost(folder, yes, in, out, askBytes, askFiles)
}

// askCopyCost is checkCopyCost with the bounds over which it asks.
func askCopyCost(folder string, yes bool, in io.Reader, out io.Writer, maxBytes int64, maxFiles int) error {
	if yes {
		return nil
	}
	home, err := kernel.DefaultHome()
	if err != nil {
		return err
	}
	msg, err := copyCost(folder, home, maxBytes, maxFiles)
	if err != nil || msg == "" {
		return err
	}
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprintln(out, "kule: "+safeLine(msg)+".")
		if confirm(in, out, "Make the task anyway?") {
			return nil
		}
		return fmt.Errorf("new: not made (nothing was copied); put KULE_HOME on the folder's file system, on XFS or Btrfs, to make copies free")
	}
	return fmt.Errorf("new: %s. Nothing was copied; run kule new --yes to make it anyway, or put KULE_HOME on the folder's file system, on XFS or Btrfs", msg)
}
