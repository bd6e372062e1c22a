package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// Progress is where a running agent turn was, kept as it goes: the memory
// of an interrupted run, that a resumed one is told.
type Progress struct {
	Steps   []StepMark `json:"steps,omitempty"`   // the last MaxProgressSteps steps, oldest first
	Pending []Question `json:"pending,omitempty"` // permission questions asked and not answered yet
}

// StepMark is one step of a turn as the progress keeps it. Title is the
// agent's own words (shown to the person, never put in notes); Kind,
// Status and Changed are what Kule saw.
type StepMark struct {
	Title   string   `json:"title,omitempty"`
	Kind    string   `json:"kind,omitempty"`
	Status  string   `json:"status,omitempty"`
	Changed []string `json:"changed,omitempty"` // the effects Kule measured, as "modify a.go"
}

// MaxProgressSteps is how many of a turn's last steps its progress keeps.
const MaxProgressSteps = 8

// SetProgress records where running run id is. A run that has ended is
// left as it is: its progress is what it was when it ended.
func (s *Store) SetProgress(ctx context.Context, id int64, p Progress) error {
	if len(p.Steps) > MaxProgressSteps {
		p.Steps = p.Steps[len(p.Steps)-MaxProgressSteps:]
	}
	raw, _ := json.Marshal(p)
	_, err := s.db.ExecContext(ctx, `UPDATE runs SET progress=? WHERE id=? AND ended=0`, string(raw), id)
	return s.wrap(err)
}

// Resumable are the interrupted agent runs that wait to be resumed, newest
// first (of task only, when task is set): interrupted, not resumed, and
// with no later agent run on their task (which continued the task's
// conversation instead). Interrupted marks them first.
func (s *Store) Resumable(ctx context.Context, task string) ([]*Run, error) {
	// The conditions are literals so that the partial index runs_resumable
	// serves them: kule status asks on every call, over every run.
	q := `SELECT ` + runCols + ` FROM runs r WHERE ended_how = 'interrupted' AND kind = 'agent' AND resumed_by = 0
		AND NOT EXISTS (SELECT 1 FROM runs l WHERE l.task = r.task AND l.kind = 'agent' AND (l.started > r.started OR (l.started = r.started AND l.id > r.id)))`
	var args []any
	if task != "" {
		q += ` AND task = ?`
		args = append(args, task)
	}
	return s.queryRuns(ctx, q+` ORDER BY started DESC, id DESC LIMIT 100`, args...)
}

// Resumed records that run by resumes interrupted run id.
func (s *Store) Resumed(ctx context.Context, id, by int64) error {
	res, err := s.db.ExecContext(ctx, `UPDATE runs SET resumed_by=? WHERE id=? AND ended_how=?`, by, id, EndInterrupted)
	if err != nil {
		return s.wrap(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("run %d: %w (or it was not interrupted)", id, ErrNotFound)
	}
	return nil
}

// ResumeNote is what a run that resumes r is told, as Kule's data: that
// the turn was interrupted, what it was asked, the steps it had taken and
// the questions that waited. It says nothing of an untrusted run (its
// prompt came from someone who is not the operator): "" then. Only what
// Kule observed goes in: the operator's prompt, each step's kind, status
// and measured changes, each waiting question's kind — never a title or a
// command, which are the agent's words.
func ResumeNote(r *Run) string {
	if r == nil || r.Trust != Trusted || r.Kind != KindAgent {
		return ""
	}
	var b strings.Builder
	p := strings.TrimSpace(r.Prompt)
	if len(p) > 500 {
		p = strings.ToValidUTF8(p[:500], "") + "…"
	}
	fmt.Fprintf(&b, "the turn before this one on this task was interrupted before it ended (run %d, started %s; Kule stopped: a crash, a restart or a kill); it had been asked: %q",
		r.ID, r.Started.UTC().Format("2006-01-02 15:04 UTC"), p)
	if n := len(r.Progress.Steps); n > 0 {
		fmt.Fprintf(&b, "; its last %d steps, as Kule saw them:", n)
		sep := ""
		for i, st := range r.Progress.Steps {
			kind, status := st.Kind, st.Status
			if kind == "" {
				kind = "other"
			}
			if status == "" || status == "in_progress" || status == "pending" {
				status = "unfinished"
			}
			fmt.Fprintf(&b, "%s %d) %s, %s", sep, i+1, kind, status)
			sep = ","
			if len(st.Changed) > 0 {
				ch := st.Changed
				if len(ch) > 5 {
					ch = append(ch[:5:5], fmt.Sprintf("and %d more", len(st.Changed)-5))
				}
				fmt.Fprintf(&b, " (changed: %s)", strings.Join(ch, ", "))
			}
		}
	}
	if n := len(r.Progress.Pending); n > 0 {
		kinds := make([]string, 0, n)
		for _, q := range r.Progress.Pending {
			k := q.Kind
			if k == "" {
				k = "other"
			}
			kinds = append(kinds, k)
		}
		fmt.Fprintf(&b, "; %d permission questions were waiting for an answer and were never answered (kinds: %s): ask again if you still need them", n, strings.Join(kinds, ", "))
	}
	b.WriteString("; its changes so far are in the task's copy")
	return b.String()
}
