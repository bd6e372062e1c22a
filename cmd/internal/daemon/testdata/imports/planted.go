// Package planted breaks the daemon's import rule on purpose:
// imports_test.go must find both imports below.
package planted

import (
	"fmt"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/internal/atomicfile"
	"github.com/kulehq/kule/kernel/task"
)

var _ = fmt.Sprint(kernel.Task{}, task.Task{}, atomicfile.Write)
