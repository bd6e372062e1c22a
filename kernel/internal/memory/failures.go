package memory

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"github.com/kulehq/kule/kernel/internal/lazyre"
)

// Failure is a run that went wrong: a non-zero exit, a turn that failed, a
// limit, a commit refused, a commit later undone.
type Failure struct {
	ID        int64
	RunID     int64
	Task      string
	Folder    string
	Kind      string // exit | turn | limit | refused | undone
	Signature string // the same failure again has the same signature
	Command   string // the command or prompt
	ErrorTail string
	Paths     []string
	Rule      string // the policy rule, for a refused commit
	Trust     string
	Created   time.Time
	Links     []Link // the fixes that followed
}

// Link says that a later run fixed a failure (kind "prevents"). It stays
// valid until its fix fails again; then it is expired, never deleted.
type Link struct {
	ID        int64
	FailureID int64
	FixRunID  int64
	Kind      string
	Changed   Changed // what changed between the failure and the fix
	State     string  // valid | expired
	Created   time.Time
	ExpiredAt time.Time
	ExpiredBy int64 // the run whose failure expired it
}

// Changed is what differed between a failing run and the run that fixed it.
type Changed struct {
	Failed  string         `json:"failed"`            // the failing command or prompt
	Fixed   string         `json:"fixed"`             // the fixing one
	Effects map[string]int `json:"effects,omitempty"` // the fix's changes, by kind
	Paths   []string       `json:"paths,omitempty"`   // the fix's first paths
}

// Link states.
const (
	LinkValid   = "valid"
	LinkExpired = "expired"
)

var (
	sigNumber = lazyre.New(`0x[0-9a-fA-F]+|[0-9]+`)
	sigSpace  = lazyre.New(`\s+`)
)

// normal is text with what differs between two runs of the same failure
// taken out: numbers (line numbers, times, pids, ids), case, spacing.
func normal(s string) string {
	s = strings.ToLower(s)
	s = sigNumber.ReplaceAllString(s, "#")
	return strings.TrimSpace(sigSpace.ReplaceAllString(s, " "))
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n "), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return l
		}
	}
	return ""
}

// commandKey is what two runs share when they run "the same thing": the
// command's first two words, or the prompt's first line, normalised.
func commandKey(kind, command string) string {
	if kind == KindExec {
		f := strings.Fields(command)
		if len(f) > 2 {
			f = f[:2]
		}
		return normal(strings.Join(f, " "))
	}
	first, _, _ := strings.Cut(strings.TrimSpace(command), "\n")
	if len(first) > 120 {
		first = first[:120]
	}
	return normal(first)
}

// Signature names a failure so that the same failure again has the same
// name: the kind, the command, the error's last line and the rule.
func Signature(kind, runKind, command, errorTail, rule string) string {
	h := sha256.Sum256([]byte(kind + "\x00" + commandKey(runKind, command) + "\x00" + normal(lastLine(errorTail)) + "\x00" + rule))
	return hex.EncodeToString(h[:8])
}

// addFailure files r's failure, as of at, and expires the valid links whose failure
// has the same signature on the same folder: the fix failed again.
func (s *Store) addFailure(ctx context.Context, tx *sql.Tx, r *Run, at time.Time, kind, rule, tail string) (*Failure, []Link, error) {
	f := &Failure{RunID: r.ID, Task: r.Task, Folder: r.Folder, Kind: kind, Command: r.Prompt, ErrorTail: tail, Paths: r.Paths, Rule: rule,
		Trust: r.Trust, Created: at}
	f.Signature = Signature(kind, r.Kind, r.Prompt, tail, rule)
	paths, _ := json.Marshal(nonNil(f.Paths))
	res, err := tx.ExecContext(ctx, `INSERT INTO failures(run_id, task, folder, kind, signature, command, error_tail, paths, rule, trust, created)
		VALUES(?,?,?,?,?,?,?,?,?,?,?)`, f.RunID, f.Task, f.Folder, f.Kind, f.Signature, f.Command, f.ErrorTail, string(paths), f.Rule, f.Trust, ms(f.Created))
	if err != nil {
		return nil, nil, err
	}
	if f.ID, err = res.LastInsertId(); err != nil {
		return nil, nil, err
	}
	expired, err := s.expireLinks(ctx, tx, `SELECT l.id FROM links l JOIN failures f ON f.id = l.failure_id
		WHERE l.state = 'valid' AND f.signature = ? AND f.folder = ? AND f.id != ?`, r.ID, f.Signature, f.Folder, f.ID)
	return f, expired, err
}

// expireLinks marks the valid links the query selects as expired by run.
func (s *Store) expireLinks(ctx context.Context, tx *sql.Tx, q string, run int64, args ...any) ([]Link, error) {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var out []Link
	now := ms(s.now())
	for _, id := range ids {
		if _, err := tx.ExecContext(ctx, `UPDATE links SET state='expired', expired_at=?, expired_by=? WHERE id=?`, now, run, id); err != nil {
			return nil, err
		}
		l, err := getLink(ctx, tx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, *l)
	}
	return out, nil
}

