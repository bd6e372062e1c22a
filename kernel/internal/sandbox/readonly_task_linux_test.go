//go:build linux

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kulehq/kule/kernel/internal/runner"
)

func init() {
	attacks["rewrite"] = attackRewrite
	attacks["swap"] = attackSwap
}

// attackRewrite writes over each file it is given, as an agent rewriting
// its own settings mid-run would, then reads it back: reading its own
// words back is the escape.
func attackRewrite(args []string) {
	for _, p := range args {
		err := os.WriteFile(p, []byte("POISON\n"), 0o644)
		b, _ := os.ReadFile(p)
		if strings.Contains(string(b), "POISON") {
			escaped("rewrote %s", p)
			continue
		}
		held("rewrite %s: %v (reads %q)", p, err, b)
	}
}

// attackSwap moves the folder args[0] aside and makes a new one of the same
// name holding args[1] of its own: the read-only file stays in the folder
// moved aside, and the path the agent reads now names the new one.
func attackSwap(args []string) {
	dir, name := args[0], args[1]
	if err := os.Rename(dir, dir+".aside"); err != nil {
		held("move %s aside: %v", dir, err)
		return
	}
	os.MkdirAll(dir, 0o700)
	os.WriteFile(filepath.Join(dir, name), []byte("POISON\n"), 0o644)
	if b, _ := os.ReadFile(filepath.Join(dir, name)); strings.Contains(string(b), "POISON") {
		escaped("swapped %s for a folder of its own", dir)
		return
	}
	held("swap %s", dir)
}

// agentHomeIn makes an agent's home in the task's caches, as Kule places it
// before a run: its settings file and a folder of hooks.
func agentHomeIn(t *testing.T, w *world) (home, settings, hooks string) {
	home = filepath.Join(w.task.Dir, "cache", "agent-homes", "claude-code")
	settings = filepath.Join(home, "settings.json")
	hooks = filepath.Join(home, "hooks")
	write(t, settings, `{"hooks":{}}`)
	write(t, filepath.Join(hooks, "start.sh"), "echo start")
	return home, settings, hooks
}

// A run whose instructions are read-only in the task cannot rewrite them
// and read its own words back, nor move their folder aside and make a
// writable one in its place; what else it writes in its home it still
// writes. Without the read-only paths the rewrite gets through, and without
// the pins the swap does.
func TestReadOnlyInTaskHoldsForTheRun(t *testing.T) {
	skipUnlessSandbox(t)
	w := newWorld(t)
	home, settings, hooks := agentHomeIn(t, w)
	spec := func() runner.Spec { return runner.Spec{ReadOnlyInTask: []string{settings, hooks}} }

	assertHeld(t, w.attack(t, spec(), "rewrite", settings, filepath.Join(hooks, "start.sh"), filepath.Join(hooks, "planted.sh")))
	assertHeld(t, w.attack(t, spec(), "swap", home, "settings.json"))
	assertHeld(t, w.attack(t, spec(), "swap", filepath.Dir(home), "claude-code/settings.json"))
	if b, _ := os.ReadFile(settings); string(b) != `{"hooks":{}}` {
		t.Fatalf("the settings now hold %q", b)
	}
	// The rest of the home is the agent's to write: its sessions, its logs.
	r := w.run(t, w.sandbox(), runner.Spec{ReadOnlyInTask: []string{settings, hooks},
		Args: []string{"sh", "-c", fmt.Sprintf("mkdir -p %[1]s/projects && echo s > %[1]s/projects/s.jsonl && cat %[1]s/projects/s.jsonl", home)}})
	if r.code != 0 || r.stdout != "s\n" {
		t.Fatalf("the agent's own state could not be written: exit %d, %q %s", r.code, r.stdout, r.stderr)
	}

	// The guards taken away, one at a time.
	assertEscaped(t, w.attack(t, runner.Spec{}, "rewrite", settings), "rewrote "+settings)
	write(t, settings, `{"hooks":{}}`)
	off := w.sandbox()
	off.off.pins = true
	assertEscaped(t, w.attackWith(t, off, spec(), "swap", home, "settings.json"), "swapped "+home)
}

