package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kulehq/kule/kernel"
)

func limitsCommand() *cobra.Command {
	var cpu float64
	var memory, disk string
	var runTime, idle, taskTime time.Duration
	var gpu string
	var pids int
	c := &cobra.Command{
		Use:   "limits [TASK]",
		Short: "Show or set what a run may take: --cpu 2 --memory 4G --disk 10G --time 30m --task-time 4h --idle 10m --pids 1024 --gpu off",
		Long: `Without TASK the limits hold for every task; with TASK for that task only (its
fields win over the home's). 0 removes a limit. Over its CPU share a run is
slowed, not stopped; over memory, disk, time, task-time (all of the task's
runs together) or idle it is stopped and says why. --pids bounds the
processes and threads a run holds at once (1024 unless set; 0 goes back to
that default): where Kule can make the run a cgroup of its own a fork past
it fails, elsewhere the run is stopped. --gpu off leaves /dev/dri and
NVIDIA's devices out of the sandbox.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, err := openKernel()
			if err != nil {
				return err
			}
			cfg, err := kernel.LoadSettings(k.Store().Root)
			if err != nil {
				return err
			}
			target := &cfg.Limits
			var save func() error = func() error { return kernel.SaveSettings(k.Store().Root, cfg) }
			where := "every task"
			if len(args) == 1 {
				t, err := k.Resolve(args[0])
				if err != nil {
					return err
				}
				target, where = &t.Limits, "task "+t.ID
				save = func() error { return k.Store().Save(t) }
			}
			changed := false
			f := cmd.Flags()
			if f.Changed("cpu") {
				target.CPU, changed = cpu, true
			}
			for name, dst := range map[string]*int64{"memory": &target.Memory, "disk": &target.Disk} {
				if !f.Changed(name) {
					continue
				}
				v := map[string]string{"memory": memory, "disk": disk}[name]
				var n int64
				var err error
				if !isOff(v) {
					n, err = kernel.ParseBytes(v)
				}
				if err != nil {
					return err
				}
				*dst, changed = n, true
			}
			if f.Changed("time") {
				target.Time, changed = runTime, true
			}
			if f.Changed("idle") {
				target.Idle, changed = idle, true
			}
			if f.Changed("task-time") {
				target.TaskTime, changed = taskTime, true
			}
			if f.Changed("pids") {
				if pids < 0 {
					return fmt.Errorf("limits: --pids %d is below zero (0 is the default of %d)", pids, kernel.DefaultPids)
				}
				target.Pids, changed = pids, true
			}
			if f.Changed("gpu") {
				if gpu != kernel.GPUOn && gpu != kernel.GPUOff {
					return fmt.Errorf("%w, not %q", kernel.ErrBadGPU, gpu)
				}
				target.GPU, changed = gpu, true
			}
			for name, d := range map[string]time.Duration{"time": target.Time, "idle": target.Idle, "task-time": target.TaskTime} {
				if d < 0 {
					return fmt.Errorf("limits: --%s %s is below zero (0 removes the limit)", name, d)
				}
			}
			if target.CPU < 0 {
				return fmt.Errorf("limits: --cpu %g is below zero (0 removes the limit)", target.CPU)
			}
			if changed {
				if err := save(); err != nil {
					return err
				}
			}
			w := cmd.OutOrStdout()
			printLimits(w, where, *target, cfg.Sandbox.NoGPU)
			if target.CPU > 0 {
				fmt.Fprintln(w, "cpu is held by pausing and resuming the run's processes a tenth of a second at a time (cgroup cpu.max is not used)")
			}
			if len(args) == 1 {
				t, _ := k.Resolve(args[0])
				in := kernel.LimitsFor(t, cfg.Limits)
				printLimits(w, "task "+t.ID+" with the home's (in force)", in, cfg.Sandbox.NoGPU)
				used, err := kernel.LoadTaskTime(kernel.TaskTimeFile(t.Paths.Dir))
				switch {
				case err != nil:
					fmt.Fprintf(w, "task time: %v\n", err)
				case in.TaskTime > 0:
					fmt.Fprintf(w, "task time: its runs have taken %s of %s\n", used.Round(time.Second), in.TaskTime)
				case used > 0:
					fmt.Fprintf(w, "task time: its runs have taken %s\n", used.Round(time.Second))
				}
			}
			return nil
		},
	}
	c.Flags().Var(offFlag(&cpu, "cores", parseCores), "cpu", "cores a run may use (slowed beyond); off removes the limit")
	c.Flags().StringVar(&memory, "memory", "", "memory a run's processes may hold together (e.g. 4G); off removes the limit")
	c.Flags().StringVar(&disk, "disk", "", "how much the task may grow (e.g. 10G); also the largest file; off removes the limit")
	c.Flags().Var(offFlag(&runTime, "duration", time.ParseDuration), "time", "one run's wall time (e.g. 30m); off removes the limit")
	c.Flags().Var(offFlag(&taskTime, "duration", time.ParseDuration), "task-time", "all of the task's runs together (e.g. 4h); off removes the limit")
	c.Flags().Var(offFlag(&idle, "duration", time.ParseDuration), "idle", "stop a run with no activity for this long (e.g. 10m); off removes the limit")
	c.Flags().Var(offFlag(&pids, "int", strconv.Atoi), "pids", fmt.Sprintf("processes and threads a run may hold at once (off or 0: the default, %d)", kernel.DefaultPids))
	c.Flags().StringVar(&gpu, "gpu", "", "on or off: off leaves /dev/dri and NVIDIA's devices out of the sandbox")
	return c
}

// isOff reports whether a limit's value removes it: off or none, as
// kule budget takes them.
func isOff(s string) bool {
	s = strings.TrimSpace(s)
	return strings.EqualFold(s, "off") || strings.EqualFold(s, "none")
}

// offValue is a flag whose value is parsed by parse, or is "off" (or
// "none"), which sets the zero value: no limit.
type offValue[T any] struct {
	p     *T
	typ   string
	parse func(string) (T, error)
}

func offFlag[T any](p *T, typ string, parse func(string) (T, error)) *offValue[T] {
	return &offValue[T]{p: p, typ: typ, parse: parse}
}

func (v *offValue[T]) Set(s string) error {
	if isOff(s) {
		var zero T
		*v.p = zero
		return nil
	}
	n, err := v.parse(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("%q is neither a %s nor off", s, v.typ)
	}
	*v.p = n
	return nil
}

func (v *offValue[T]) String() string {
	if v.p == nil {
		return ""
	}
	var zero T
	if any(*v.p) == any(zero) {
		return ""
	}
	return fmt.Sprint(*v.p)
}

func (v *offValue[T]) Type() string { return v.typ }

func printLimits(w io.Writer, where string, l kernel.Limits, sandboxNoGPU bool) {
	show := func(v bool, s string) string {
		if !v {
			return "none"
		}
		return s
	}
	gpu := "on"
	if l.NoGPU(sandboxNoGPU) {
		gpu = "off"
	}
	pids := fmt.Sprintf("%d (default)", kernel.DefaultPids)
	if l.Pids > 0 {
		pids = strconv.Itoa(l.Pids)
	}
	fmt.Fprintf(w, "limits for %s: cpu %s · memory %s · disk %s · time %s · task-time %s · idle %s · pids %s · gpu %s\n", where,
		show(l.CPU > 0, fmt.Sprintf("%g cores", l.CPU)), show(l.Memory > 0, kernel.FormatBytes(l.Memory)),
		show(l.Disk > 0, kernel.FormatBytes(l.Disk)), show(l.Time > 0, l.Time.String()), show(l.TaskTime > 0, l.TaskTime.String()),
		show(l.Idle > 0, l.Idle.String()), pids, gpu)
}

func parseCores(s string) (float64, error) { return strconv.ParseFloat(s, 64) }
