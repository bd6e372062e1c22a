package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/config"
	"github.com/kulehq/kule/kernel/limits"
)

func limitsCommand() *cobra.Command {
	var cpu float64
	var memory, disk string
	var runTime, idle time.Duration
	c := &cobra.Command{
		Use:   "limits [TASK]",
		Short: "Show or set what a run may take: --cpu 2 --memory 4G --disk 10G --time 30m --idle 10m",
		Long: `Without TASK the limits hold for every task; with TASK for that task only (its
fields win over the home's). 0 removes a limit. Over its CPU share a run is
slowed, not stopped; over memory, disk, time or idle it is stopped and says why.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, err := openKernel()
			if err != nil {
				return err
			}
			cfg, err := config.Load(k.Store.Root)
			if err != nil {
				return err
			}
			target := &cfg.Limits
			var save func() error = func() error { return config.Save(k.Store.Root, cfg) }
			where := "every task"
			if len(args) == 1 {
				t, err := k.Resolve(args[0])
				if err != nil {
					return err
				}
				target, where = &t.Limits, "task "+t.ID
				save = func() error { return k.Store.Save(t) }
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
				n, err := limits.ParseBytes(v)
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
			if changed {
				if err := save(); err != nil {
					return err
				}
			}
			printLimits(cmd.OutOrStdout(), where, *target)
			if len(args) == 1 {
				t, _ := k.Resolve(args[0])
				printLimits(cmd.OutOrStdout(), "task "+t.ID+" with the home's (in force)", kernel.LimitsFor(t, cfg.Limits))
			}
			return nil
		},
	}
	c.Flags().Float64Var(&cpu, "cpu", 0, "cores a run may use (slowed beyond)")
	c.Flags().StringVar(&memory, "memory", "", "memory a run's processes may hold together (e.g. 4G)")
	c.Flags().StringVar(&disk, "disk", "", "how much the task may grow (e.g. 10G); also the largest file")
	c.Flags().DurationVar(&runTime, "time", 0, "one run's wall time (e.g. 30m)")
	c.Flags().DurationVar(&idle, "idle", 0, "stop a run with no activity for this long (e.g. 10m)")
	return c
}

func printLimits(w io.Writer, where string, l limits.Limits) {
	show := func(v bool, s string) string {
		if !v {
			return "none"
		}
		return s
	}
	fmt.Fprintf(w, "limits for %s: cpu %s · memory %s · disk %s · time %s · idle %s\n", where,
		show(l.CPU > 0, fmt.Sprintf("%g cores", l.CPU)), show(l.Memory > 0, limits.Bytes(l.Memory)),
		show(l.Disk > 0, limits.Bytes(l.Disk)), show(l.Time > 0, l.Time.String()), show(l.Idle > 0, l.Idle.String()))
}
