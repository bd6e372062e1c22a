package sandbox

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// baseDevices are given to every command. /dev/pts (a private instance),
// /dev/ptmx, /dev/shm and the fd links are made by the helper itself.
var baseDevices = []string{"null", "zero", "full", "random", "urandom", "tty"}

// gpuDevices are given unless NoGPU; globs under /dev.
var gpuDevices = []string{"dri", "nvidia*", "nvidiactl", "nvidia-uvm*", "nvidia-modeset", "kfd"}

// refusedDevices are never given, whatever a profile asks: disks, memory,
// input devices, consoles, and anything else that reaches the machine.
var refusedDevices = []string{
	"mem", "kmem", "port", "kmsg", "console", "input", "tty[0-9]*", "ttyS*",
	"vcs*", "sd*", "hd*", "vd*", "xvd*", "nvme*", "mmcblk*", "loop*", "dm-*",
	"md*", "sr*", "mapper", "disk", "block", "sg*", "fuse", "uinput",
	"userfaultfd", "kvm", "vhost-*", "mei*", "hpet", "cpu", "msr",
	"watchdog*", "autofs", "btrfs-control", "zram*", "nbd*", "rbd*", "ram*",
	"bus", "vsock", "net",
}

// checkDevice refuses a device name that is refused or that names a block
// device or a path outside /dev.
func checkDevice(name string) error {
	if name == "" || strings.Contains(name, "..") || filepath.IsAbs(name) {
		return fmt.Errorf("%w: %q is not a device name under /dev", ErrDevice, name)
	}
	first := strings.SplitN(name, "/", 2)[0]
	for _, pat := range refusedDevices {
		if ok, _ := filepath.Match(pat, first); ok {
			return fmt.Errorf("%w: /dev/%s (disks, memory, input devices and consoles are never given)", ErrDevice, name)
		}
	}
	fi, err := os.Stat(filepath.Join("/dev", name))
	if err != nil {
		return fmt.Errorf("%w: /dev/%s: %w", ErrDevice, name, err)
	}
	if fi.Mode()&os.ModeDevice != 0 && fi.Mode()&os.ModeCharDevice == 0 {
		return fmt.Errorf("%w: /dev/%s is a block device", ErrDevice, name)
	}
	return nil
}

// devices lists the devices to give; on a refused one it returns its name
// too. /dev is read once: a glob per GPU pattern read it three times, a
// fifth of making a plan.
func (s *Sandbox) devices() ([]string, string, error) {
	present := map[string]fs.FileMode{}
	entries, _ := os.ReadDir("/dev") // unreadable: every device is looked up alone
	for _, e := range entries {
		present[e.Name()] = e.Type()
	}
	out := append([]string(nil), baseDevices...)
	if !s.NoGPU {
		for _, g := range gpuDevices {
			for _, e := range entries {
				if ok, _ := filepath.Match(g, e.Name()); ok {
					out = append(out, e.Name())
				}
			}
		}
	}
	for _, d := range s.Devices {
		d = strings.TrimPrefix(filepath.Clean(d), "/dev/")
		if err := checkDevice(d); err != nil {
			return nil, d, err
		}
		out = append(out, d)
	}
	var have []string
	for _, d := range out {
		if t, ok := present[d]; ok && t&fs.ModeSymlink == 0 {
			have = append(have, d) // there, and no link that could dangle
		} else if _, err := os.Stat(filepath.Join("/dev", d)); err == nil {
			have = append(have, d)
		}
	}
	return dedupe(have), "", nil
}
