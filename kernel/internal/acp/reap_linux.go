package acp

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// killTree sends SIGKILL to every process whose environment carries the
// marker, again until none is left (a dying process may have forked). It
// is what ends an agent's whole process tree under the direct runner; the
// sandbox's PID namespace ends it by itself.
func killTree(marker string) int {
	if marker == "" {
		return 0
	}
	needle := []byte(markerVar + "=" + marker + "\x00")
	self := os.Getpid()
	total := 0
	for range 10 {
		n := 0
		dirs, _ := filepath.Glob("/proc/[0-9]*")
		for _, d := range dirs {
			pid, err := strconv.Atoi(filepath.Base(d))
			if err != nil || pid == self {
				continue
			}
			env, err := os.ReadFile(filepath.Join(d, "environ"))
			if err != nil || !bytes.Contains(append(env, 0), needle) {
				continue
			}
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				n++
			}
		}
		total += n
		if n == 0 {
			break
		}
	}
	return total
}
