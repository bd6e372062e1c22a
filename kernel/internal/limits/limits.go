// Package limits bounds what one run may take: processor (slowed, not
// stopped, by pausing and resuming its processes in turn — no privileges
// needed), memory (the proportional set size of all its processes plus the
// memfds they hold, or the run's memory cgroup's count where that is
// larger; over it they are killed), processes and threads (pids.max of a
// cgroup of the run's own, else counted and stopped), disk (what its
// folders grew by, measured every second, and no single file past it
// through RLIMIT_FSIZE), wall time (one run's, and all of a task's runs'
// together, kept with the task), and idle time.
// Whether the GPU's devices are in the sandbox is a field here too; the
// sandbox applies it.
package limits

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Limits for one run; a zero field is no limit.
type Limits struct {
	CPU    float64       `json:"cpu,omitempty" toml:"cpu,omitempty"`       // cores
	Memory int64         `json:"memory,omitempty" toml:"memory,omitempty"` // bytes of PSS
	Disk   int64         `json:"disk,omitempty" toml:"disk,omitempty"`     // bytes of growth
	Time   time.Duration `json:"time,omitempty" toml:"time,omitempty"`     // one run's wall time
	Idle   time.Duration `json:"idle,omitempty" toml:"idle,omitempty"`     // no activity for this long
	// TaskTime bounds the wall time of all of a task's runs together; what
	// they used is kept in the task's directory (TaskTimeFile).
	TaskTime time.Duration `json:"task_time,omitempty" toml:"task_time,omitempty"`
	// GPU is GPUOn or GPUOff; empty takes the home's setting (on unless
	// the home says off).
	GPU string `json:"gpu,omitempty" toml:"gpu,omitempty"`
	// Pids bounds the processes and threads a run holds at once; zero is
	// DefaultPids wherever limits are put together for a run (Resolved).
	Pids int `json:"pids,omitempty" toml:"pids,omitempty"`
}

// GPU settings.
const (
	GPUOn  = "on"
	GPUOff = "off"
)

// Over is l with every zero field taken from home: a task's own limits over
// the home's.
func (l Limits) Over(home Limits) Limits {
	out := home
	if l.CPU != 0 {
		out.CPU = l.CPU
	}
	if l.Memory != 0 {
		out.Memory = l.Memory
	}
	if l.Disk != 0 {
		out.Disk = l.Disk
	}
	if l.Time != 0 {
		out.Time = l.Time
	}
	if l.Idle != 0 {
		out.Idle = l.Idle
	}
	if l.TaskTime != 0 {
		out.TaskTime = l.TaskTime
	}
	if l.GPU != "" {
		out.GPU = l.GPU
	}
	if l.Pids != 0 {
		out.Pids = l.Pids
	}
	return out
}

// Resolved is l with the defaults a run always has filled in: the process
// count (DefaultPids) when nothing set one.
func (l Limits) Resolved() Limits {
	if l.Pids <= 0 {
		l.Pids = DefaultPids
	}
	return l
}

// NoGPU says whether the GPU's devices are left out of the sandbox: GPUOff
// here, or nothing said here and the sandbox's own setting says so.
func (l Limits) NoGPU(sandboxNoGPU bool) bool {
	if l.GPU == "" {
		return sandboxNoGPU
	}
	return l.GPU == GPUOff
}

// Supervised says whether a run needs watching for these limits (the GPU
// is the sandbox's business).
func (l Limits) Supervised() bool {
	l.GPU = ""
	return l != Limits{}
}

// Reason says why a run was stopped.
type Reason string

// Reasons.
const (
	ReasonNone   Reason = ""
	ReasonMemory Reason = "memory"
	ReasonDisk   Reason = "disk"
	ReasonTime   Reason = "time"
	ReasonIdle   Reason = "idle"
	// ReasonTaskTime: all of the task's runs together took their time.
	ReasonTaskTime Reason = "task-time"
	// ReasonPids: the run held more processes and threads than its limit.
	ReasonPids Reason = "pids"
)

// Errors a caller can test for.
var (
	// ErrStopped wraps every stop by a limit.
	ErrStopped = errors.New("stopped by a limit")
	// ErrTaskTimeSpent: the task's runs have used their time; no run starts.
	ErrTaskTimeSpent = errors.New("the task's time is used up")
	// ErrBadGPU: a GPU setting other than on or off.
	ErrBadGPU = errors.New("limits: --gpu takes on or off")
)

