package main

import (
	"context"
	"fmt"
	"io"

	"github.com/kulehq/kule/kernel"
)

// resumePrompt is what kule run --resume sends when no prompt is given: the
// notes that follow it say where the interrupted turn was.
const resumePrompt = "Kule stopped before your last turn on this task ended. Continue that work where you left off, and say what you did."

// resumeTarget is the task's interrupted run that kule run --resume
// resumes (its newest that waits), and the agent that runs: the run's own,
// unless --agent names the same one. session is --session, which must be
// the run's conversation when given.
func resumeTarget(ctx context.Context, k *kernel.Kernel, t *kernel.Task, agent, session string) (*kernel.MemoryRecord, string, error) {
	runs, err := k.ResumableRuns(ctx, t.ID)
	if err != nil {
		return nil, "", fmt.Errorf("run: --resume: %w (nothing was started)", err)
	}
	if len(runs) == 0 {
		return nil, "", fmt.Errorf("run: --resume: task %s has no interrupted run that waits (kule memory list --task %s lists its runs; nothing was started)", t.ID, t.ID)
	}
	r := runs[0]
	if agent != "" && agent != r.Agent {
		return nil, "", fmt.Errorf("run: --resume: the interrupted run %d is %s's, not %s's (leave --agent out, or name %s; nothing was started)", r.ID, r.Agent, agent, r.Agent)
	}
	if session != "" && session != r.Conversation {
		return nil, "", fmt.Errorf("run: --resume: the interrupted run %d is in conversation %q, not %q (nothing was started)", r.ID, r.Conversation, session)
	}
	return r, r.Agent, nil
}

// resumeSession makes the run continue r's session and says so; it
// returns the conversation's name for the new run's record.
func resumeSession(w io.Writer, k *kernel.Kernel, t *kernel.Task, r *kernel.MemoryRecord) string {
	if r.Session == "" {
		fmt.Fprintln(w, safeLine(fmt.Sprintf("resuming run %d (%s, started %s): it had no session yet, so a new conversation starts; the notes say what it was asked",
			r.ID, r.Agent, r.Started.Local().Format("2006-01-02 15:04"))))
		return r.Conversation
	}
	if err := k.UseSession(t, r.Agent, r.Session); err != nil {
		fmt.Fprintln(w, "run: "+safeLine(err.Error())+" (the task's last conversation is continued instead)")
	}
	fmt.Fprintln(w, safeLine(fmt.Sprintf("resuming run %d (%s, started %s): continuing its session %s where the agent can (session/load or session/resume)",
		r.ID, r.Agent, r.Started.Local().Format("2006-01-02 15:04"), r.Session)))
	return r.Conversation
}
