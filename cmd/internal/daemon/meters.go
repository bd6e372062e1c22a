package daemon

import (
	"errors"
	"sync"
	"time"

	"github.com/kulehq/kule/kernel"
)

// What a running run takes against its limits, for the Live tab's meters:
// a "limits" event about once a second while an event stream listens, and
// a last one when the run is over (with the limit that stopped it).

// LimitsView is what a run may take; a zero (left out) field is no limit.
type LimitsView struct {
	CPU      float64 `json:"cpu,omitempty"`    // cores
	Memory   int64   `json:"memory,omitempty"` // bytes of PSS
	Disk     int64   `json:"disk,omitempty"`   // bytes of growth since the task was made
	Time     float64 `json:"time_seconds,omitempty"`
	Idle     float64 `json:"idle_seconds,omitempty"`
	TaskTime float64 `json:"task_time_seconds,omitempty"`
}

// UsageView is what the run took so far. Memory and disk are measured only
// under a limit on them (a walk of the copy is not free).
type UsageView struct {
	CPU        float64 `json:"cpu"` // cores in use since the last report
	CPUSeconds float64 `json:"cpu_seconds"`
	Memory     int64   `json:"memory"`
	Disk       int64   `json:"disk"`
	Processes  int     `json:"processes"`
	Throttled  float64 `json:"throttled_seconds"` // paused to hold its CPU share
	Wall       float64 `json:"wall_seconds"`
	Idle       float64 `json:"idle_seconds"` // since it last did something
	TaskTime   float64 `json:"task_time_seconds"`
}

// MeterEvent is the data of a "limits" event.
type MeterEvent struct {
	Limits LimitsView `json:"limits"`
	Usage  UsageView  `json:"usage"`
	// Final marks the last event of a run; Limit then names the limit that
	// stopped it ("" when none did).
	Final bool   `json:"final,omitempty"`
	Limit string `json:"limit,omitempty"`
}

func limitsView(l kernel.Limits) LimitsView {
	return LimitsView{CPU: l.CPU, Memory: l.Memory, Disk: l.Disk, Time: l.Time.Seconds(), Idle: l.Idle.Seconds(), TaskTime: l.TaskTime.Seconds()}
}

// meter publishes one run's usage against its limits.
type meter struct {
	every time.Duration
	bus   *Bus
	task  string
	lim   kernel.Limits
	usage func() kernel.LimitUsage

	stopped chan struct{}
	done    chan struct{}
	once    sync.Once

	mu       sync.Mutex
	lastCPU  float64
	lastWall time.Duration
	cores    float64
}

// startMeter publishes task's usage (read by usage) against lim until End.
func (d *Daemon) startMeter(taskID string, lim kernel.Limits, usage func() kernel.LimitUsage) *meter {
	m := &meter{every: d.cfg.MeterEvery, bus: d.Bus, task: taskID, lim: lim, usage: usage, stopped: make(chan struct{}), done: make(chan struct{})}
	go m.loop()
	return m
}

func (m *meter) loop() {
	defer close(m.done)
	tick := time.NewTicker(m.every)
	defer tick.Stop()
	for {
		select {
		case <-m.stopped:
			return
		case <-tick.C:
		}
		if m.bus.Listening() { // nobody watches: nothing to read
			m.bus.Publish("limits", m.task, MeterEvent{Limits: limitsView(m.lim), Usage: m.view()})
		}
	}
}

// view reads the usage now; CPU is the cores used since the last look.
func (m *meter) view() UsageView {
	u := m.usage()
	m.mu.Lock()
	defer m.mu.Unlock()
	if dw := u.Wall - m.lastWall; dw > 0 {
		m.cores = max(u.CPUSeconds-m.lastCPU, 0) / dw.Seconds()
		m.lastCPU, m.lastWall = u.CPUSeconds, u.Wall
	}
	return UsageView{CPU: m.cores, CPUSeconds: u.CPUSeconds, Memory: u.Memory, Disk: u.Disk, Processes: u.Processes,
		Throttled: u.Throttled.Seconds(), Wall: u.Wall.Seconds(), Idle: u.Idle.Seconds(), TaskTime: u.TaskTime.Seconds()}
}

// End stops the meter and publishes the run's last usage and the limit
// that stopped it. Safe on a nil meter (the run never started).
func (m *meter) End(limit string) {
	if m == nil {
		return
	}
	m.once.Do(func() {
		close(m.stopped)
		<-m.done
		m.bus.Publish("limits", m.task, MeterEvent{Limits: limitsView(m.lim), Usage: m.view(), Final: true, Limit: limit})
	})
}

// stopLimit names what stopped a run, from its supervisor's reason and its
// error: a limit (memory, disk, time, idle, task-time), "budget", or "".
func stopLimit(reason kernel.LimitReason, err error) string {
	switch {
	case reason != kernel.LimitReasonNone:
		return string(reason)
	case errors.Is(err, kernel.ErrTaskTimeSpent):
		return string(kernel.LimitReasonTaskTime)
	case errors.Is(err, kernel.ErrBudgetSpent), errors.Is(err, kernel.ErrBudgetCurrency):
		return "budget"
	case errors.Is(err, kernel.ErrLimitStopped):
		return "limit"
	}
	return ""
}