// Watch says what to watch besides the processes.
type Watch struct {
	// Root is the run's first process; its descendants are the run.
	Root int
	// DiskPaths are measured for growth (the copy, its tmp, its home layer);
	// DiskBase is their size when the task was made.
	DiskPaths []string
	DiskBase  int64
	// Activity, when set, reports the last time the run did something the
	// processes do not show (an agent's message, a question waiting on the
	// person — which counts as activity, never as idle).
	Activity func() time.Time
	// TaskTimeFile keeps the wall time of all of the task's runs; when set,
	// the run's time is added to it (every few seconds and at the end) and
	// Limits.TaskTime is judged against it.
	TaskTimeFile string
	// Tick is how often the supervisor looks; 100 ms when zero.
	Tick time.Duration
	// Began is when the run began (Supervise sets it, before the run's first
	// process starts); its wall time and the task's time count from there.
	// When zero, the time Start is called.
	Began time.Time

	// Counts a test takes away to show the step-around each stops; never
	// set otherwise.
	noCgroup, noPidsCount, noMemfd, noMemCgroup bool
}

// Usage is what the run took so far.
type Usage struct {
	CPUSeconds float64
	Memory     int64 // PSS of the run's processes now, with the memfds they hold
	Disk       int64 // growth since the task was made
	Processes  int
	Threads    int  // processes and their threads: what the pids limit counts
	PidsCgroup bool // the pids limit is held by a cgroup of the run's own
	// MemoryCgroup: the run's memory is also read from a cgroup of its own.
	MemoryCgroup bool
	// ForksRefused is how many forks the run's cgroup refused at its limit.
	ForksRefused int
	Throttled    time.Duration // time the run spent paused to hold its CPU share
	Wall         time.Duration // this run's wall time so far
	TaskTime     time.Duration // all of the task's runs, this one included
	Idle         time.Duration // since the run last did something (what Limits.Idle judges)
}

// Supervisor watches one run.
type Supervisor struct {
	lim    Limits
	w      Watch
	mu     sync.Mutex
	usage  Usage
	reason Reason
	done   chan struct{}
	finish chan struct{} // End: the caller knows the run is over
	ended  sync.Once
	onTick func(time.Time) // keeps the task's time, when there is a file for it
	extra  []int           // more roots (an agent's terminals), watched with Root's tree
	group  *runGroup       // the run's cgroups (pids.max, memory); nil: the sums alone
	joined chan struct{}   // closed once the run's tree was moved into group (or there is none)
	looks  int             // how many times the loop has measured the run (under mu)
}

// cgroupJoinAfter is how long a run goes before its processes are moved into
// its cgroups. Moving a process into a cgroup waits for the kernel's RCU
// grace period (milliseconds on cgroup v1, and every fork of the run waits
// behind it), which was a third of a quick `kule exec`: a command that ends
// sooner never pays it. A longer run, a fork bomb among them, is moved then;
// until then, and at every tick after, the supervisor's own count holds the
// limit too.
const cgroupJoinAfter = 50 * time.Millisecond

// Add watches the tree rooted at pid too, as part of the run (a command an
// agent's terminal started beside the agent). It is not the run's end: the
// watch still ends with Root.
func (s *Supervisor) Add(pid int) {
	s.mu.Lock()
	s.extra = append(s.extra, pid)
	s.mu.Unlock()
	if s.lim.Disk > 0 {
		_ = SetFileSizeLimit(pid, s.lim.Disk)
	}
	if s.group != nil {
		_ = s.group.joinTree(pid) // a failure leaves it to the count
	}
}

