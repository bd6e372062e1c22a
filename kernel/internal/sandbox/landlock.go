package sandbox

import (
	"path/filepath"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// landlockRuleset is the command's Landlock domain, the only statement of
// it: the host side makes it (landlockRules) and the helper
// (pid1_landlock_linux.c) makes exactly this ruleset and adds exactly these
// rules, none of its own.
type landlockRuleset struct {
	// The access rights and scopes the ruleset handles: go-landlock's V7
	// as far as the kernel's ABI has them (its best effort).
	HandledFS, HandledNet, Scoped int64
	Rules                         []landlockRule
}

// landlockRule allows Access beneath Path, or, with Port set (and Path
// empty), TCP connect to that port. Optional: a path that is not there is
// passed over (a device the machine has not got).
type landlockRule struct {
	Path     string
	Access   int64
	Port     int
	Optional bool
}

// Landlock's access rights as Kule groups them (go-landlock's RODirs,
// RWDirs and RWFiles).
const (
	llRead  = ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSReadDir
	llWrite = ll.AccessFSWriteFile | ll.AccessFSRemoveDir | ll.AccessFSRemoveFile | ll.AccessFSMakeChar |
		ll.AccessFSMakeDir | ll.AccessFSMakeReg | ll.AccessFSMakeSock | ll.AccessFSMakeFifo |
		ll.AccessFSMakeBlock | ll.AccessFSMakeSym | ll.AccessFSTruncate
	llFile = ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSTruncate | ll.AccessFSReadFile // what applies to a file
	// llV7FS is what go-landlock's V7 handles of the file system: every
	// right up to ioctl on devices (ABI 5).
	llV7FS = ll.AccessFSIoctlDev<<1 - 1
)

// landlockFS is the file-system rights the kernel's Landlock ABI knows.
func landlockFS(abi int) int64 {
	switch {
	case abi >= 5:
		return ll.AccessFSIoctlDev<<1 - 1
	case abi >= 3:
		return ll.AccessFSTruncate<<1 - 1
	case abi == 2:
		return ll.AccessFSRefer<<1 - 1
	}
	return 0 // ABI 1 cannot allow a move between folders: Kule counts it as none (Availability.Landlock)
}

// landlockRules is the command's domain for p on a kernel of Landlock ABI
// abi: read and execute everywhere the mounts show; write only to the copy,
// the task's home, caches and /tmp, --allow-write, /dev/shm and the named
// devices (and the pty's); TCP connect only to the proxy's port, and only
// in a network namespace (else the command's network is open); no signals
// or abstract sockets out of the domain. Each rule's access is what the
// ruleset handles of it, and a rule left with none is left out, as
// go-landlock's best effort does.
func landlockRules(p *plan, abi int) landlockRuleset {
	rs := landlockRuleset{HandledFS: llV7FS & landlockFS(abi)}
	if p.NetNS && abi >= 4 {
		rs.HandledNet = ll.AccessNetConnectTCP
	}
	if abi >= 6 {
		rs.Scoped = ll.ScopeAbstractUnixSocket | ll.ScopeSignal
	}
	add := func(path string, access int64, optional bool) {
		if access &= rs.HandledFS; access != 0 {
			rs.Rules = append(rs.Rules, landlockRule{Path: path, Access: access, Optional: optional})
		}
	}
	add("/", llRead, false)
	for _, d := range append([]string{p.Copy, p.Home, p.Cache, "/tmp"}, p.Writable...) {
		add(d, llRead|llWrite|ll.AccessFSRefer, false)
	}
	add("/dev/shm", llRead|llWrite, false)
	devs := make([]string, 0, len(p.Devices)+2)
	for _, d := range p.Devices {
		devs = append(devs, filepath.Join("/dev", d))
	}
	for _, d := range append(devs, "/dev/pts", "/dev/ptmx") {
		add(d, (llRead|llWrite)&llFile|ll.AccessFSIoctlDev, true)
	}
	if p.ProxyPort > 0 && rs.HandledNet != 0 {
		rs.Rules = append(rs.Rules, landlockRule{Port: p.ProxyPort, Access: ll.AccessNetConnectTCP})
	}
	return rs
}
