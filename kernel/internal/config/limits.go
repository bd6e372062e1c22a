package config

import "github.com/kulehq/kule/kernel/internal/limits"

// LimitsConfig is the [limits] section: what every task's runs may take,
// unless a task sets a field of its own.
type LimitsConfig = limits.Limits
