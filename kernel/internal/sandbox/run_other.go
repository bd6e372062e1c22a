//go:build !linux && !darwin

package sandbox

import (
	"context"
	"fmt"

	"github.com/kulehq/kule/kernel/internal/runner"
)

// Run refuses: this system has no sandbox Kule knows.
func (s *Sandbox) Run(ctx context.Context, spec runner.Spec) (int, error) {
	return -1, fmt.Errorf("%w: no sandbox for this operating system; nothing ran", ErrUnavailable)
}

// Probe reports that nothing is available.
func Probe() Availability { return Availability{UserNSWhy: "unsupported operating system"} }

// HelperMain has no work here.
func HelperMain() int { return usage() }