// A read-only path in the task that a command made a link, or one outside
// the task's home and caches, refuses the run before anything starts.
func TestReadOnlyInTaskRefusesLinksAndOutside(t *testing.T) {
	skipUnlessSandbox(t)
	w := newWorld(t)
	home, _, _ := agentHomeIn(t, w)
	link := filepath.Join(home, "CLAUDE.md")
	if err := os.Symlink(filepath.Join(w.home, "notes.txt"), link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{link, filepath.Join(w.home, "notes.txt"), filepath.Join(w.task.Copy, "main.go")} {
		var out strings.Builder
		spec := runner.Spec{Task: w.task, Dir: w.task.Copy, Env: w.env, Stdout: &out, Stderr: &out,
			ReadOnlyInTask: []string{p}, Args: []string{"sh", "-c", "echo ran"}}
		_, err := w.sandbox().Run(context.Background(), spec)
		if !errors.Is(err, ErrBadSpec) || strings.Contains(out.String(), "ran") {
			t.Errorf("read-only %s in the task: %v, %q; want it refused before anything ran", p, err, out.String())
		}
	}
}

// BenchmarkReadOnlyInTask measures what the read-only binds add to a
// command's start: `true` run with a Claude Code-like home of nine placed
// entries made read-only (and their folders pinned) against the same run
// without them, interleaved in one run; it reports the medians of the wall
// time and of the CPU time (user+sys of the sandbox's processes) and their
// ratios.
func BenchmarkReadOnlyInTask(b *testing.B) {
	if m := Probe().Missing(); len(m) > 0 {
		b.Skipf("sandbox unavailable: %v", m)
	}
	w := newWorldB(b)
	home := filepath.Join(w.task.Dir, "cache", "agent-homes", "claude-code")
	var ro []string
	for _, rel := range []string{"settings.json", "settings.local.json", "CLAUDE.md", "hooks/", "skills/", "commands/", "agents/", "output-styles/", "x/mcp.json"} {
		p := filepath.Join(home, rel)
		if strings.HasSuffix(rel, "/") {
			os.MkdirAll(p, 0o700)
		} else {
			write(b, p, "{}")
		}
		ro = append(ro, filepath.Clean(p))
	}
	s := w.sandbox()
	plain := runner.Spec{Task: w.task, Dir: w.task.Copy, Env: w.env, Args: []string{"true"}, Stdout: io.Discard, Stderr: io.Discard}
	bound := plain
	bound.ReadOnlyInTask = ro
	run := func(spec runner.Spec) (wall, cpu time.Duration) {
		var r0, r1 unix.Rusage
		unix.Getrusage(unix.RUSAGE_CHILDREN, &r0)
		t0 := time.Now()
		if code, err := s.Run(context.Background(), spec); err != nil || code != 0 {
			b.Fatalf("sandbox: %d %v", code, err)
		}
		wall = time.Since(t0)
		unix.Getrusage(unix.RUSAGE_CHILDREN, &r1)
		tv := func(t unix.Timeval) time.Duration { return time.Duration(t.Nano()) }
		cpu = tv(r1.Utime) - tv(r0.Utime) + tv(r1.Stime) - tv(r0.Stime)
		return wall, cpu
	}
	var pw, pc, bw, bc []time.Duration
	for b.Loop() {
		w1, c1 := run(plain)
		w2, c2 := run(bound)
		pw, pc, bw, bc = append(pw, w1), append(pc, c1), append(bw, w2), append(bc, c2)
	}
	ms := func(d []time.Duration) float64 {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return float64(d[len(d)/2]) / 1e6
	}
	b.ReportMetric(ms(pw), "plain-ms")
	b.ReportMetric(ms(bw), "bound-ms")
	b.ReportMetric(ms(bw)/ms(pw), "bound/plain-wall")
	b.ReportMetric(ms(pc), "plain-cpu-ms")
	b.ReportMetric(ms(bc), "bound-cpu-ms")
	b.ReportMetric(ms(bc)/ms(pc), "bound/plain-cpu")
}
