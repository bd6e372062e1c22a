package limits

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultPids is the number of processes and threads a run may hold at once
// when neither the task nor the home sets one.
const DefaultPids = 1024

// pidsGroup is a cgroup of the run's own whose pids.max caps the processes
// and threads it holds: a fork past it fails in the kernel (EAGAIN), so a
// fork bomb stops at the limit instead of filling the machine's process
// table before anyone looks.
type pidsGroup struct {
	dir string // the cgroup's directory
}

// cgroupRoot is where cgroup file systems are mounted; a variable so a test
// can point it elsewhere.
var cgroupRoot = "/sys/fs/cgroup"

// newPidsGroup makes a cgroup for one run beneath the one this process is
// in, with pids.max = max: on cgroup v2 where the pids controller is
// delegated to this process's cgroup, else on cgroup v1's pids hierarchy.
// It fails where the system delegates neither (an unprivileged user
// without a delegated subtree, no pids controller); the supervisor's count
// then stops the run instead.
func newPidsGroup(max int) (*pidsGroup, error) {
	var tried []string
	for _, parent := range pidsParents() {
		var b [6]byte
		_, _ = rand.Read(b[:])
		dir := filepath.Join(parent, "kule-run-"+strconv.Itoa(os.Getpid())+"-"+hex.EncodeToString(b[:]))
		if err := os.Mkdir(dir, 0o755); err != nil {
			tried = append(tried, err.Error())
			continue
		}
		g := &pidsGroup{dir: dir}
		if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.Itoa(max)), 0); err != nil {
			tried = append(tried, err.Error())
			os.Remove(dir)
			continue
		}
		return g, nil
	}
	if len(tried) == 0 {
		return nil, errors.New("limits: no cgroup with the pids controller is delegated to this process")
	}
	return nil, fmt.Errorf("limits: no cgroup for the run's processes: %s", strings.Join(tried, "; "))
}

// pidsParents lists the cgroups a run's group may be made in, best first:
// this process's own cgroup v2 when pids is delegated to its children, then
// its cgroup in v1's pids hierarchy.
func pidsParents() []string {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	defer f.Close()
	var v2, v1 string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			v2 = parts[2]
		case hasWord(parts[1], "pids"):
			v1 = parts[2]
		}
	}
	var out []string
	if v2 != "" {
		for _, mnt := range []string{cgroupRoot, filepath.Join(cgroupRoot, "unified")} {
			if !isCgroup2(mnt) {
				continue
			}
			dir := filepath.Join(mnt, filepath.Clean("/"+v2))
			if sub, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control")); err == nil && hasWord(string(sub), "pids") {
				out = append(out, dir)
			}
		}
	}
	if v1 != "" {
		dir := filepath.Join(cgroupRoot, "pids", filepath.Clean("/"+v1))
		if _, err := os.Stat(filepath.Join(dir, "tasks")); err == nil {
			out = append(out, dir)
		}
	}
	return out
}

func isCgroup2(dir string) bool {
	var st unix.Statfs_t
	return unix.Statfs(dir, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC
}

func hasWord(list, w string) bool {
	for _, f := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' }) {
		if f == w {
			return true
		}
	}
	return false
}

// join moves the processes into the group (each with all its threads).
// A process that is gone meanwhile is passed over.
func (g *pidsGroup) join(pids []int) error {
	in := g.members()
	for _, p := range pids {
		if in[p] {
			continue
		}
		err := os.WriteFile(filepath.Join(g.dir, "cgroup.procs"), []byte(strconv.Itoa(p)), 0)
		if err != nil && !errors.Is(err, unix.ESRCH) && alive(p) {
			return fmt.Errorf("limits: moving process %d into the run's cgroup: %w", p, err)
		}
	}
	return nil
}

// joinTree moves root's whole tree into the group, again and again until a
// pass finds every process of it inside: a process forked outside while a
// pass ran (the run's first process may have started its command before
// the supervisor saw it) is caught by the next, and a process inside forks
// only within the limit, so the passes end.
func (g *pidsGroup) joinTree(root int) error {
	for pass := 0; pass < 1000; pass++ {
		tree := Tree(root)
		in := g.members()
		outside := false
		for _, p := range tree {
			if !in[p] {
				outside = true
				break
			}
		}
		if !outside {
			return nil
		}
		if err := g.join(tree); err != nil {
			return err
		}
	}
	return errors.New("limits: the run's processes kept forking outside its cgroup")
}

// members is the set of processes in the group.
func (g *pidsGroup) members() map[int]bool {
	b, err := os.ReadFile(filepath.Join(g.dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	out := map[int]bool{}
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out[n] = true
		}
	}
	return out
}

// refused is how many forks the kernel refused at pids.max so far.
func (g *pidsGroup) refused() int {
	b, err := os.ReadFile(filepath.Join(g.dir, "pids.events"))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "max "); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// remove deletes the group once its processes are gone, waiting a little
// for the last of them to be reaped; a group still busy then is left (it
// holds no process of a finished run, and the next boot clears it).
func (g *pidsGroup) remove() {
	for i := 0; i < 100; i++ {
		if err := os.Remove(g.dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return
		}
		for p := range g.members() {
			_ = unix.Kill(p, unix.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// threads sums the threads of the processes (what pids.max counts), from
// /proc/PID/stat.
func threads(pids []int) int {
	total := 0
	for _, p := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/stat")
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 || i+2 > len(b) {
			continue
		}
		f := strings.Fields(string(b[i+2:]))
		if len(f) < 18 {
			total++
			continue
		}
		n, err := strconv.Atoi(f[17])
		if err != nil || n < 1 {
			n = 1
		}
		total += n
	}
	return total
}

// memfdBytes is the memory held in memfds (and other unlinked shared-memory
// files) that the processes hold open or mapped: each file's allocated
// blocks, once however many processes share it. Pages written to a memfd
// and never mapped are in no process's PSS, so without this count a run
// holds any amount of memory under its limit. A memfd that is also mapped
// is counted here in full and in PSS for its touched pages: the sum errs
// toward stopping.
func memfdBytes(pids []int) int64 {
	type key struct{ dev, ino uint64 }
	seen := map[key]bool{}
	var total int64
	add := func(path string) {
		var st unix.Stat_t
		if unix.Stat(path, &st) != nil {
			return
		}
		k := key{uint64(st.Dev), st.Ino}
		if !seen[k] {
			seen[k] = true
			total += st.Blocks * 512
		}
	}
	for _, p := range pids {
		base := "/proc/" + strconv.Itoa(p)
		if ents, err := os.ReadDir(base + "/fd"); err == nil {
			for _, e := range ents {
				link, err := os.Readlink(base + "/fd/" + e.Name())
				if err == nil && isMemfdLink(link) {
					add(base + "/fd/" + e.Name())
				}
			}
		}
		// Mapped and closed: only the maps show it; map_files lets a
		// privileged supervisor stat it (an unprivileged one cannot, and
		// then counts its mapped pages through PSS alone).
		if b, err := os.ReadFile(base + "/maps"); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if !strings.Contains(line, "/memfd:") {
					continue
				}
				f := strings.Fields(line)
				if len(f) > 0 {
					add(base + "/map_files/" + f[0])
				}
			}
		}
	}
	return total
}

// isMemfdLink: what /proc/PID/fd/N reads as for a memfd ("/memfd:NAME
// (deleted)").
func isMemfdLink(link string) bool { return strings.HasPrefix(link, "/memfd:") }
