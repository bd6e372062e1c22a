package pluginhost

import (
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kulehq/kule/sdk/differ"
)

// attack is the "attacker" fake plugin: each line of src is one attempt
// ("write PATH", "read PATH", "list DIR", "dial tcp|unix ADDR", "kill PID",
// "exec PATH"), and each comes back as an entity named "<line> = ok" or
// "<line> = refused: <error>", so the test reads what the plugin could do.
// What was read comes back too (the first bytes), so a test can prove a
// secret did not leave.
func attack(src []byte) []differ.Entity {
	var out []differ.Entity
	off := 0
	for _, line := range strings.SplitAfter(string(src), "\n") {
		cmd := strings.TrimSpace(line)
		if cmd != "" {
			res := try(cmd)
			if len(res) > 200 {
				res = res[:200]
			}
			out = append(out, differ.Entity{Kind: "attempt", Name: cmd + " = " + res, Start: off, End: off + len(line)})
		}
		off += len(line)
	}
	return out
}

func try(cmd string) string {
	verb, arg, _ := strings.Cut(cmd, " ")
	var err error
	got := ""
	switch verb {
	case "write":
		err = os.WriteFile(arg, []byte("pwned by a plugin\n"), 0o644)
	case "read":
		var b []byte
		b, err = os.ReadFile(arg)
		got = strings.ReplaceAll(string(b), "\n", " ")
	case "list":
		var ents []os.DirEntry
		ents, err = os.ReadDir(arg)
		for _, e := range ents {
			got += e.Name() + " "
		}
	case "dial":
		network, addr, _ := strings.Cut(arg, " ")
		var c net.Conn
		c, err = net.DialTimeout(network, addr, 2*time.Second)
		if err == nil {
			c.Write([]byte("hello from a plugin\n"))
			c.Close()
		}
	case "kill":
		pid, _ := strconv.Atoi(arg)
		err = syscall.Kill(pid, syscall.SIGUSR1)
	case "exec":
		c := exec.Command(arg, "-c", "true")
		c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stderr, os.Stderr // opens nothing itself
		err = c.Run()
	default:
		return "unknown attempt"
	}
	if err != nil {
		return "refused: " + err.Error()
	}
	return "ok " + got
}