// pids is Root's tree and every added tree.
func (s *Supervisor) pids() []int {
	out := Tree(s.w.Root)
	if len(out) == 0 {
		return nil
	}
	s.mu.Lock()
	extra := append([]int(nil), s.extra...)
	s.mu.Unlock()
	seen := map[int]bool{}
	for _, p := range out {
		seen[p] = true
	}
	for _, r := range extra {
		for _, p := range Tree(r) {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}

// Start watches w.Root until ctx ends or the root process is gone. It sets
// RLIMIT_FSIZE on the root when a disk limit is given.
func Start(ctx context.Context, lim Limits, w Watch) *Supervisor {
	if w.Tick == 0 {
		w.Tick = 100 * time.Millisecond
	}
	if w.Began.IsZero() {
		w.Began = time.Now()
	}
	s := &Supervisor{lim: lim, w: w, done: make(chan struct{}), finish: make(chan struct{}), joined: make(chan struct{})}
	if lim.Disk > 0 {
		_ = SetFileSizeLimit(w.Root, lim.Disk)
	}
	if !w.noCgroup && (lim.Pids > 0 || lim.Memory > 0 && !w.noMemCgroup) {
		// Made now, joined by the loop after cgroupJoinAfter.
		s.group = newRunGroup(lim.Pids, lim.Memory > 0 && !w.noMemCgroup)
	}
	if s.group == nil {
		close(s.joined)
	}
	if lim.Pids > 0 && (s.group == nil || s.group.pidsDir == "") && s.w.Tick > 100*time.Millisecond {
		// The count alone holds the limit: look often, a fork bomb
		// grows fast.
		s.w.Tick = 100 * time.Millisecond
	}
	go s.loop(ctx)
	return s
}

// joinGroup moves the run's tree into its cgroups once cgroupJoinAfter has
// passed; false when the run ended (its root, or the watch) before then.
func (s *Supervisor) joinGroup(ctx context.Context, rootGone <-chan struct{}) bool {
	defer close(s.joined)
	select {
	case <-ctx.Done():
		return false
	case <-s.finish:
		return false
	case <-rootGone:
		return false
	case <-time.After(cgroupJoinAfter):
	}
	if s.group.joinTree(s.w.Root) != nil {
		return true // the sums hold the limits; each tick tries the move again
	}
	s.mu.Lock()
	s.usage.PidsCgroup = s.group.pidsDir != ""
	s.usage.MemoryCgroup = s.group.memDir != ""
	s.mu.Unlock()
	return true
}

// SetFileSizeLimit caps the size of any file pid (and what it starts from now
// on) writes.
func SetFileSizeLimit(pid int, bytes int64) error {
	lim := unix.Rlimit{Cur: uint64(bytes), Max: uint64(bytes)}
	return unix.Prlimit(pid, unix.RLIMIT_FSIZE, &lim, nil)
}

// End ends the watch now: the caller saw the run's first process end (its
// runner returned), so there is no tick to wait for.
func (s *Supervisor) End() { s.ended.Do(func() { close(s.finish) }) }

// Wait waits until the run is over (or the watch ends) and says which
// limit stopped it, ReasonNone when none did.
func (s *Supervisor) Wait() Reason {
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reason
}

// Usage reports what the run took so far.
func (s *Supervisor) Usage() Usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.usage
}

// Err is the stop as an error a person reads, or nil.
func (s *Supervisor) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.reason {
	case ReasonMemory:
		return fmt.Errorf("%w: memory: the run held %s, over its limit of %s (its processes were killed; raise it with kule limits --memory)", ErrStopped, Bytes(s.usage.Memory), Bytes(s.lim.Memory))
	case ReasonDisk:
		return fmt.Errorf("%w: disk: the task grew by %s, over its limit of %s (the run was stopped; what it wrote stays in the copy for review)", ErrStopped, Bytes(s.usage.Disk), Bytes(s.lim.Disk))
	case ReasonTime:
		return fmt.Errorf("%w: time: the run took longer than %s", ErrStopped, s.lim.Time)
	case ReasonIdle:
		return fmt.Errorf("%w: idle: nothing happened for %s", ErrStopped, s.lim.Idle)
	case ReasonTaskTime:
		return fmt.Errorf("%w: task-time: the task's runs have taken %s together, their limit (raise it with kule limits TASK --task-time)", ErrStopped, s.lim.TaskTime)
	case ReasonPids:
		return fmt.Errorf("%w: pids: the run held %d processes and threads, over its limit of %d (its processes were killed; raise it with kule limits --pids)", ErrStopped, s.usage.Threads, s.lim.Pids)
	}
	return nil
}

func (s *Supervisor) stop(r Reason, pids []int) {
	s.mu.Lock()
	s.reason = r
	s.mu.Unlock()
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGCONT)
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
}

