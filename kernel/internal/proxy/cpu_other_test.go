//go:build !unix

package proxy

import "time"

// cpuTime is not measured here; the benchmark then reports no CPU ratios.
func cpuTime() time.Duration { return 0 }
