package memory

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// The kinds of subject a rule's use is kept for: a rule such as
// unknown-hosts or home-writes, lifted for a whole folder, would let
// anything through, so what it did is kept per host or per home file.
const (
	SubjectHost = "host" // a connection's host:port
	SubjectHome = "home" // a file of the person's home, relative to it
)

// MaxSubject is the longest subject name kept, in bytes.
const MaxSubject = 1024

// ErrSubject: a subject that cannot be kept (an unknown kind, an empty or
// overlong name, a name that is not text).
var ErrSubject = errors.New("memory: a subject is a rule, a kind (host or home) and a name of text")

// SubjectUse is what one rule did to one subject in a run. Only names are
// kept: the host and port, or the home file's path; never what was sent
// or written.
type SubjectUse struct {
	Rule    string `json:"rule"`
	Kind    string `json:"kind"`    // SubjectHost or SubjectHome
	Subject string `json:"subject"` // host:port, or the path relative to the home
	// Asked counts the times the rule asked about it; Approved, of those,
	// the ones a person allowed (an answer to the question, a home file
	// the person applied, a host they named for the run).
	Asked    int `json:"asked,omitempty"`
	Approved int `json:"approved,omitempty"`
	// Remembered counts the times a remembered (or graduated) rule let it
	// through without asking.
	Remembered int `json:"remembered,omitempty"`
	// Undone counts the times the person took the change back (a home
	// file's apply undone).
	Undone int       `json:"undone,omitempty"`
	At     time.Time `json:"at,omitzero"` // the last change of the counts
}

func (u SubjectUse) check() error {
	if u.Rule == "" || (u.Kind != SubjectHost && u.Kind != SubjectHome) || u.Subject == "" || len(u.Subject) > MaxSubject ||
		len(u.Rule) > MaxSubject || !utf8.ValidString(u.Subject) || strings.ContainsAny(u.Subject, "\x00\n\r") {
		return fmt.Errorf("%w (got %q %q %q)", ErrSubject, u.Rule, u.Kind, Tail(u.Subject, 80))
	}
	if u.Asked < 0 || u.Approved < 0 || u.Remembered < 0 || u.Undone < 0 {
		return fmt.Errorf("%w (a count below zero)", ErrSubject)
	}
	return nil
}

// AddSubject adds u's counts to what run id keeps for its rule and subject.
func (s *Store) AddSubject(ctx context.Context, id int64, u SubjectUse) error {
	if err := u.check(); err != nil {
		return err
	}
	return s.tx(ctx, func(tx *sql.Tx) error { return s.addSubject(ctx, tx, id, u) })
}

func (s *Store) addSubject(ctx context.Context, tx *sql.Tx, id int64, u SubjectUse) error {
	var one int
	if err := tx.QueryRowContext(ctx, `SELECT 1 FROM runs WHERE id = ?`, id).Scan(&one); errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("run %d: %w", id, ErrNotFound)
	} else if err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO subjects(run_id, rule, kind, subject, asked, approved, remembered, undone, at) VALUES(?,?,?,?,?,?,?,?,?)
		ON CONFLICT(run_id, rule, kind, subject) DO UPDATE SET asked = asked + excluded.asked, approved = approved + excluded.approved,
		remembered = remembered + excluded.remembered, undone = undone + excluded.undone, at = excluded.at`,
		id, u.Rule, u.Kind, u.Subject, u.Asked, u.Approved, u.Remembered, u.Undone, ms(s.now()))
	return err
}

// AddTaskSubject adds u's counts to a run of task: the one still running
// when running is set (a connection is judged while its run goes on), else
// the newest that ended (a home file is applied after the run that changed
// it). It returns the run's id, 0 when the task has no such run.
func (s *Store) AddTaskSubject(ctx context.Context, task string, running bool, u SubjectUse) (int64, error) {
	if err := u.check(); err != nil {
		return 0, err
	}
	where := `ended != 0`
	if running {
		where = `ended = 0`
	}
	var id int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `SELECT id FROM runs WHERE task = ? AND `+where+` ORDER BY started DESC, id DESC LIMIT 1`, task).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		return s.addSubject(ctx, tx, id, u)
	})
	return id, err
}

// UndoneSubject records that the person took back the change to subject
// that the newest of task's runs approved for it had (a home file's apply
// undone): that run's category for the subject has failed. It returns the
// run's id, 0 when no run of the task approved a change to it.
func (s *Store) UndoneSubject(ctx context.Context, task, kind, subject string) (int64, error) {
	var id int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `SELECT r.id FROM runs r JOIN subjects x ON x.run_id = r.id
			WHERE r.task = ? AND x.kind = ? AND x.subject = ? AND (x.approved > 0 OR x.remembered > 0)
			ORDER BY r.started DESC, r.id DESC LIMIT 1`, task, kind, subject).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			id = 0
			return nil
		}
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE subjects SET undone = undone + 1, at = ? WHERE run_id = ? AND kind = ? AND subject = ? AND (approved > 0 OR remembered > 0)`,
			ms(s.now()), id, kind, subject)
		return err
	})
	return id, err
}

// attachSubjects reads the subjects of runs into them, in one query.
func attachSubjects(ctx context.Context, q querier, runs []*Run) error {
	if len(runs) == 0 {
		return nil
	}
	byID := make(map[int64]*Run, len(runs))
	ids := make([]int64, 0, len(runs))
	for _, r := range runs {
		byID[r.ID] = r
		ids = append(ids, r.ID)
	}
	list, _ := json.Marshal(ids)
	rows, err := q.QueryContext(ctx, `SELECT run_id, rule, kind, subject, asked, approved, remembered, undone, at FROM subjects
		WHERE run_id IN (SELECT value FROM json_each(?)) ORDER BY run_id, rule, kind, subject`, string(list))
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id, at int64
		var u SubjectUse
		if err := rows.Scan(&id, &u.Rule, &u.Kind, &u.Subject, &u.Asked, &u.Approved, &u.Remembered, &u.Undone, &at); err != nil {
			return err
		}
		u.At = fromMs(at)
		if r := byID[id]; r != nil {
			r.Subjects = append(r.Subjects, u)
		}
	}
	return rows.Err()
}
