package daemon

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/kulehq/kule/kernel"
)

// Interrupted runs: an agent's turn that Kule stopped in the middle of (the
// daemon restarted, the machine rebooted, a kill -9) is found when the
// daemon starts and listed by GET /api/interrupted, which the app shows
// under Needs you and on the task's row with a Resume action; POST
// /api/tasks/{id}/resume resumes it. Nothing resumes on its own: an
// agent's turn spends money and asks questions, and after a reboot the
// person may not be there to see either — so the app asks.

// resumePrompt is what a resumed turn is sent; the notes after it say
// where the interrupted turn was.
const resumePrompt = "Kule stopped before your last turn on this task ended. Continue that work where you left off, and say what you did."

// InterruptedView is one interrupted run as the app lists it.
type InterruptedView struct {
	Run          int64          `json:"run"`
	Task         string         `json:"task"`
	Folder       string         `json:"folder"`
	Agent        string         `json:"agent"`
	Session      string         `json:"session,omitempty"`
	Conversation string         `json:"conversation,omitempty"`
	Prompt       string         `json:"prompt"`
	Untrusted    bool           `json:"untrusted,omitempty"` // its prompt came from someone who is not the operator
	Started      time.Time      `json:"started"`
	Steps        []StepMarkView `json:"steps,omitempty"`
	Waiting      []string       `json:"waiting,omitempty"` // the permission questions that waited, as the agent titled them
}

// StepMarkView is one of an interrupted run's last steps.
type StepMarkView struct {
	Title   string   `json:"title"`
	Kind    string   `json:"kind,omitempty"`
	Status  string   `json:"status,omitempty"`
	Changed []string `json:"changed,omitempty"`
}

// findInterrupted marks the runs the memory holds as running that nobody
// holds as interrupted, as the daemon starts, and logs them. Memory is
// advisory: a memory that cannot be read is a warning.
func (d *Daemon) findInterrupted(ctx context.Context) {
	runs, err := d.k.InterruptedRuns(ctx, "")
	if err != nil {
		d.log.Warn("memory: interrupted runs not looked for", "error", err.Error())
		return
	}
	for _, r := range runs {
		d.log.Info("run interrupted before it ended", "run", r.ID, "task", r.Task, "kind", r.Kind, "agent", r.Agent)
	}
}

func interruptedView(r *kernel.MemoryRecord) InterruptedView {
	v := InterruptedView{Run: r.ID, Task: r.Task, Folder: r.Folder, Agent: r.Agent, Session: r.Session, Conversation: r.Conversation,
		Prompt: r.Prompt, Untrusted: r.Trust == kernel.MemoryUntrusted, Started: r.Started}
	for _, s := range r.Progress.Steps {
		v.Steps = append(v.Steps, StepMarkView(s))
	}
	for _, q := range r.Progress.Pending {
		v.Waiting = append(v.Waiting, q.Title)
	}
	return v
}

// listInterrupted: GET /api/interrupted, the interrupted agent runs that
// wait to be resumed, newest first.
func (d *Daemon) listInterrupted(w http.ResponseWriter, r *http.Request) {
	runs, err := d.k.ResumableRuns(r.Context(), "")
	if err != nil {
		// Memory is advisory: the app shows none, and the log says why.
		d.log.Warn("memory: interrupted runs not listed", "error", err.Error())
		writeJSON(w, 200, []InterruptedView{})
		return
	}
	out := []InterruptedView{}
	for _, run := range runs {
		out = append(out, interruptedView(run))
	}
	writeJSON(w, 200, out)
}

// ResumeRequest names the interrupted run to resume (0: the task's newest).
type ResumeRequest struct {
	Run int64 `json:"run"`
}

// resumeTask: POST /api/tasks/{id}/resume resumes the task's interrupted
// run: the same agent, its session continued where the agent can, and the
// notes saying what memory kept of where it was. It returns when the turn
// has ended, as POST /agent does.
func (d *Daemon) resumeTask(w http.ResponseWriter, r *http.Request, t *kernel.Task) {
	var in ResumeRequest
	if err := readBody(r, &in); err != nil {
		fail(w, err)
		return
	}
	runs, err := d.k.ResumableRuns(r.Context(), t.ID)
	if err != nil {
		fail(w, fmt.Errorf("resume: %w", err))
		return
	}
	var target *kernel.MemoryRecord
	for _, run := range runs {
		if in.Run == 0 || run.ID == in.Run {
			target = run
			break
		}
	}
	if target == nil {
		fail(w, fmt.Errorf("%w: resume: task %s has no interrupted run that waits", errBadRequest, t.ID))
		return
	}
	turn, err := d.RunAgent(r.Context(), t, AgentRequest{Agent: target.Agent, Prompt: resumePrompt, Resumes: target})
	if err != nil && turn == nil {
		fail(w, err)
		return
	}
	writeJSON(w, 200, turn)
}

// resumeOptions are what a resumed run adds to its agent's options: its
// session continued, its conversation's name, the notes and the record it
// resumes.
func (d *Daemon) resumeOptions(t *kernel.Task, in AgentRequest) (notes, conversation string, resumes int64) {
	r := in.Resumes
	if r == nil {
		return "", "", 0
	}
	if r.Session != "" {
		if err := d.k.UseSession(t, r.Agent, r.Session); err != nil {
			d.log.Warn("resume: the session is not continued", "task", t.ID, "error", err.Error())
		}
	}
	if note := kernel.MemoryResumeNote(r); note != "" {
		notes = kernel.MemoryNotesHeader + "\n- " + note + "\n"
	}
	return notes, r.Conversation, r.ID
}
