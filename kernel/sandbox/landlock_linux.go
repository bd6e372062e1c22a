//go:build linux

package sandbox

import (
	"fmt"
	"path/filepath"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

func landlockABI() int {
	v, err := ll.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
}

// restrictLandlock applies the command's ruleset to the calling (locked)
// thread: read and execute everywhere the mounts show, write only to the
// copy, the task's home and /tmp, --allow-write and the named devices; TCP
// connect only to the proxy port; no signals or abstract sockets out of the
// domain.
func restrictLandlock(p *plan) error {
	cfg := landlock.Config{
		HandledAccessFS: landlock.V7.HandledAccessFS,
		Scoped:          landlock.V7.Scoped,
	}
	if p.NetNS {
		cfg.HandledAccessNet = ll.AccessNetConnectTCP
	}
	rw := append([]string{p.Copy, p.Home, p.Cache, "/tmp"}, p.Writable...)
	var devs []string
	for _, d := range p.Devices {
		devs = append(devs, filepath.Join("/dev", d))
	}
	devs = append(devs, "/dev/pts", "/dev/ptmx")
	rules := []landlock.Rule{
		landlock.RODirs("/"),
		landlock.RWDirs(rw...).WithRefer(),
		landlock.RWDirs("/dev/shm"),
		landlock.RWFiles(devs...).WithIoctlDev().IgnoreIfMissing(),
	}
	if p.ProxyPort > 0 {
		rules = append(rules, landlock.ConnectTCP(uint16(p.ProxyPort)))
	}
	fd, flags, err := cfg.BestEffort().NewRulesetFD(rules...)
	if err != nil {
		return fmt.Errorf("landlock: build the ruleset: %w", err)
	}
	if fd < 0 {
		if p.AcceptWeaker {
			return nil
		}
		return fmt.Errorf("landlock: the kernel offers none; nothing ran")
	}
	defer unix.Close(fd)
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("landlock: restrict: %w", err)
	}
	return nil
}