// linkFixes links a run that succeeded to the open failures it fixes: every
// failure of the same task that no valid link prevents yet, and those on
// the same folder from other tasks that ran the same command.
func (s *Store) linkFixes(ctx context.Context, tx *sql.Tx, r *Run) ([]Link, error) {
	rows, err := tx.QueryContext(ctx, `SELECT f.id, f.task, f.command, r.kind FROM failures f JOIN runs r ON r.id = f.run_id
		WHERE (f.task = ? OR f.folder = ?) AND f.run_id != ? AND f.created <= ?
		AND NOT EXISTS (SELECT 1 FROM links l WHERE l.failure_id = f.id AND l.state = 'valid')
		AND NOT EXISTS (SELECT 1 FROM links l WHERE l.failure_id = f.id AND l.fix_run_id = ?)
		ORDER BY f.id`, r.Task, r.Folder, r.ID, ms(r.Ended), r.ID)
	if err != nil {
		return nil, err
	}
	type cand struct {
		id            int64
		task, command string
		kind          string
	}
	var cs []cand
	for rows.Next() {
		var c cand
		if err := rows.Scan(&c.id, &c.task, &c.command, &c.kind); err != nil {
			rows.Close()
			return nil, err
		}
		cs = append(cs, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var out []Link
	for _, c := range cs {
		if c.task != r.Task && commandKey(c.kind, c.command) != commandKey(r.Kind, r.Prompt) {
			continue
		}
		ch := Changed{Failed: c.command, Fixed: r.Prompt, Effects: r.Effects, Paths: r.Paths}
		if len(ch.Paths) > 10 {
			ch.Paths = ch.Paths[:10]
		}
		raw, _ := json.Marshal(ch)
		now := r.Ended // the fix is known from when its run ended (it may be recorded later: pending.go)
		if now.IsZero() {
			now = s.now()
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO links(failure_id, fix_run_id, kind, changed, state, created) VALUES(?,?,'prevents',?,'valid',?)`,
			c.id, r.ID, string(raw), ms(now))
		if err != nil {
			return nil, err
		}
		id, err := res.LastInsertId()
		if err != nil {
			return nil, err
		}
		out = append(out, Link{ID: id, FailureID: c.id, FixRunID: r.ID, Kind: "prevents", Changed: ch, State: LinkValid, Created: now})
	}
	return out, nil
}

func scanLink(row scanner) (*Link, error) {
	var l Link
	var changed string
	var created, expired int64
	if err := row.Scan(&l.ID, &l.FailureID, &l.FixRunID, &l.Kind, &changed, &l.State, &created, &expired, &l.ExpiredBy); err != nil {
		return nil, err
	}
	l.Created, l.ExpiredAt = fromMs(created), fromMs(expired)
	_ = json.Unmarshal([]byte(changed), &l.Changed)
	return &l, nil
}

const linkCols = `id, failure_id, fix_run_id, kind, changed, state, created, expired_at, expired_by`

func getLink(ctx context.Context, q querier, id int64) (*Link, error) {
	return scanLink(q.QueryRowContext(ctx, `SELECT `+linkCols+` FROM links WHERE id=?`, id))
}

const failureCols = `id, run_id, task, folder, kind, signature, command, error_tail, paths, rule, trust, created`

func scanFailure(row scanner) (*Failure, error) {
	var f Failure
	var paths string
	var created int64
	if err := row.Scan(&f.ID, &f.RunID, &f.Task, &f.Folder, &f.Kind, &f.Signature, &f.Command, &f.ErrorTail, &paths, &f.Rule, &f.Trust, &created); err != nil {
		return nil, err
	}
	f.Created = fromMs(created)
	_ = json.Unmarshal([]byte(paths), &f.Paths)
	return &f, nil
}

// Failures lists failures with their links, newest first.
func (s *Store) Failures(ctx context.Context, f Filter) ([]*Failure, error) {
	q := `SELECT ` + failureCols + ` FROM failures WHERE 1=1`
	var args []any
	if f.Task != "" {
		q += ` AND task = ?`
		args = append(args, f.Task)
	}
	if f.Folder != "" {
		q += ` AND folder = ?`
		args = append(args, f.Folder)
	}
	if f.Limit <= 0 {
		f.Limit = 50
	}
	q += ` ORDER BY created DESC, id DESC LIMIT ?`
	args = append(args, f.Limit)
	return s.queryFailures(ctx, q, args...)
}

// FailuresOfRun lists the failures run id had.
func (s *Store) FailuresOfRun(ctx context.Context, id int64) ([]*Failure, error) {
	return s.queryFailures(ctx, `SELECT `+failureCols+` FROM failures WHERE run_id = ? ORDER BY id`, id)
}

func (s *Store) queryFailures(ctx context.Context, q string, args ...any) ([]*Failure, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, s.wrap(err)
	}
	var out []*Failure
	for rows.Next() {
		f, err := scanFailure(rows)
		if err != nil {
			rows.Close()
			return nil, s.wrap(err)
		}
		out = append(out, f)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, s.wrap(err)
	}
	for _, f := range out {
		if f.Links, err = s.linksOf(ctx, f.ID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *Store) linksOf(ctx context.Context, failure int64) ([]Link, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+linkCols+` FROM links WHERE failure_id = ? ORDER BY id`, failure)
	if err != nil {
		return nil, s.wrap(err)
	}
	defer rows.Close()
	var out []Link
	for rows.Next() {
		l, err := scanLink(rows)
		if err != nil {
			return nil, s.wrap(err)
		}
		out = append(out, *l)
	}
	return out, s.wrap(rows.Err())
}

// Pending are a task's ended runs whose changes have no outcome yet.
const pendingRuns = `task = ? AND ended != 0 AND outcome = ''`

// Commit is what a commit applied of a task's changes.
type Commit struct {
	Checkpoint int                // the commit's checkpoint
	By         string             // who approved what asked
	Rules      map[string]RuleUse // what the policy's rules did
	// Applied of Of: how many paths the commit applied, of the task's
	// changed paths it was asked to commit (those the .gitignore hides
	// are not counted unless they were included). Of 0 is unknown: the
	// runs are committed.
	Applied, Of int
}

// Committed records that the task's pending runs were committed, at
// c.Checkpoint: committed when the commit applied every path, partly
// committed (Applied of Of) when it held some back. A run partly
// committed before counts the paths this commit applies too, and is
// committed once they reach the paths it had.
func (s *Store) Committed(ctx context.Context, task string, c Commit) error {
	raw, _ := json.Marshal(nonNilRules(c.Rules))
	if c.Applied > c.Of {
		c.Of = c.Applied
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		// The rules of the commit are merged into each run's own (the
		// asks a run's changes met at commit).
		if _, err := tx.ExecContext(ctx, `UPDATE runs SET outcome_paths = min(outcome_paths + ?, outcome_of), outcome_at=?, outcome_ref=?, approved_by=?,
			rules = CASE WHEN rules = '{}' THEN ? ELSE json_patch(rules, ?) END
			WHERE task = ? AND outcome = ?`, c.Applied, ms(s.now()), c.Checkpoint, c.By, string(raw), string(raw), task, OutcomePartly); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE runs SET outcome=?, outcome_at=?, outcome_ref=?, approved_by=?, outcome_paths=?, outcome_of=?,
			rules = CASE WHEN rules = '{}' THEN ? ELSE json_patch(rules, ?) END
			WHERE `+pendingRuns, OutcomePartly, ms(s.now()), c.Checkpoint, c.By, c.Applied, c.Of, string(raw), string(raw), task); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE runs SET outcome=? WHERE task = ? AND outcome = ? AND outcome_paths >= outcome_of`, OutcomeCommitted, task, OutcomePartly)
		return err
	})
}

// RolledBack records that the task's pending runs were rolled back.
func (s *Store) RolledBack(ctx context.Context, task string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE runs SET outcome=?, outcome_at=? WHERE `+pendingRuns, OutcomeRolledBack, ms(s.now()), task)
	return s.wrap(err)
}

// Refused records that a commit of the task was refused (rule, when the
// policy refused it; why, in words): a failure of the task's newest run.
func (s *Store) Refused(ctx context.Context, task, rule, why string) (*Failure, error) {
	var f *Failure
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var id int64
		err := tx.QueryRowContext(ctx, `SELECT id FROM runs WHERE task = ? AND ended != 0 ORDER BY started DESC, id DESC LIMIT 1`, task).Scan(&id)
		if err == sql.ErrNoRows {
			return nil // nothing ran in the task: nothing to remember
		}
		if err != nil {
			return err
		}
		r, err := getRun(ctx, tx, id)
		if err != nil {
			return err
		}
		f, _, err = s.addFailure(ctx, tx, r, s.now(), "refused", rule, why)
		return err
	})
	return f, err
}

// Undone records that the commit at checkpoint cp of the task was undone:
// its runs' outcome becomes undone, each is a failure, and the links they
// were the fix of expire.
func (s *Store) Undone(ctx context.Context, task string, cp int) ([]*Failure, error) {
	var out []*Failure
	err := s.tx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT id FROM runs WHERE task = ? AND outcome IN (?, ?) AND outcome_ref = ?`, task, OutcomeCommitted, OutcomePartly, cp)
		if err != nil {
			return err
		}
		var ids []int64
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, id := range ids {
			if _, err := tx.ExecContext(ctx, `UPDATE runs SET outcome=?, outcome_at=? WHERE id=?`, OutcomeUndone, ms(s.now()), id); err != nil {
				return err
			}
			r, err := getRun(ctx, tx, id)
			if err != nil {
				return err
			}
			f, _, err := s.addFailure(ctx, tx, r, s.now(), "undone", "", "its commit was undone")
			if err != nil {
				return err
			}
			out = append(out, f)
			if _, err := s.expireLinks(ctx, tx, `SELECT id FROM links WHERE fix_run_id = ? AND state = 'valid'`, id, id); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}
