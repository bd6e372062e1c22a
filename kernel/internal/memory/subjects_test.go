package memory

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestSubjectsKeptPerRun: a connection judged while a run goes on is kept
// on that run, with its host:port; a home file applied afterwards is kept
// on the newest run that ended; counts add up per rule and subject, two
// hosts stay two rows, an undo marks the run that approved the file, and
// forgetting the run takes its subjects with it.
func TestSubjectsKeptPerRun(t *testing.T) {
	s := openT(t)
	first, _ := runT(t, s, Start{Task: "t1", Folder: "/f", Kind: KindExec, Prompt: "make"}, End{Exit: exit(0)})
	running, err := s.StartRun(ctx, Start{Task: "t1", Folder: "/f", Kind: KindExec, Prompt: "curl"})
	if err != nil {
		t.Fatal(err)
	}
	api := SubjectUse{Rule: "unknown-hosts", Kind: SubjectHost, Subject: "api.example.com:443", Asked: 1, Approved: 1}
	for range 2 {
		if id, err := s.AddTaskSubject(ctx, "t1", true, api); err != nil || id != running {
			t.Fatalf("kept on run %d (want the running %d): %v", id, running, err)
		}
	}
	if _, err := s.AddTaskSubject(ctx, "t1", true, SubjectUse{Rule: "unknown-hosts", Kind: SubjectHost, Subject: "evil.example:443", Asked: 1}); err != nil {
		t.Fatal(err)
	}
	home := SubjectUse{Rule: "home-writes", Kind: SubjectHome, Subject: ".bashrc", Asked: 1, Approved: 1}
	if id, err := s.AddTaskSubject(ctx, "t1", false, home); err != nil || id != first {
		t.Fatalf("home file kept on run %d (want the ended %d): %v", id, first, err)
	}
	if id, err := s.AddTaskSubject(ctx, "nobody", false, home); err != nil || id != 0 {
		t.Fatalf("a task without runs: %d %v", id, err)
	}
	r, err := s.Run(ctx, running)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Subjects) != 2 || r.Subjects[0].Subject != "api.example.com:443" || r.Subjects[0].Asked != 2 || r.Subjects[0].Approved != 2 ||
		r.Subjects[1].Subject != "evil.example:443" || r.Subjects[1].Approved != 0 || r.Subjects[0].At.IsZero() {
		t.Fatalf("subjects %+v", r.Subjects)
	}
	if id, err := s.UndoneSubject(ctx, "t1", SubjectHome, ".bashrc"); err != nil || id != first {
		t.Fatalf("undone on %d: %v", id, err)
	}
	if id, _ := s.UndoneSubject(ctx, "t1", SubjectHome, ".profile"); id != 0 {
		t.Fatalf("a file no run approved was marked on run %d", id)
	}
	runs, err := s.Runs(ctx, Filter{Task: "t1"})
	if err != nil || len(runs) != 2 {
		t.Fatalf("%v %d", err, len(runs))
	}
	old := runs[1]
	if old.ID != first || len(old.Subjects) != 1 || old.Subjects[0].Undone != 1 || old.Subjects[0].Kind != SubjectHome {
		t.Fatalf("the first run's subjects %+v", old.Subjects)
	}
	if _, err := s.Forget(ctx, running); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.db.QueryRow(`SELECT count(*) FROM subjects WHERE run_id = ?`, running).Scan(&n); err != nil || n != 0 {
		t.Fatalf("a forgotten run's subjects left: %d %v", n, err)
	}
}

// TestSubjectRefused: what is not a name is not kept.
func TestSubjectRefused(t *testing.T) {
	s := openT(t)
	id, _ := runT(t, s, Start{Task: "t1", Folder: "/f", Kind: KindExec, Prompt: "make"}, End{Exit: exit(0)})
	for _, u := range []SubjectUse{
		{Rule: "", Kind: SubjectHost, Subject: "a:1"},
		{Rule: "r", Kind: "path", Subject: "a"},
		{Rule: "r", Kind: SubjectHome, Subject: ""},
		{Rule: "r", Kind: SubjectHome, Subject: strings.Repeat("x", MaxSubject+1)},
		{Rule: "r", Kind: SubjectHome, Subject: "a\nb"},
		{Rule: "r", Kind: SubjectHome, Subject: "\xff"},
		{Rule: "r", Kind: SubjectHome, Subject: "a", Asked: -1},
	} {
		if err := s.AddSubject(ctx, id, u); !errors.Is(err, ErrSubject) {
			t.Errorf("%+v: %v", u, err)
		}
	}
	if err := s.AddSubject(ctx, id+100, SubjectUse{Rule: "r", Kind: SubjectHome, Subject: "a"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("no such run: %v", err)
	}
}

// TestMigrateSubjectsFromVersion4: a database of the version before, with
// runs in it, keeps them, and they take subjects afterwards.
func TestMigrateSubjectsFromVersion4(t *testing.T) {
	path := filepath.Join(t.TempDir(), File)
	old, err := open(path, 4)
	if err != nil {
		t.Fatal(err)
	}
	// As version 4 wrote it: a run, ended, committed, with its rules.
	res, err := old.db.Exec(`INSERT INTO runs(task, folder, kind, prompt, started, ended, ended_how, exit_code, rules, outcome, outcome_at, outcome_ref, approved_by, progress)
		VALUES('t', '/f', 'exec', 'curl api', 1000, 2000, 'done', 0, '{"ci":{"asked":1}}', 'committed', 3000, 3, 'cli', '{}')`)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := res.LastInsertId()
	if _, err := old.db.Exec(`SELECT 1 FROM subjects`); err == nil {
		t.Fatal("version 4 has the subjects table already")
	}
	old.Close()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := s.Run(ctx, id)
	if err != nil || r.Outcome != OutcomeCommitted || r.Rules["ci"].Asked != 1 || len(r.Subjects) != 0 {
		t.Fatalf("the old run %+v %v", r, err)
	}
	if err := s.AddSubject(ctx, id, SubjectUse{Rule: "unknown-hosts", Kind: SubjectHost, Subject: "api.example.com:443", Approved: 1}); err != nil {
		t.Fatal(err)
	}
	if r, _ := s.Run(ctx, id); len(r.Subjects) != 1 || r.Subjects[0].Approved != 1 {
		t.Fatalf("subjects after the migration %+v", r.Subjects)
	}
}
