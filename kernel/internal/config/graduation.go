package config

// GraduationConfig is [graduation]: the thresholds a category must meet
// before Kule proposes that it ask no more (package graduation). Zero
// values take the defaults: 5 successes, in 3 tasks, over 7 days, each
// commit kept a day.
type GraduationConfig struct {
	MinSuccesses     int `toml:"min_successes,omitempty"`
	MinDistinctTasks int `toml:"min_distinct_tasks,omitempty"`
	CooldownDays     int `toml:"cooldown_days,omitempty"`
	KeptDays         int `toml:"kept_days,omitempty"`
}
