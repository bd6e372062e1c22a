package daemon

import (
	"fmt"
	"math"
	"net/http"
	"regexp"
	"sync"
	"time"

	"github.com/kulehq/kule/kernel"
)

// The task menu's Budget… and Limits…: a task's own spending cap (kule budget --task) and its
// own limits (kule limits), set from the app. The kernel keeps and enforces both; these
// handlers only check what a person typed.

var currencyRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Z]{3}$`) })

// BudgetRequest sets a task's cap; a nil Cap removes it.
type BudgetRequest struct {
	Cap *kernel.Money `json:"cap"`
}

func (d *Daemon) putTaskBudget(w http.ResponseWriter, r *http.Request, t *kernel.Task) {
	var in BudgetRequest
	if err := readBody(r, &in); err != nil {
		fail(w, err)
		return
	}
	if c := in.Cap; c != nil {
		if !currencyRe().MatchString(c.Currency) || !(c.Amount > 0) || c.Amount > 1e6 || math.IsInf(c.Amount, 0) {
			fail(w, fmt.Errorf("%w: a budget is an amount above 0 and at most 1,000,000 in a currency of three capitals (5.00 USD); nothing was changed", errBadRequest))
			return
		}
	}
	if err := d.k.SetTaskCap(t, in.Cap); err != nil {
		fail(w, err)
		return
	}
	d.Bus.Publish("task", t.ID, map[string]any{"action": "budget"})
	writeJSON(w, 200, d.viewOf(r.Context(), t))
}

// LimitsRequest is a task's own limits as the app's form has them; zero takes the home's.
type LimitsRequest struct {
	CPU         float64 `json:"cpu"`
	MemoryMiB   int64   `json:"memory_mib"`
	DiskMiB     int64   `json:"disk_mib"`
	TimeMinutes float64 `json:"time_minutes"`
	IdleMinutes float64 `json:"idle_minutes"`
	TaskMinutes float64 `json:"task_time_minutes"`
}

func (d *Daemon) getTaskLimits(w http.ResponseWriter, r *http.Request, t *kernel.Task) {
	l := t.Limits
	writeJSON(w, 200, LimitsRequest{CPU: l.CPU, MemoryMiB: l.Memory >> 20, DiskMiB: l.Disk >> 20,
		TimeMinutes: l.Time.Minutes(), IdleMinutes: l.Idle.Minutes(), TaskMinutes: l.TaskTime.Minutes()})
}

func (d *Daemon) putTaskLimits(w http.ResponseWriter, r *http.Request, t *kernel.Task) {
	var in LimitsRequest
	if err := readBody(r, &in); err != nil {
		fail(w, err)
		return
	}
	bad := func(what string) {
		fail(w, fmt.Errorf("%w: %s; nothing was changed", errBadRequest, what))
	}
	switch {
	case in.CPU < 0 || in.CPU > 1024 || math.IsNaN(in.CPU):
		bad("CPU is a number of cores from 0 (the home's setting) to 1024")
	case in.MemoryMiB < 0 || in.MemoryMiB > 1<<24:
		bad("memory is MiB from 0 (the home's setting) to 16 TiB")
	case in.DiskMiB < 0 || in.DiskMiB > 1<<26:
		bad("disk is MiB from 0 (the home's setting) to 64 TiB")
	case in.TimeMinutes < 0 || in.IdleMinutes < 0 || in.TaskMinutes < 0 || in.TimeMinutes > 1e6 || in.IdleMinutes > 1e6 || in.TaskMinutes > 1e6:
		bad("times are minutes from 0 (the home's setting) to 1,000,000")
	default:
		mins := func(m float64) time.Duration { return time.Duration(m * float64(time.Minute)) }
		nt, err := d.k.EditTask(t.ID, func(tk *kernel.Task) {
			tk.Limits.CPU, tk.Limits.Memory, tk.Limits.Disk = in.CPU, in.MemoryMiB<<20, in.DiskMiB<<20
			tk.Limits.Time, tk.Limits.Idle, tk.Limits.TaskTime = mins(in.TimeMinutes), mins(in.IdleMinutes), mins(in.TaskMinutes)
		})
		if err != nil {
			fail(w, err)
			return
		}
		d.Bus.Publish("task", t.ID, map[string]any{"action": "limits"})
		writeJSON(w, 200, d.viewOf(r.Context(), nt))
	}
}

// knobRoutes adds the task menu's Budget and Limits endpoints to the API.
func (d *Daemon) knobRoutes(m *http.ServeMux) {
	m.HandleFunc("PUT /api/tasks/{id}/budget", d.withTask(d.putTaskBudget))
	m.HandleFunc("GET /api/tasks/{id}/limits", d.withTask(d.getTaskLimits))
	m.HandleFunc("PUT /api/tasks/{id}/limits", d.withTask(d.putTaskLimits))
}