func (s *Supervisor) loop(ctx context.Context) {
	defer close(s.done)
	if s.group != nil {
		defer s.group.remove()
	}
	start := s.w.Began
	var before time.Duration // the task's runs before this one
	if s.w.TaskTimeFile != "" {
		before, _ = LoadTaskTime(s.w.TaskTimeFile)
		lastSaved := start
		defer func() {
			// Whatever ended the run, its time is the task's.
			_ = AddTaskTime(s.w.TaskTimeFile, time.Since(lastSaved))
		}()
		saveEvery := 5 * time.Second
		saved := func(now time.Time) {
			if now.Sub(lastSaved) >= saveEvery && AddTaskTime(s.w.TaskTimeFile, now.Sub(lastSaved)) == nil {
				lastSaved = now
			}
		}
		s.onTick = saved
	}
	rootGone, stopWatch := rootEnd(s.w.Root)
	defer stopWatch()
	if s.group != nil && !s.joinGroup(ctx, rootGone) {
		return // the run ended before it was moved
	}
	lastActive := start
	var lastCPU float64
	lastProcs := 0
	lastDisk := time.Time{}
	ticker := time.NewTicker(s.w.Tick)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.finish:
			return
		case <-rootGone:
			return // the watch ends with Root, as a tick would find
		case <-ticker.C:
		}
		pids := s.pids()
		if len(pids) == 0 {
			return
		}
		cpu := cpuSeconds(pids)
		now := time.Now()
		if cpu > lastCPU+0.001 || len(pids) != lastProcs {
			lastActive = now
		}
		if s.w.Activity != nil {
			if a := s.w.Activity(); a.After(lastActive) {
				lastActive = a
			}
		}
		lastCPU, lastProcs = cpu, len(pids)
		wall := now.Sub(start)
		s.mu.Lock()
		s.usage.CPUSeconds, s.usage.Processes = cpu, len(pids)
		s.usage.Wall, s.usage.TaskTime = wall, before+wall
		s.usage.Idle = max(now.Sub(lastActive), 0)
		s.mu.Unlock()
		if s.onTick != nil {
			s.onTick(now)
		}
		if s.lim.TaskTime > 0 && s.w.TaskTimeFile != "" && before+wall > s.lim.TaskTime {
			s.stop(ReasonTaskTime, pids)
			return
		}

		if s.group != nil {
			// A process the tree gained before it was in the group
			// (forked before the run's first process was moved) is
			// moved now; its children are born inside.
			_ = s.group.join(pids)
		}
		if s.lim.Pids > 0 {
			n := len(pids)
			if !s.w.noPidsCount {
				n = threads(pids)
			}
			s.mu.Lock()
			s.usage.Threads = n
			if s.group != nil {
				s.usage.ForksRefused = s.group.refused()
			}
			s.mu.Unlock()
			if !s.w.noPidsCount && n > s.lim.Pids {
				s.stop(ReasonPids, pids)
				return
			}
		}
		s.mu.Lock()
		s.looks++
		s.mu.Unlock()
		if s.lim.Memory > 0 {
			m := pss(pids)
			if !s.w.noMemfd {
				m += memfdBytes(pids, os.Geteuid() == 0 && (s.group == nil || s.group.memDir == ""))
			}
			// The cgroup's count sees what the sums cannot (a file in
			// /dev/shm no process holds); the larger of the two holds.
			if s.group != nil {
				if cg, ok := s.group.memory(); ok {
					m = max(m, cg)
				}
			}
			s.mu.Lock()
			s.usage.Memory = m
			s.mu.Unlock()
			if m > s.lim.Memory {
				s.stop(ReasonMemory, pids)
				return
			}
		}
		if s.lim.Disk > 0 && now.Sub(lastDisk) >= time.Second {
			lastDisk = now
			grown := DiskUsage(s.w.DiskPaths...) - s.w.DiskBase
			s.mu.Lock()
			s.usage.Disk = grown
			s.mu.Unlock()
			if grown > s.lim.Disk {
				s.stop(ReasonDisk, pids)
				return
			}
		}
		if s.lim.Time > 0 && now.Sub(start) > s.lim.Time {
			s.stop(ReasonTime, pids)
			return
		}
		if s.lim.Idle > 0 && now.Sub(lastActive) > s.lim.Idle {
			s.stop(ReasonIdle, pids)
			return
		}
		if s.lim.CPU > 0 {
			// Ahead of its share: pause the whole tree until wall time
			// catches up, a tenth of a second at most, then resume.
			allowed := s.lim.CPU * now.Sub(start).Seconds()
			if over := cpu - allowed; over > 0 {
				pause := min(time.Duration(over/s.lim.CPU*float64(time.Second)), 100*time.Millisecond)
				signal(pids, syscall.SIGSTOP)
				time.Sleep(pause)
				signal(s.pids(), syscall.SIGCONT)
				s.mu.Lock()
				s.usage.Throttled += pause
				s.mu.Unlock()
			}
		}
	}
}

