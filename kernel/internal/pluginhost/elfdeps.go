package pluginhost

import (
	"debug/elf"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// What a dynamically linked plugin needs to read to start, found in its ELF
// headers before it runs (never by running it): the program interpreter
// (ld.so), the libraries it names (DT_NEEDED, recursively) found in the
// system's library folders, and ld.so's cache. A static executable needs
// nothing but itself. A library not found here makes the plugin fail at
// start with the loader's own message; nothing else opens.

// maxDeps bounds the libraries followed for one executable.
const maxDeps = 64

// libDirs are searched for DT_NEEDED names, in ld.so's default order.
func libDirs() []string {
	triplet := map[string]string{"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu", "386": "i386-linux-gnu", "riscv64": "riscv64-linux-gnu"}[runtime.GOARCH]
	var dirs []string
	if triplet != "" {
		dirs = append(dirs, "/lib/"+triplet, "/usr/lib/"+triplet)
	}
	return append(dirs, "/lib64", "/usr/lib64", "/lib", "/usr/lib", "/usr/local/lib")
}

// elfLinks reads the interpreter and the DT_NEEDED names of one ELF file.
// A file that is not ELF (a script) yields neither and no error: it needs
// its interpreter, which a differ is not given.
func elfLinks(r io.ReaderAt) (interp string, needed []string, err error) {
	f, err := elf.NewFile(r)
	if err != nil {
		return "", nil, nil
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b := make([]byte, min(p.Filesz, 4096))
		if _, err := p.ReadAt(b, 0); err != nil && err != io.EOF {
			return "", nil, fmt.Errorf("read its interpreter: %w", err)
		}
		interp = strings.TrimRight(string(b), "\x00")
	}
	needed, err = f.ImportedLibraries()
	if err != nil {
		return interp, nil, nil // no dynamic section: nothing more to read
	}
	if len(needed) > maxDeps {
		needed = needed[:maxDeps]
	}
	return interp, needed, nil
}

// startReads lists the files an executable read through r must read to
// start: its interpreter, its libraries and theirs, and ld.so.cache.
func startReads(r io.ReaderAt) ([]string, error) {
	interp, needed, err := elfLinks(r)
	if err != nil {
		return nil, err
	}
	if interp == "" && len(needed) == 0 {
		return nil, nil
	}
	var out []string
	seen := map[string]bool{}
	add := func(p string) bool {
		rp, err := filepath.EvalSymlinks(p)
		if err != nil || seen[rp] {
			return false
		}
		seen[rp] = true
		out = append(out, rp)
		return true
	}
	if filepath.IsAbs(interp) {
		add(interp)
	}
	add("/etc/ld.so.cache")
	queue := append([]string(nil), needed...)
	for len(queue) > 0 && len(seen) < maxDeps {
		name := queue[0]
		queue = queue[1:]
		if strings.Contains(name, "/") {
			continue // a path of its own: not followed
		}
		for _, d := range libDirs() {
			p := filepath.Join(d, name)
			if _, err := os.Stat(p); err != nil {
				continue
			}
			if add(p) {
				if f, err := os.Open(p); err == nil {
					_, more, _ := elfLinks(f)
					f.Close()
					queue = append(queue, more...)
				}
			}
			break
		}
	}
	return out, nil
}
