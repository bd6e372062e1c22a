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

// runGroup is the run's own cgroups: one whose pids.max caps the processes
// and threads it holds (a fork past it fails in the kernel, EAGAIN, so a
// fork bomb stops at the limit instead of filling the machine's process
// table before anyone looks), and one whose memory statistics say what the
// run really holds (anonymous memory and shared memory: memfds, tmpfs and
// /dev/shm files, mapped or not, charged to the run that wrote them). On
// cgroup v2 they are one directory; on v1 one in each hierarchy.
type runGroup struct {
	pidsDir string   // "" when pids.max does not hold the limit
	memDir  string   // "" when the memory is not measured by a cgroup
	dirs    []string // every directory made, each once
	v2mem   bool     // memDir is a cgroup v2 directory
}

// cgroupRoot is where cgroup file systems are mounted; a variable so a test
// can point it elsewhere.
var cgroupRoot = "/sys/fs/cgroup"

// newRunGroup makes the run's cgroups beneath the ones this process is in:
// with pids.max = pids when pids > 0, and for memory when memory is set. It
// uses cgroup v2 where the controller is delegated to this process's
// cgroup, else cgroup v1's hierarchy for it. A controller the system
// delegates in neither is left out (an unprivileged user without a
// delegated subtree); the supervisor's sums then stand in. nil when there is
// none.
func newRunGroup(pids int, memory bool) *runGroup {
	g := &runGroup{}
	made := map[string]string{} // parent → the run's directory in it
	dirFor := func(parent string) (string, bool) {
		if d, ok := made[parent]; ok {
			return d, true
		}
		var b [6]byte
		_, _ = rand.Read(b[:])
		dir := filepath.Join(parent, "kule-run-"+strconv.Itoa(os.Getpid())+"-"+hex.EncodeToString(b[:]))
		if os.Mkdir(dir, 0o755) != nil {
			return "", false
		}
		made[parent] = dir
		g.dirs = append(g.dirs, dir)
		return dir, true
	}
	if pids > 0 {
		for _, par := range controllerParents("pids") {
			if dir, ok := dirFor(par.dir); ok && os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.Itoa(pids)), 0) == nil {
				g.pidsDir = dir
				break
			}
		}
	}
	if memory {
		for _, par := range controllerParents("memory") {
			if dir, ok := dirFor(par.dir); ok {
				if _, err := os.Stat(filepath.Join(dir, "memory.stat")); err == nil {
					g.memDir, g.v2mem = dir, par.v2
					break
				}
			}
		}
	}
	// A directory made for a controller that then failed holds nothing.
	keep := g.dirs[:0]
	for _, d := range g.dirs {
		if d == g.pidsDir || d == g.memDir {
			keep = append(keep, d)
		} else {
			os.Remove(d)
		}
	}
	g.dirs = keep
	if len(g.dirs) == 0 {
		return nil
	}
	return g
}

type cgroupParent struct {
	dir string
	v2  bool
}

// controllerParents lists the cgroups a run's group for controller may be
// made in, best first: this process's own cgroup v2 when the controller is
// delegated to its children, then its cgroup in v1's hierarchy for it.
func controllerParents(controller string) []cgroupParent {
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
		case hasWord(parts[1], controller):
			v1 = parts[2]
		}
	}
	var out []cgroupParent
	if v2 != "" {
		for _, mnt := range []string{cgroupRoot, filepath.Join(cgroupRoot, "unified")} {
			if !isCgroup2(mnt) {
				continue
			}
			dir := filepath.Join(mnt, filepath.Clean("/"+v2))
			if sub, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control")); err == nil && hasWord(string(sub), controller) {
				out = append(out, cgroupParent{dir, true})
			}
		}
	}
	if v1 != "" {
		dir := filepath.Join(cgroupRoot, controller, filepath.Clean("/"+v1))
		if _, err := os.Stat(filepath.Join(dir, "tasks")); err == nil {
			out = append(out, cgroupParent{dir, false})
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

// join moves the processes into each of the run's cgroups (each process
// with all its threads). A process that is gone meanwhile is passed over.
func (g *runGroup) join(pids []int) error {
	for _, dir := range g.dirs {
		in := members(dir)
		for _, p := range pids {
			if in[p] {
				continue
			}
			err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(p)), 0)
			if err != nil && !errors.Is(err, unix.ESRCH) && alive(p) {
				return fmt.Errorf("limits: moving process %d into the run's cgroup: %w", p, err)
			}
		}
	}
	return nil
}

// joinTree moves root's whole tree into the group, again and again until a
// pass finds every process of it inside: a process forked outside while a
// pass ran (the run's first process may have started its command before
// the supervisor saw it) is caught by the next, and a process inside forks
// only within the limit, so the passes end.
func (g *runGroup) joinTree(root int) error {
	for pass := 0; pass < 1000; pass++ {
		tree := Tree(root)
		outside := false
		for _, dir := range g.dirs {
			in := members(dir)
			for _, p := range tree {
				if !in[p] {
					outside = true
					break
				}
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

// members is the set of processes in the cgroup at dir.
func members(dir string) map[int]bool {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
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
func (g *runGroup) refused() int {
	if g.pidsDir == "" {
		return 0
	}
	b, err := os.ReadFile(filepath.Join(g.pidsDir, "pids.events"))
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

// memory is what the run's processes hold by its memory cgroup's count:
// anonymous memory and shared memory (memfds, tmpfs and /dev/shm files,
// SysV segments), mapped or not. ok is false without a memory cgroup.
func (g *runGroup) memory() (n int64, ok bool) {
	if g.memDir == "" {
		return 0, false
	}
	b, err := os.ReadFile(filepath.Join(g.memDir, "memory.stat"))
	if err != nil {
		return 0, false
	}
	want := map[string]bool{"rss": true, "shmem": true} // v1
	if g.v2mem {
		want = map[string]bool{"anon": true, "shmem": true}
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, " ")
		if want[k] {
			x, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			n += x
		}
	}
	return n, true
}

// remove deletes the run's cgroups once their processes are gone, killing
// any left and waiting a little for them to be reaped; a cgroup still busy
// then is left (it holds no process of a finished run, and the next boot
// clears it).
func (g *runGroup) remove() {
	for _, dir := range g.dirs {
		for i := 0; i < 100; i++ {
			if err := os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) {
				break
			}
			for p := range members(dir) {
				_ = unix.Kill(p, unix.SIGKILL)
			}
			time.Sleep(20 * time.Millisecond)
		}
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
//
// withMaps also reads each process's maps for memfds it mapped and closed:
// only a privileged supervisor can stat those (map_files), and a run with
// a memory cgroup has them counted there, so the read (a large file for a
// big process, every look) is skipped otherwise.
func memfdBytes(pids []int, withMaps bool) int64 {
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
		if !withMaps {
			continue
		}
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
