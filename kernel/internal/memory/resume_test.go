package memory

import (
	"strings"
	"testing"
)

// TestPartlyCommitted: a commit that holds some of the runs' paths back
// says so (committed N of M), and a later commit of the rest makes the
// runs committed; a commit of everything is committed at once.
func TestPartlyCommitted(t *testing.T) {
	s := openT(t)
	a, _ := runT(t, s, Start{Task: "t1", Folder: "/f", Kind: KindAgent, Prompt: "port"}, End{})
	if err := s.Committed(ctx, "t1", Commit{Checkpoint: 1, By: "cli", Applied: 3, Of: 5}); err != nil {
		t.Fatal(err)
	}
	r, _ := s.Run(ctx, a)
	if r.Outcome != OutcomePartly || r.OutcomePaths != 3 || r.OutcomeOf != 5 {
		t.Fatalf("a commit of 3 of 5 paths: %q %d of %d", r.Outcome, r.OutcomePaths, r.OutcomeOf)
	}
	b, _ := runT(t, s, Start{Task: "t1", Folder: "/f", Kind: KindExec, Prompt: "make"}, End{Exit: exit(0)})
	if err := s.Committed(ctx, "t1", Commit{Checkpoint: 2, By: "app", Applied: 2, Of: 2}); err != nil {
		t.Fatal(err)
	}
	ra, _ := s.Run(ctx, a)
	rb, _ := s.Run(ctx, b)
	if ra.Outcome != OutcomeCommitted || ra.OutcomePaths != 5 || ra.OutcomeRef != 2 {
		t.Fatalf("the rest committed later: %q %d of %d at %d", ra.Outcome, ra.OutcomePaths, ra.OutcomeOf, ra.OutcomeRef)
	}
	if rb.Outcome != OutcomeCommitted || rb.OutcomePaths != 2 || rb.OutcomeOf != 2 {
		t.Fatalf("a whole commit: %q %d of %d", rb.Outcome, rb.OutcomePaths, rb.OutcomeOf)
	}
	// Undoing a partial commit undoes its runs.
	c, _ := runT(t, s, Start{Task: "t2", Folder: "/f", Kind: KindExec, Prompt: "make"}, End{Exit: exit(0)})
	if err := s.Committed(ctx, "t2", Commit{Checkpoint: 9, Applied: 1, Of: 4}); err != nil {
		t.Fatal(err)
	}
	if fs, err := s.Undone(ctx, "t2", 9); err != nil || len(fs) != 1 {
		t.Fatalf("undo of a partial commit: %v %v", fs, err)
	}
	if rc, _ := s.Run(ctx, c); rc.Outcome != OutcomeUndone {
		t.Fatalf("after the undo: %q", rc.Outcome)
	}
}

// TestResumable: a run interrupted with progress kept waits to be resumed
// until a run resumes it, or a later agent run on its task continues the
// conversation; its note carries what Kule saw, never the agent's words.
func TestResumable(t *testing.T) {
	s := openT(t)
	id, err := s.StartRun(ctx, Start{Task: "t1", Folder: "/f", Kind: KindAgent, Agent: "claude", Session: "s1", Prompt: "port the parser"})
	if err != nil {
		t.Fatal(err)
	}
	p := Progress{Steps: []StepMark{{Title: "AGENT WORDS", Kind: "edit", Status: "completed", Changed: []string{"modify parse.go"}}, {Title: "AGENT WORDS", Kind: "execute", Status: "in_progress"}},
		Pending: []Question{{Title: "AGENT WORDS", Kind: "execute"}}}
	if err := s.SetProgress(ctx, id, p); err != nil {
		t.Fatal(err)
	}
	if rs, err := s.Resumable(ctx, ""); err != nil || len(rs) != 0 {
		t.Fatalf("a running run is resumable: %v %v", rs, err)
	}
	if _, err := s.Interrupted(ctx, nil); err != nil {
		t.Fatal(err)
	}
	rs, err := s.Resumable(ctx, "t1")
	if err != nil || len(rs) != 1 || rs[0].ID != id || len(rs[0].Progress.Steps) != 2 || len(rs[0].Progress.Pending) != 1 {
		t.Fatalf("resumable: %+v %v", rs, err)
	}
	note := ResumeNote(rs[0])
	for _, want := range []string{`it had been asked: "port the parser"`, "1) edit, completed (changed: modify parse.go), 2) execute, unfinished", "1 permission questions were waiting"} {
		if !strings.Contains(note, want) {
			t.Errorf("the note lacks %q: %s", want, note)
		}
	}
	if strings.Contains(note, "AGENT WORDS") {
		t.Errorf("the agent's words reached the note: %s", note)
	}
	// The guard: an untrusted run (a chat user's prompt) gives no note;
	// the same run trusted does.
	un := *rs[0]
	un.Trust = Untrusted
	if got := ResumeNote(&un); got != "" {
		t.Errorf("an untrusted run's note: %s", got)
	}
	// Progress after the end is not written.
	if err := s.SetProgress(ctx, id, Progress{}); err != nil {
		t.Fatal(err)
	}
	if r, _ := s.Run(ctx, id); len(r.Progress.Steps) != 2 {
		t.Fatalf("an ended run's progress changed: %+v", r.Progress)
	}
	by, _ := runT(t, s, Start{Task: "t1", Folder: "/f", Kind: KindAgent, Agent: "claude", Prompt: "continue"}, End{})
	if err := s.Resumed(ctx, id, by); err != nil {
		t.Fatal(err)
	}
	if rs, _ := s.Resumable(ctx, ""); len(rs) != 0 {
		t.Fatalf("a resumed run still waits: %+v", rs)
	}
	if r, _ := s.Run(ctx, id); r.ResumedBy != by {
		t.Fatalf("resumed by %d, want %d", r.ResumedBy, by)
	}
	if err := s.Resumed(ctx, by, id); err == nil {
		t.Fatal("a run that was not interrupted was marked resumed")
	}
	// A later agent run on the task (not a resume) supersedes it too.
	x, _ := s.StartRun(ctx, Start{Task: "t3", Folder: "/f", Kind: KindAgent, Agent: "claude", Prompt: "a"})
	if _, err := s.Interrupted(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if rs, _ := s.Resumable(ctx, "t3"); len(rs) != 1 || rs[0].ID != x {
		t.Fatalf("t3: %+v", rs)
	}
	runT(t, s, Start{Task: "t3", Folder: "/f", Kind: KindExec, Prompt: "make"}, End{Exit: exit(0)})
	if rs, _ := s.Resumable(ctx, "t3"); len(rs) != 1 {
		t.Fatalf("a command after it superseded the interrupted turn: %+v", rs)
	}
	runT(t, s, Start{Task: "t3", Folder: "/f", Kind: KindAgent, Agent: "claude", Prompt: "b"}, End{})
	if rs, _ := s.Resumable(ctx, "t3"); len(rs) != 0 {
		t.Fatalf("a later turn did not supersede it: %+v", rs)
	}
}

// TestResumableUsesItsIndex: kule status asks for the resumable runs on
// every call; the question reads the partial index, never every run.
func TestResumableUsesItsIndex(t *testing.T) {
	s := openT(t)
	rows, err := s.db.Query(`EXPLAIN QUERY PLAN SELECT id FROM runs r WHERE ended_how = 'interrupted' AND kind = 'agent' AND resumed_by = 0 AND task = ?`, "t1")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan strings.Builder
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(detail + "\n")
	}
	if !strings.Contains(plan.String(), "runs_resumable") {
		t.Fatalf("the plan reads no partial index:\n%s", plan.String())
	}
}