func signal(pids []int, sig syscall.Signal) {
	for _, p := range pids {
		_ = syscall.Kill(p, sig)
	}
}

// Tree returns root and all its descendants, from /proc: through each
// thread's children list where the kernel keeps one (it reads only the
// run's own processes), else by scanning every process's parent.
func Tree(root int) []int {
	if haveChildren() {
		return treeByChildren(root)
	}
	return treeByScan(root)
}

var (
	childrenOnce sync.Once
	childrenOK   bool
)

// haveChildren: /proc/PID/task/TID/children needs CONFIG_PROC_CHILDREN.
func haveChildren() bool {
	childrenOnce.Do(func() {
		pid := os.Getpid()
		_, err := os.Stat("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
		childrenOK = err == nil
	})
	return childrenOK
}

func alive(pid int) bool {
	_, state, ok := statOf(pid)
	return ok && state != 'Z'
}

func treeByChildren(root int) []int {
	if !alive(root) {
		return nil
	}
	out := []int{root}
	seen := map[int]bool{root: true}
	for i := 0; i < len(out); i++ {
		dir := "/proc/" + strconv.Itoa(out[i]) + "/task/"
		tasks, err := os.ReadDir(dir)
		if err != nil {
			continue // gone meanwhile
		}
		// A child belongs to the thread that started it: read every thread's.
		for _, t := range tasks {
			b, err := os.ReadFile(dir + t.Name() + "/children")
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(b)) {
				c, err := strconv.Atoi(f)
				if err == nil && !seen[c] && alive(c) {
					seen[c] = true
					out = append(out, c)
				}
			}
		}
	}
	return out
}

func treeByScan(root int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	found := false
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ppid, state, ok := statOf(pid)
		if !ok || state == 'Z' {
			continue
		}
		if pid == root {
			found = true
		}
		children[ppid] = append(children[ppid], pid)
	}
	if !found {
		return nil
	}
	out := []int{root}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// statOf reads a process's parent and state from /proc/<pid>/stat.
func statOf(pid int) (ppid int, state byte, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+4 > len(b) {
		return 0, 0, false
	}
	f := strings.Fields(string(b[i+2:]))
	if len(f) < 2 {
		return 0, 0, false
	}
	ppid, err = strconv.Atoi(f[1])
	return ppid, f[0][0], err == nil
}

var clockTicks = 100.0 // USER_HZ on Linux

func cpuSeconds(pids []int) float64 {
	total := 0.0
	for _, p := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 > len(b) {
			continue
		}
		f := strings.Fields(string(b[i+2:]))
		if len(f) < 13 {
			continue
		}
		ut, _ := strconv.ParseFloat(f[11], 64)
		st, _ := strconv.ParseFloat(f[12], 64)
		total += (ut + st) / clockTicks
	}
	return total
}

// pss sums the proportional set size of the processes, from smaps_rollup.
func pss(pids []int) int64 {
	var total int64
	for _, p := range pids {
		f, err := os.Open("/proc/" + strconv.Itoa(p) + "/smaps_rollup")
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "Pss:") {
				kb, _ := strconv.ParseInt(strings.Fields(line)[1], 10, 64)
				total += kb << 10
				break
			}
		}
		f.Close()
	}
	return total
}

// DiskUsage is the space the trees at paths take, by allocated blocks,
// without following links.
func DiskUsage(paths ...string) int64 {
	var total int64
	for _, p := range paths {
		_ = filepath.WalkDir(p, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			var st unix.Stat_t
			if unix.Lstat(path, &st) == nil {
				total += st.Blocks * 512
			}
			return nil
		})
	}
	return total
}

// Bytes prints a size as a person reads it.
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// ParseBytes reads "4G", "512M", "10GiB", "2048" (bytes).
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(strings.ToUpper(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "IB"), "B")
	mult := int64(1)
	if t != "" {
		switch t[len(t)-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult != 1 {
			t = t[:len(t)-1]
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("limits: %q is not a size (try 512M or 4G)", s)
	}
	return int64(v * float64(mult)), nil
}
