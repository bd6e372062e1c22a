package kernel

import "github.com/kulehq/kule/kernel/internal/task"

// SyncCopyStartsForTest runs fn each time the copy is made to follow the
// folder, just before it is touched: a test plants a link there as a command
// running beside a rollback would.
func SyncCopyStartsForTest(fn func(*task.Task)) func() {
	syncCopyStarts = fn
	return func() { syncCopyStarts = nil }
}

// HomeRecordInLayerForTest keeps home layers' records inside the layer, as
// the task could rewrite them, until the test ends.
func HomeRecordInLayerForTest(tb interface{ Cleanup(func()) }) {
	homeRecordInLayer = true
	tb.Cleanup(func() { homeRecordInLayer = false })
}
