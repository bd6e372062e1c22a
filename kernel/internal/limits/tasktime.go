package limits

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/kulehq/kule/kernel/internal/atomicfile"
)

// TaskTimeName is the file in a task's directory that keeps the wall time
// of all its runs.
const TaskTimeName = "task-time.json"

// TaskTimeFile is where the task in taskDir keeps its runs' time.
func TaskTimeFile(taskDir string) string { return filepath.Join(taskDir, TaskTimeName) }

type taskTimeRecord struct {
	// Used is the wall time of all of the task's runs, in nanoseconds so
	// the number round-trips exactly.
	Used    time.Duration `json:"used_ns"`
	Updated time.Time     `json:"updated"`
}

// LoadTaskTime reads what the task's runs have used; a missing file is
// none. A damaged file is an error: a run must not start on a guess.
func LoadTaskTime(file string) (time.Duration, error) {
	b, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("limits: task time: %w", err)
	}
	var r taskTimeRecord
	if err := json.Unmarshal(b, &r); err != nil || r.Used < 0 {
		return 0, fmt.Errorf("limits: task time: %s is damaged (remove it to count the task's time from zero): %v", file, err)
	}
	return r.Used, nil
}

// AddTaskTime adds d to what the task's runs have used, atomically. The
// task's lock serialises runs, so read-add-write is safe.
func AddTaskTime(file string, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	used, err := LoadTaskTime(file)
	if err != nil {
		return err
	}
	total := used + d
	if total < used {
		total = time.Duration(math.MaxInt64) // a damaged count saturates, never wraps
	}
	b, err := json.Marshal(taskTimeRecord{Used: total, Updated: time.Now().UTC()})
	if err != nil {
		return err
	}
	// The file is synced before it replaces the old, so a crash leaves the
	// count whole (a damaged count refuses every run until a person removes
	// it); the directory is not, which at worst loses this one write — the
	// seconds of the run a power cut ended anyway — and spares every run's
	// end a second sync.
	if err := atomicfile.WriteWith(file, atomicfile.Options{Perm: 0o600, NoDirSync: true}, func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	}); err != nil {
		return fmt.Errorf("limits: task time: %w", err)
	}
	return nil
}

// CheckTaskTime refuses a run when the task's runs have used their time
// (nil when there is no task-time limit or time is left).
func CheckTaskTime(lim Limits, file string) error {
	if lim.TaskTime <= 0 {
		return nil
	}
	used, err := LoadTaskTime(file)
	if err != nil {
		return err
	}
	if used >= lim.TaskTime {
		return fmt.Errorf("%w: its runs have taken %s of the %s they may take together; nothing was started (raise it with kule limits TASK --task-time, or 0 removes it)",
			ErrTaskTimeSpent, used.Round(time.Second), lim.TaskTime)
	}
	return nil
}
