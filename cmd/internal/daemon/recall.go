package daemon

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/kulehq/kule/kernel"
)

// Recall before a run: what `kule run` says before it starts an agent —
// the failures on the folder that match the prompt with the fixes that
// followed, and a budget from the cost of similar runs — asked for by the
// page while the person types (POST /api/tasks/{id}/recall), and the same
// notes given to the agent when the app's prompt runs (RunAgent). Memory
// is advisory: an error is said and the run goes on without it.

// RecallRequest is the prompt the person is typing.
type RecallRequest struct {
	Prompt string `json:"prompt"`
}

// RecallView is what memory recalls before a run of a prompt.
type RecallView struct {
	// Notes go to the agent after the prompt, as Kule's data.
	Notes []string `json:"notes"`
	// Budget is the proposal in words ("" when no similar run had a cost).
	Budget   string  `json:"budget,omitempty"`
	Proposed float64 `json:"proposed,omitempty"`
	Currency string  `json:"currency,omitempty"`
	Similar  int     `json:"similar,omitempty"`
	// Cap is the task's budget now ("" when it has none).
	Cap string `json:"cap,omitempty"`
	// Error says why memory could not be read; the run goes on without it.
	Error string `json:"error,omitempty"`
}

// recallFor: POST /api/tasks/{id}/recall. It never fails for want of a
// memory: the view says why there is nothing.
func (d *Daemon) recallFor(w http.ResponseWriter, r *http.Request, t *kernel.Task) {
	var in RecallRequest
	if err := readBody(r, &in); err != nil {
		fail(w, err)
		return
	}
	v := RecallView{Notes: []string{}}
	if c, err := kernel.TaskCap(t.Paths.Dir); err == nil && c != nil {
		v.Cap = c.String()
	}
	if strings.TrimSpace(in.Prompt) == "" {
		writeJSON(w, http.StatusOK, v)
		return
	}
	rec, err := d.k.Recall(r.Context(), t, in.Prompt)
	if err != nil {
		v.Error = "memory: " + err.Error() + " (the run goes on without recall)"
		writeJSON(w, http.StatusOK, v)
		return
	}
	for _, n := range rec.Notes {
		v.Notes = append(v.Notes, n.Text)
	}
	v.Budget, v.Proposed, v.Currency, v.Similar = rec.BudgetLine(), rec.Proposed, rec.Currency, rec.Similar
	writeJSON(w, http.StatusOK, v)
}

// acceptRecalledBudget: POST /api/tasks/{id}/recall/budget sets the budget
// memory proposes for the prompt as the task's cap (what its runs spent so
// far plus the proposal), as kule run --accept-budget does.
func (d *Daemon) acceptRecalledBudget(w http.ResponseWriter, r *http.Request, t *kernel.Task) {
	var in RecallRequest
	if err := readBody(r, &in); err != nil {
		fail(w, err)
		return
	}
	rec, err := d.k.Recall(r.Context(), t, in.Prompt)
	if err != nil {
		fail(w, fmt.Errorf("budget: memory: %w; no budget was set", err))
		return
	}
	c, before, err := d.k.AcceptBudget(t, rec)
	if err != nil {
		fail(w, fmt.Errorf("%w: %v; no budget was set", errBadRequest, err))
		return
	}
	said := fmt.Sprintf("The task's budget is now %s.", c)
	if before != nil {
		said = fmt.Sprintf("The task's budget is now %s (it was %s).", c, before)
	}
	d.Bus.Publish("task", t.ID, map[string]any{"action": "budget"})
	writeJSON(w, http.StatusOK, map[string]any{"cap": c.String(), "said": said})
}

// recallNotes are the notes a run of the app's prompt is given, after the
// notes it already has (a resumed run's): only for the operator's own
// prompts, as kule run gives them; a chat user's prompt and a resumed turn
// get none of the rest of memory.
func (d *Daemon) recallNotes(ctx context.Context, t *kernel.Task, in AgentRequest, notes string) string {
	if in.NoRecall || in.Source != "" || in.Resumes != nil {
		return notes
	}
	rec, err := d.k.Recall(ctx, t, in.Prompt)
	if err != nil {
		d.log.Warn("memory: no recall before the run", "task", t.ID, "error", err.Error())
		return notes
	}
	text := rec.Text()
	if text == "" {
		return notes
	}
	if notes == "" {
		return text
	}
	return text + strings.TrimPrefix(notes, kernel.MemoryNotesHeader+"\n")
}
