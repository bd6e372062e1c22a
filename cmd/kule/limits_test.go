package main

import (
	"encoding/json"
	"fmt"
	"github.com/kulehq/kule/kernel"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// newTaskCLI makes a folder and a task on it through the CLI in a child
// process, with KULE_HOME set for the children; it returns the task's id.
func newTaskCLI(t *testing.T) (home, id string) {
	t.Helper()
	dir := t.TempDir()
	home = filepath.Join(dir, "kule")
	t.Setenv("KULE_HOME", home)
	folder := filepath.Join(dir, "folder")
	writeFile(t, filepath.Join(folder, "a.txt"), "a\n")
	out, err := kuleCLI(t, "new", folder, "--json")
	if err != nil {
		t.Fatalf("kule new: %v\n%s", err, out)
	}
	var nt struct{ ID string }
	if err := json.Unmarshal([]byte(out), &nt); err != nil {
		t.Fatalf("kule new --json: %q", out)
	}
	return home, nt.ID
}

func loadTask(t *testing.T, home, id string) *kernel.Task {
	t.Helper()
	s, err := kernel.OpenTasks(home)
	if err != nil {
		t.Fatal(err)
	}
	tk, err := s.Resolve(id)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func TestLimitsCommandSetsEveryField(t *testing.T) {
	home, id := newTaskCLI(t)
	out := mustKule(t, "limits", "--cpu", "2", "--memory", "4G", "--disk", "10G", "--time", "30m", "--task-time", "4h", "--idle", "10m", "--pids", "2048", "--gpu", "off")
	want := "limits for every task: cpu 2 cores · memory 4.0 GiB · disk 10.0 GiB · time 30m0s · task-time 4h0m0s · idle 10m0s · pids 2048 · gpu off"
	if !strings.Contains(out, want) {
		t.Fatalf("kule limits printed\n%s\nwant %s", out, want)
	}
	cfg, err := kernel.LoadSettings(home)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Limits != (kernel.Limits{CPU: 2, Memory: 4 << 30, Disk: 10 << 30, Time: 30 * time.Minute, TaskTime: 4 * time.Hour, Idle: 10 * time.Minute, GPU: "off", Pids: 2048}) {
		t.Fatalf("config.toml holds %+v", cfg.Limits)
	}
	// The task's own fields win; the rest are the home's.
	out = mustKule(t, "limits", id, "--task-time", "1h", "--gpu", "on")
	if !strings.Contains(out, "limits for task "+id+": cpu none · memory none · disk none · time none · task-time 1h0m0s · idle none · pids 1024 (default) · gpu on") ||
		!strings.Contains(out, "(in force): cpu 2 cores · memory 4.0 GiB · disk 10.0 GiB · time 30m0s · task-time 1h0m0s · idle 10m0s · pids 2048 · gpu on") {
		t.Fatalf("kule limits %s printed\n%s", id, out)
	}
	if tk := loadTask(t, home, id); tk.Limits.TaskTime != time.Hour || tk.Limits.GPU != "on" {
		t.Fatalf("task.json holds %+v", tk.Limits)
	}
	for _, bad := range [][]string{{"--gpu", "maybe"}, {"--task-time", "-1h"}, {"--cpu", "-1"}, {"--pids", "-5"}} {
		if out, err := kule(t, append([]string{"limits", id}, bad...)...); err == nil {
			t.Errorf("kule limits %v was accepted:\n%s", bad, out)
		}
	}
	if tk := loadTask(t, home, id); tk.Limits.TaskTime != time.Hour || tk.Limits.GPU != "on" {
		t.Fatalf("a refused setting changed task.json: %+v", tk.Limits)
	}
}

// All of a task's runs together: `kule exec` keeps its time with the task,
// is stopped when the runs reach --task-time, and then no run starts.
func TestTaskTimeStopsExecAcrossRuns(t *testing.T) {
	home, id := newTaskCLI(t)
	tk := loadTask(t, home, id)
	if out, err := kuleCLI(t, "exec", id, "--", "true"); err != nil {
		t.Fatalf("a first run: %v\n%s", err, out)
	}
	used, err := kernel.LoadTaskTime(kernel.TaskTimeFile(tk.Paths.Dir))
	if err != nil || used <= 0 {
		t.Fatalf("the first run's time was not kept with the task: %s %v", used, err)
	}
	// Two seconds more than the first run took (however slow this machine).
	mustKule(t, "limits", id, "--task-time", (used + 2*time.Second).String())
	out, err := kuleCLI(t, "exec", id, "--", "sleep", "60")
	if err == nil || !strings.Contains(out, "stopped by a limit: task-time") {
		t.Fatalf("the run past the task's time was not stopped: %v\n%s", err, out)
	}
	out, err = kuleCLI(t, "exec", id, "--", "sh", "-c", "echo ran > ran.txt")
	if err == nil || !strings.Contains(out, "the task's time is used up") || !strings.Contains(out, "--task-time") {
		t.Fatalf("a run started with the task's time used up: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(tk.Paths.Copy, "ran.txt")); err == nil {
		t.Fatal("the refused command ran")
	}
	if out := mustKule(t, "limits", id); !strings.Contains(out, "task time: its runs have taken") {
		t.Errorf("kule limits does not show the task's time:\n%s", out)
	}
}

// One run's time limit, through kule exec in the sandbox.
func TestTimeLimitStopsExec(t *testing.T) {
	_, id := newTaskCLI(t)
	mustKule(t, "limits", id, "--time", "1s")
	out, err := kuleCLI(t, "exec", id, "--", "sleep", "60")
	if err == nil || !strings.Contains(out, "stopped by a limit: time") {
		t.Fatalf("a run past its time was not stopped: %v\n%s", err, out)
	}
}

// --gpu off: /dev/dri and NVIDIA's devices are not in the sandbox. This
// machine may have no GPU, so the test gives itself one: as root, in a
// mount namespace of its own, /dev is a tmpfs holding the usual devices
// and a DRM card and nvidiactl node (opening them reaches no driver).
func TestGPUOffHidesTheDevices(t *testing.T) {
	if os.Getenv("KULE_TEST_GPU_NS") == "1" {
		gpuInNamespace(t)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a mount namespace with a GPU's device nodes (CI runs as root)")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestGPUOffHidesTheDevices$", "-test.v")
	cmd.Env = append(os.Environ(), "KULE_TEST_GPU_NS=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS} // Go makes / private first
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestGPUOffHidesTheDevices") {
		t.Fatalf("in the mount namespace: %v\n%s", err, out)
	}
}

func gpuInNamespace(t *testing.T) {
	dev := t.TempDir()
	if err := unix.Mount("tmpfs", dev, "tmpfs", 0, "mode=755"); err != nil {
		t.Fatalf("tmpfs for /dev: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dev, unix.MNT_DETACH) }) // before TempDir's removal
	nodes := map[string][2]uint32{
		"null": {1, 3}, "zero": {1, 5}, "full": {1, 7}, "random": {1, 8}, "urandom": {1, 9}, "tty": {5, 0},
		"dri/card0": {226, 0}, "dri/renderD128": {226, 128}, "nvidiactl": {195, 255}, "nvidia0": {195, 0},
	}
	for name, n := range nodes {
		p := filepath.Join(dev, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := unix.Mknod(p, unix.S_IFCHR|0o666, int(unix.Mkdev(n[0], n[1]))); err != nil {
			t.Fatalf("mknod %s: %v", name, err)
		}
	}
	for _, d := range []string{"pts", "shm"} {
		os.MkdirAll(filepath.Join(dev, d), 0o755)
	}
	if err := unix.Mount(dev, "/dev", "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind the test's /dev: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount("/dev", unix.MNT_DETACH) })
	_, id := newTaskCLI(t)
	list := "for d in /dev/dri /dev/nvidiactl /dev/nvidia0 /dev/null; do test -e $d && echo have $d; done; true"
	out, err := kuleCLI(t, "exec", id, "--", "sh", "-c", list)
	if err != nil || !strings.Contains(out, "have /dev/dri") || !strings.Contains(out, "have /dev/nvidiactl") || !strings.Contains(out, "have /dev/null") {
		t.Fatalf("with the GPU on the sandbox lacks its devices: %v\n%s", err, out)
	}
	mustKule(t, "limits", id, "--gpu", "off")
	out, err = kuleCLI(t, "exec", id, "--", "sh", "-c", list)
	if err != nil || !strings.Contains(out, "have /dev/null") {
		t.Fatalf("with the GPU off: %v\n%s", err, out)
	}
	for _, d := range []string{"/dev/dri", "/dev/nvidiactl", "/dev/nvidia0"} {
		if strings.Contains(out, "have "+d) {
			t.Errorf("--gpu off: %s is in the sandbox:\n%s", d, out)
		}
	}
	// The home's setting holds when the task says nothing.
	mustKule(t, "limits", id, "--gpu", "on")
	mustKule(t, "limits", "--gpu", "off")
	if out, _ := kuleCLI(t, "exec", id, "--", "sh", "-c", list); !strings.Contains(out, "have /dev/dri") {
		t.Errorf("the task's gpu on did not win over the home's off:\n%s", out)
	}
}

func TestBudgetCommands(t *testing.T) {
	home, id := newTaskCLI(t)
	tk := loadTask(t, home, id)
	if out := mustKule(t, "budget", id); !strings.Contains(out, "usage: none reported yet") || !strings.Contains(out, "budget: none") {
		t.Fatalf("kule budget before any run:\n%s", out)
	}
	// What an agent reported in two runs, as kernel/internal/acp writes it.
	now := time.Now().UTC()
	lines := []string{
		fmt.Sprintf(`{"time":%q,"source":"run_start"}`, now.Add(-2*time.Hour).Format(time.RFC3339)),
		fmt.Sprintf(`{"time":%q,"session":"s","source":"usage_update","used":5000,"size":200000,"cost":{"amount":1.5,"currency":"USD"}}`, now.Add(-2*time.Hour).Format(time.RFC3339)),
		fmt.Sprintf(`{"time":%q,"session":"s","source":"prompt","tokens":{"totalTokens":12345,"inputTokens":12000,"outputTokens":345}}`, now.Add(-2*time.Hour).Format(time.RFC3339)),
		fmt.Sprintf(`{"time":%q,"source":"run_start"}`, now.Add(-time.Hour).Format(time.RFC3339)),
		fmt.Sprintf(`{"time":%q,"session":"s","source":"usage_update","used":9000,"size":200000,"cost":{"amount":2.5,"currency":"USD"}}`, now.Add(-time.Hour).Format(time.RFC3339)),
	}
	writeFile(t, filepath.Join(tk.Paths.Dir, kernel.UsageFile), strings.Join(lines, "\n")+"\n")
	out := mustKule(t, "budget", id, "5")
	for _, want := range []string{"usage: 12,345 tokens · cost $4.00 · 2 runs · context 9,000 of 200,000", "budget: $4.00 of $5.00 (80%)"} {
		if !strings.Contains(out, want) {
			t.Errorf("kule budget %s 5 lacks %q:\n%s", id, want, out)
		}
	}
	if c, _ := kernel.TaskCap(tk.Paths.Dir); c == nil || *c != (kernel.Money{Amount: 5, Currency: "USD"}) {
		t.Fatalf("stored cap %v", c)
	}
	out = mustKule(t, "budget", id, "4")
	if !strings.Contains(out, "no run starts: budget spent") {
		t.Errorf("a spent budget does not say no run starts:\n%s", out)
	}
	if out := mustKule(t, "status", id); !strings.Contains(out, "budget: $4.00 of $4.00 (100%)") || !strings.Contains(out, "usage: 12,345 tokens") {
		t.Errorf("kule status lacks the usage and budget:\n%s", out)
	}
	out = mustKule(t, "status", id, "--json")
	var st struct {
		Usage kernel.BudgetSummary `json:"usage"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.Usage.Usage == nil || st.Usage.Usage.Tokens.Total != 12345 || st.Usage.Budget == nil || st.Usage.BudgetSpent.Amount != 4 {
		t.Errorf("kule status --json usage: %v\n%s", err, out)
	}
	if out := mustKule(t, "budget", id, "5", "EUR"); !strings.Contains(out, "never converts") {
		t.Errorf("an EUR budget against USD costs:\n%s", out)
	}
	for _, bad := range [][]string{{"0"}, {"-3"}, {"five"}, {"5", "euros"}} {
		if out, err := kule(t, append([]string{"budget", id}, bad...)...); err == nil {
			t.Errorf("kule budget %v was accepted:\n%s", bad, out)
		}
	}
	if c, _ := kernel.TaskCap(tk.Paths.Dir); c == nil || c.Currency != "EUR" {
		t.Fatalf("a refused amount changed the cap: %v", c)
	}
	mustKule(t, "budget", id, "off")
	if c, _ := kernel.TaskCap(tk.Paths.Dir); c != nil {
		t.Fatalf("off left %v", c)
	}
	if out := mustKule(t, "daily-budget", "20"); !strings.Contains(out, "daily budget: $20.00 · all tasks in the last 24 hours: $4.00 (20%)") {
		t.Errorf("kule daily-budget 20:\n%s", out)
	}
	if out := mustKule(t, "daily-budget", "off"); !strings.Contains(out, "daily budget: none") {
		t.Errorf("kule daily-budget off:\n%s", out)
	}
}

// kule run refuses to start an agent once the task's budget is spent, and
// says what was spent, the cap and how to raise it.
func TestRunRefusedOnceTheBudgetIsSpent(t *testing.T) {
	home, id := newTaskCLI(t)
	tk := loadTask(t, home, id)
	marker := filepath.Join(t.TempDir(), "agent-ran")
	writeFile(t, filepath.Join(home, "agents.toml"), "[[agent]]\nname = \"touch\"\ncommand = [\"/usr/bin/touch\", "+strconvQuote(marker)+"]\n")
	if out, err := kuleCLI(t, "agents", "approve", "touch"); err != nil {
		t.Fatalf("approve: %v\n%s", err, out)
	}
	writeFile(t, filepath.Join(tk.Paths.Dir, kernel.UsageFile),
		fmt.Sprintf(`{"time":%q,"session":"s","source":"usage_update","cost":{"amount":3,"currency":"USD"}}`+"\n", time.Now().UTC().Format(time.RFC3339)))
	mustKule(t, "budget", id, "3")
	out, err := kuleCLI(t, "run", id, "--agent", "touch", "--no-sandbox", "hi")
	if err == nil || !strings.Contains(out, "budget spent") || !strings.Contains(out, "$3.00 of its $3.00 budget") || !strings.Contains(out, "kule budget "+id) {
		t.Fatalf("kule run with the budget spent: %v\n%s", err, out)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the agent started")
	}
}

// The step-arounds of a run's limits, through kule exec in the sandbox: a
// fork bomb under --pids, memory held in a memfd never mapped, and disk
// filled through the task's cache (where package managers write). Each is
// stopped; kernel/internal/limits' tests show each getting through with its count
// taken away.
func TestLimitStepAroundsStopExec(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("python3 is needed on CI")
		}
		t.Skip("python3 is not installed")
	}
	_, id := newTaskCLI(t)
	const bomb = `
import os, time
n = 0
try:
    for _ in range(200):
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        n += 1
except OSError as e:
    print("refused after %d: errno %d" % (n, e.errno))
print("made %d" % n, flush=True)
`
	out, _ := kuleCLI(t, "exec", id, "--pids", "64", "--", "python3", "-c", bomb)
	var made int
	if _, err := fmt.Sscanf(out[strings.Index(out, "made "):], "made %d", &made); err != nil {
		t.Fatalf("the fork bomb printed no count:\n%s", out)
	}
	if made >= 64 || !strings.Contains(out, "refused after") && !strings.Contains(out, "stopped by a limit: pids") {
		t.Fatalf("under --pids 64 the fork bomb made %d processes:\n%s", made, out)
	}
	// The same program under a limit above what it makes: all 200.
	out, _ = kuleCLI(t, "exec", id, "--pids", "1000", "--", "python3", "-c", bomb)
	if !strings.Contains(out, "made 200") {
		t.Fatalf("under --pids 1000 the program should make its 200 processes:\n%s", out)
	}

	mustKule(t, "limits", id, "--memory", "64M")
	out, err := kuleCLI(t, "exec", id, "--", "python3", "-c", `
import os, time
fd = os.memfd_create("hoard")
for _ in range(200):
    os.write(fd, b"\1" * (1 << 20))
print("filled", flush=True)
time.sleep(60)
`)
	if err == nil || !strings.Contains(out, "stopped by a limit: memory") {
		t.Fatalf("200 MiB in a memfd under --memory 64M was not stopped: %v\n%s", err, out)
	}
	mustKule(t, "limits", id, "--memory", "0", "--disk", "4M")
	out, err = kuleCLI(t, "exec", id, "--", "sh", "-c",
		`mkdir -p "$XDG_CACHE_HOME" && for i in $(seq 24); do head -c 1048576 /dev/zero > "$XDG_CACHE_HOME/f$i" || exit 3; done; echo written; sleep 60`)
	if err == nil || !strings.Contains(out, "stopped by a limit: disk") {
		t.Fatalf("24 MiB into the task's cache under --disk 4M was not stopped: %v\n%s", err, out)
	}
}

// TestLimitsOff: off removes each limit, as it removes a budget, on the
// task and on the home; a value that is neither says so.
func TestLimitsOff(t *testing.T) {
	home, id := newTaskCLI(t)
	for _, args := range [][]string{{"limits", id}, {"limits"}} {
		set := append(append([]string{}, args...), "--cpu", "2", "--memory", "4G", "--disk", "10G", "--time", "30m", "--task-time", "4h", "--idle", "10m", "--pids", "64")
		if out, err := kuleCLI(t, set...); err != nil {
			t.Fatalf("kule %v: %v\n%s", set, err, out)
		}
		off := append(append([]string{}, args...), "--cpu", "off", "--memory", "off", "--disk", "none", "--time", "off", "--task-time", "OFF", "--idle", "off", "--pids", "off")
		out, err := kuleCLI(t, off...)
		if err != nil {
			t.Fatalf("kule %v: %v\n%s", off, err, out)
		}
		first, _, _ := strings.Cut(out, "\n")
		if !strings.HasSuffix(first, "cpu none · memory none · disk none · time none · task-time none · idle none · pids 1024 (default) · gpu on") {
			t.Errorf("after off, kule %v says %q", args, first)
		}
	}
	if tk := loadTask(t, home, id); tk.Limits.Memory != 0 || tk.Limits.Time != 0 || tk.Limits.CPU != 0 || tk.Limits.Pids != 0 {
		t.Errorf("the task keeps limits after off: %+v", tk.Limits)
	}
	out, err := kuleCLI(t, "limits", id, "--time", "soon")
	if err == nil || !strings.Contains(out, `"soon" is neither a duration nor off`) {
		t.Errorf("--time soon: %v\n%s", err, out)
	}
}

// TestBogusBackendIsRefusedByEveryCommand: a misspelt KULE_BACKEND is an
// error for the commands on an existing task too, not only for kule new,
// and the task is untouched.
func TestBogusBackendIsRefusedByEveryCommand(t *testing.T) {
	home, id := newTaskCLI(t)
	t.Setenv("KULE_BACKEND", "overlya")
	for _, args := range [][]string{{"list"}, {"status", id}, {"exec", id, "--no-sandbox", "--", "touch", "made"}} {
		out, err := kuleCLI(t, args...)
		if err == nil || !strings.Contains(out, `KULE_BACKEND="overlya"`) || !strings.Contains(out, "unset it") {
			t.Errorf("KULE_BACKEND=overlya kule %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	tk := loadTask(t, home, id)
	if _, err := os.Stat(filepath.Join(tk.Paths.Copy, "made")); err == nil {
		t.Error("the command ran with a misspelt backend")
	}
}

// TestForcedBackendIsTheTasks: a KULE_BACKEND the environment forces is the
// backend of the task kule new makes. make test runs the crash-point, git
// and link suites again with KULE_BACKEND=overlay; this test, run with
// them, fails should the variable stop reaching kule new (the suites would
// then pass on the copy backend and say nothing).
func TestForcedBackendIsTheTasks(t *testing.T) {
	want := os.Getenv("KULE_BACKEND")
	if want == "" {
		want = "copy"
		t.Setenv("KULE_BACKEND", want)
	}
	home, id := newTaskCLI(t)
	if got := loadTask(t, home, id).Backend; got != want {
		t.Errorf("KULE_BACKEND=%s made a task of backend %q", want, got)
	}
}
