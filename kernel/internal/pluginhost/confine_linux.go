//go:build linux

package pluginhost

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// ConfineMain is the last step before a plugin runs, already inside the
// sandbox (kernel/internal/sandbox): `kule-plugins __plugin __confine <profile>` adds a second
// Landlock domain for the plugin's kind on top of the sandbox's own, then
// executes the plugin. Domains only ever narrow, so what the plugin may do is
// what both allow. cmd/kule calls it; it is not for people to run. It returns
// only on failure, with the exit code, having said why on stderr.
func ConfineMain(arg string) int {
	runtime.LockOSThread() // the Landlock domain is the thread's; execve keeps it
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "%s %v; the plugin did not run\n", confineSays, err)
		return 125
	}
	var c confinement
	if err := json.Unmarshal([]byte(arg), &c); err != nil {
		return fail(fmt.Errorf("read the profile: %w", err))
	}
	if len(c.Argv) == 0 {
		return fail(fmt.Errorf("the profile names no command"))
	}
	path := "/proc/self/exe" // a built-in: this very binary
	if c.ExeOnStdin {
		// A third-party plugin: the sealed, verified copy came in as stdin.
		// It moves to fd 3 (kept across exec, as /proc/self/fd/3 is what
		// runs) and stdin becomes /dev/null.
		if err := unix.Dup3(0, 3, 0); err != nil {
			return fail(fmt.Errorf("take the executable: %w", err))
		}
		null, err := unix.Open("/dev/null", unix.O_RDONLY, 0)
		if err != nil {
			return fail(fmt.Errorf("open /dev/null: %w", err))
		}
		if err := unix.Dup3(null, 0, 0); err != nil {
			return fail(fmt.Errorf("stdin: %w", err))
		}
		unix.Close(null)
		path = "/proc/self/fd/3"
	}
	if err := restrictPlugin(c); err != nil {
		if !c.AcceptWeaker {
			return fail(err)
		}
		fmt.Fprintf(os.Stderr, "%s WEAKER ISOLATION (accepted): %v\n", confineSays, err)
	}
	err := syscall.Exec(path, c.Argv, os.Environ())
	return fail(fmt.Errorf("execute the plugin: %w", err))
}

// restrictPlugin applies the plugin's own Landlock domain to this thread:
// read and execute only the files the profile lists, make and remove entries
// only in the socket directory, no TCP bind and no connect but to the
// proxy's port (a transport), and no signals or
// abstract Unix sockets beyond the domain.
func restrictPlugin(c confinement) error {
	abi, err := ll.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		return fmt.Errorf("landlock is not available here (%v)", err)
	}
	cfg := landlock.V7.BestEffort()
	rules := []landlock.Rule{}
	if len(c.Read) > 0 {
		rules = append(rules, landlock.ROFiles(c.Read...).IgnoreIfMissing())
	}
	if c.SocketDir != "" {
		// go-plugin's server makes a temp file, removes it and binds its
		// socket there: nothing else in the file system is writable.
		rules = append(rules, landlock.PathAccess(ll.AccessFSMakeReg|ll.AccessFSReadFile|ll.AccessFSWriteFile|ll.AccessFSRemoveFile|ll.AccessFSMakeSock, c.SocketDir))
	}
	if c.ConnectPort > 0 {
		rules = append(rules, landlock.ConnectTCP(uint16(c.ConnectPort)))
	}
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return fmt.Errorf("landlock: build the plugin's ruleset: %w", err)
	}
	if fd < 0 {
		return fmt.Errorf("landlock: the kernel offers none")
	}
	defer unix.Close(fd)
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("landlock: restrict: %w", err)
	}
	return nil
}
