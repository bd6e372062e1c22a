package memory

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Kinds of run.
const (
	KindExec  = "exec"  // kule exec: a command
	KindAgent = "agent" // kule run: an agent's turn
)

// How a run ended.
const (
	EndRunning     = "running"     // not ended yet (or interrupted, once found so)
	EndDone        = "done"        // exit 0, or the turn ended normally
	EndFailed      = "failed"      // a non-zero exit, or a turn that failed
	EndCancelled   = "cancelled"   // the person cancelled it
	EndLimit       = "limit"       // a limit or a budget stopped it (Limit says which)
	EndInterrupted = "interrupted" // Kule stopped before it ended (a crash, a restart)
)

// Outcomes of a run's changes.
const (
	OutcomeCommitted  = "committed"
	OutcomeRolledBack = "rolled_back"
	OutcomeUndone     = "undone"
	// OutcomePartly: a commit applied some of the run's paths and held
	// the others back (the policy refused them, or they were not chosen);
	// OutcomePaths of OutcomeOf says how many. A later commit that applies
	// the rest makes it OutcomeCommitted.
	OutcomePartly = "partly_committed"
)

// SourceOperator is a prompt or command the operator gave (the CLI, the app).
const SourceOperator = "operator"

// Question is a question a run asked the person, and the answer.
type Question struct {
	Title   string `json:"title"`
	Kind    string `json:"kind,omitempty"`
	Command string `json:"command,omitempty"`
	Answer  string `json:"answer"`
}

// RuleUse is what one policy rule did to a run's changes.
type RuleUse struct {
	Asked    int `json:"asked,omitempty"`    // changes it asked about
	Approved int `json:"approved,omitempty"` // of those, approved by the person
	Denied   int `json:"denied,omitempty"`   // changes it refused
	// Remembered counts the changes it would have asked about that a
	// remembered (or graduated) rule let through.
	Remembered int `json:"remembered,omitempty"`
}

// Run is one run's record.
type Run struct {
	ID           int64
	Task         string
	Folder       string
	Kind         string // KindExec or KindAgent
	Agent        string
	AgentVersion string
	Session      string   // the agent's session id
	Conversation string   // the name the person gave the conversation (kule run --session)
	Prompt       string   // the prompt, or the command line
	Source       string   // who gave the prompt: SourceOperator, SourceChat, SourceAgent
	Inputs       []string // untrusted inputs the run was given, said in words
	Trust        string   // Untrusted when the prompt or an input was
	Started      time.Time
	Ended        time.Time // zero while running
	Exit         *int      // nil when unknown (an agent's turn, an interrupted run)
	How          string    // End*
	Limit        string    // which limit, when How is EndLimit
	ErrorTail    string    // the error's last lines
	Tokens       int64
	Cost         float64
	Currency     string
	Effects      map[string]int     // by kind: add, modify, delete, ...
	Rules        map[string]RuleUse // by policy rule id
	// Subjects are the uses of the rules whose trust is earned per host
	// or per home file, with their hosts and files (subjects.go).
	Subjects     []SubjectUse
	Paths        []string // the paths it changed (the first ones)
	Questions    []Question
	Outcome      string // Outcome*, "" while its changes are pending
	OutcomeAt    time.Time
	OutcomeRef   int    // the commit's checkpoint
	ApprovedBy   string // who approved what asked ("cli", "app", an operator)
	OutcomePaths int    // of the run's paths, how many its commits applied
	OutcomeOf    int    // of how many the task had changed when it was first committed
	Progress     Progress
	ResumedBy    int64 // the run that resumed this interrupted one (0: none)
}

// Succeeded reports whether the run ended well: done, with exit 0 if it has one.
func (r *Run) Succeeded() bool { return r.How == EndDone && (r.Exit == nil || *r.Exit == 0) }

// Start is what is known of a run when it starts.
type Start struct {
	Task, Folder, Kind  string
	Agent, AgentVersion string
	Session             string
	Conversation        string
	Prompt              string
	Source              string // "" is SourceOperator
	Inputs              []string
	Started             time.Time // zero: now
}

// End is what is known of a run when it ends.
type End struct {
	Ended     time.Time // zero: now
	Exit      *int
	How       string
	Limit     string
	ErrorTail string
	Tokens    int64
	Cost      float64
	Currency  string
	Effects   map[string]int
	Rules     map[string]RuleUse
	Paths     []string
	Questions []Question
	// Agent and AgentVersion, when set, replace what Start said (an
	// agent says its name and version once it runs).
	Agent, AgentVersion, Session string
}

// MaxPaths is how many of a run's paths are kept.
const MaxPaths = 50

// MaxTail is how many bytes of an error's last lines are kept.
const MaxTail = 2000

// trustOf is the trust tier of text from source with inputs.
func trustOf(source string, inputs []string) string {
	switch source {
	case "", SourceOperator, SourceKule:
		if len(inputs) == 0 {
			return Trusted
		}
	}
	return Untrusted
}

// StartRun records a run that begins and returns its id.
func (s *Store) StartRun(ctx context.Context, st Start) (int64, error) {
	var id int64
	err := s.tx(ctx, func(tx *sql.Tx) (err error) {
		id, err = s.startRun(ctx, tx, st)
		return err
	})
	return id, err
}

func (s *Store) startRun(ctx context.Context, tx *sql.Tx, st Start) (int64, error) {
	if st.Started.IsZero() {
		st.Started = s.now()
	}
	if st.Source == "" {
		st.Source = SourceOperator
	}
	inputs, _ := json.Marshal(nonNil(st.Inputs))
	res, err := tx.ExecContext(ctx, `INSERT INTO runs(task, folder, kind, agent, agent_version, session, conversation, prompt, source, inputs, trust, started)
		VALUES(?,?,?,?,?,?,?,?,?,?,?,?)`,
		st.Task, st.Folder, st.Kind, st.Agent, st.AgentVersion, st.Session, st.Conversation, st.Prompt, st.Source, string(inputs), trustOf(st.Source, st.Inputs), ms(st.Started))
	if err != nil {
		return 0, err
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, err
	}
	return id, s.index(ctx, tx, id, st.Prompt, "", nil)
}

// searchRow is a run's row in the full-text index (notes use odd rows).
func searchRow(run int64) int64 { return run * 2 }
func noteRow(note int64) int64  { return note*2 + 1 }

// index puts (or replaces) a run's text in the full-text index.
func (s *Store) index(ctx context.Context, tx *sql.Tx, id int64, prompt, tail string, paths []string) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM search WHERE rowid = ?`, searchRow(id)); err != nil {
		return err
	}
	body := prompt
	if tail != "" {
		body += "\n" + tail
	}
	if len(paths) > 0 {
		body += "\n" + strings.Join(paths, " ")
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO search(rowid, body) VALUES(?, ?)`, searchRow(id), body)
	return err
}

// EndReport is what ending a run found.
type EndReport struct {
	Failure *Failure // the run failed: its failure
	Fixed   []Link   // the run succeeded: the failures it is now the fix of
	Expired []Link   // the run failed as an earlier one a fix prevented: those links expired
}

// EndRun records how run id ended, and finds what it failed or fixed.
func (s *Store) EndRun(ctx context.Context, id int64, e End) (*EndReport, error) {
	var rep *EndReport
	err := s.tx(ctx, func(tx *sql.Tx) (err error) {
		rep, err = s.endRun(ctx, tx, id, e)
		return err
	})
	if err != nil {
		return nil, err
	}
	return rep, nil
}

func (s *Store) endRun(ctx context.Context, tx *sql.Tx, id int64, e End) (*EndReport, error) {
	if e.Ended.IsZero() {
		e.Ended = s.now()
	}
	if e.How == "" {
		e.How = EndDone
	}
	if len(e.Paths) > MaxPaths {
		e.Paths = e.Paths[:MaxPaths]
	}
	e.ErrorTail = Tail(e.ErrorTail, MaxTail)
	effects, _ := json.Marshal(nonNilMap(e.Effects))
	rules, _ := json.Marshal(nonNilRules(e.Rules))
	paths, _ := json.Marshal(nonNil(e.Paths))
	qs, _ := json.Marshal(nonNilQ(e.Questions))
	var exit any
	if e.Exit != nil {
		exit = *e.Exit
	}
	res, err := tx.ExecContext(ctx, `UPDATE runs SET ended=?, exit_code=?, ended_how=?, limit_name=?, error_tail=?, tokens=?, cost=?, currency=?,
		effects=?, rules=?, paths=?, questions=?,
		agent = CASE WHEN ? = '' THEN agent ELSE ? END,
		agent_version = CASE WHEN ? = '' THEN agent_version ELSE ? END,
		session = CASE WHEN ? = '' THEN session ELSE ? END
		WHERE id=?`,
		ms(e.Ended), exit, e.How, e.Limit, e.ErrorTail, e.Tokens, e.Cost, e.Currency,
		string(effects), string(rules), string(paths), string(qs),
		e.Agent, e.Agent, e.AgentVersion, e.AgentVersion, e.Session, e.Session, id)
	if err != nil {
		return nil, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil, fmt.Errorf("run %d: %w", id, ErrNotFound)
	}
	r, err := getRun(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	if err := s.index(ctx, tx, id, r.Prompt, r.ErrorTail, r.Paths); err != nil {
		return nil, err
	}
	rep := &EndReport{}
	return rep, s.judgeEnd(ctx, tx, r, rep)
}

// judgeEnd files a failure for a run that failed, expiring the fixes it
// proves wrong, or links a run that succeeded to the failures it fixes.
func (s *Store) judgeEnd(ctx context.Context, tx *sql.Tx, r *Run, rep *EndReport) error {
	switch {
	case r.Succeeded():
		links, err := s.linkFixes(ctx, tx, r)
		rep.Fixed = links
		return err
	case r.How == EndFailed || r.How == EndLimit:
		kind := "exit"
		if r.How == EndLimit {
			kind = "limit"
		} else if r.Kind == KindAgent {
			kind = "turn"
		}
		f, expired, err := s.addFailure(ctx, tx, r, r.Ended, kind, "", r.ErrorTail) // as of the run's end, which is before now when it was pending
		rep.Failure, rep.Expired = f, expired
		return err
	}
	return nil
}

const runCols = `id, task, folder, kind, agent, agent_version, session, conversation, prompt, source, inputs, trust, started, ended, exit_code, ended_how,
	limit_name, error_tail, tokens, cost, currency, effects, rules, paths, questions, outcome, outcome_at, outcome_ref, approved_by,
	outcome_paths, outcome_of, progress, resumed_by`

type scanner interface{ Scan(...any) error }

func scanRun(row scanner) (*Run, error) {
	var r Run
	var inputs, effects, rules, paths, qs, progress string
	var started, ended, outAt int64
	var exit sql.NullInt64
	if err := row.Scan(&r.ID, &r.Task, &r.Folder, &r.Kind, &r.Agent, &r.AgentVersion, &r.Session, &r.Conversation, &r.Prompt, &r.Source, &inputs, &r.Trust,
		&started, &ended, &exit, &r.How, &r.Limit, &r.ErrorTail, &r.Tokens, &r.Cost, &r.Currency, &effects, &rules, &paths, &qs,
		&r.Outcome, &outAt, &r.OutcomeRef, &r.ApprovedBy, &r.OutcomePaths, &r.OutcomeOf, &progress, &r.ResumedBy); err != nil {
		return nil, err
	}
	r.Started, r.Ended, r.OutcomeAt = fromMs(started), fromMs(ended), fromMs(outAt)
	if exit.Valid {
		v := int(exit.Int64)
		r.Exit = &v
	}
	// The columns are Kule's own JSON; a damaged value reads as empty.
	_ = json.Unmarshal([]byte(inputs), &r.Inputs)
	_ = json.Unmarshal([]byte(effects), &r.Effects)
	_ = json.Unmarshal([]byte(rules), &r.Rules)
	_ = json.Unmarshal([]byte(paths), &r.Paths)
	_ = json.Unmarshal([]byte(qs), &r.Questions)
	_ = json.Unmarshal([]byte(progress), &r.Progress)
	return &r, nil
}

type querier interface {
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
}

func getRun(ctx context.Context, q querier, id int64) (*Run, error) {
	r, err := scanRun(q.QueryRowContext(ctx, `SELECT `+runCols+` FROM runs WHERE id=?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("run %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return r, attachSubjects(ctx, q, []*Run{r})
}

// Run reads one run's record.
func (s *Store) Run(ctx context.Context, id int64) (*Run, error) {
	r, err := getRun(ctx, s.db, id)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, s.wrap(err)
	}
	return r, err
}

// Filter narrows a list of runs.
type Filter struct {
	Task   string
	Folder string
	Kind   string
	Limit  int // 0: 50
}

// Runs lists runs, newest first.
func (s *Store) Runs(ctx context.Context, f Filter) ([]*Run, error) {
	q := `SELECT ` + runCols + ` FROM runs WHERE 1=1`
	var args []any
	if f.Task != "" {
		q += ` AND task = ?`
		args = append(args, f.Task)
	}
	if f.Folder != "" {
		q += ` AND folder = ?`
		args = append(args, f.Folder)
	}
	if f.Kind != "" {
		q += ` AND kind = ?`
		args = append(args, f.Kind)
	}
	if f.Limit <= 0 {
		f.Limit = 50
	}
	q += ` ORDER BY started DESC, id DESC LIMIT ?`
	args = append(args, f.Limit)
	return s.queryRuns(ctx, q, args...)
}

func (s *Store) queryRuns(ctx context.Context, q string, args ...any) ([]*Run, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, s.wrap(err)
	}
	defer rows.Close()
	var out []*Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, s.wrap(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap(err)
	}
	// One connection: the rows are closed before the next query.
	rows.Close()
	return out, s.wrap(attachSubjects(ctx, s.db, out))
}

// Interrupted marks every run still recorded as running, and started
// before now, as interrupted (Kule stopped before it ended: a crash, a
// reboot, a restart) and returns them. alive, when set, keeps the runs it
// says are still going (a daemon's own).
func (s *Store) Interrupted(ctx context.Context, alive func(*Run) bool) ([]*Run, error) {
	open, err := s.queryRuns(ctx, `SELECT `+runCols+` FROM runs WHERE ended = 0 ORDER BY started`)
	if err != nil {
		return nil, err
	}
	var out []*Run
	now := s.now()
	for _, r := range open {
		if alive != nil && alive(r) {
			continue
		}
		if _, err := s.db.ExecContext(ctx, `UPDATE runs SET ended=?, ended_how=? WHERE id=? AND ended=0`, ms(now), EndInterrupted, r.ID); err != nil {
			return out, s.wrap(err)
		}
		r.Ended, r.How = now, EndInterrupted
		out = append(out, r)
	}
	return out, nil
}

// Tail is the last max bytes of s, cut at a line's start where it can be.
func Tail(s string, max int) string {
	s = strings.TrimRight(s, "\n ")
	if len(s) <= max {
		return s
	}
	s = s[len(s)-max:]
	if i := strings.IndexByte(s, '\n'); i >= 0 && i < len(s)-1 {
		s = s[i+1:]
	}
	return s
}

func nonNil(v []string) []string {
	if v == nil {
		return []string{}
	}
	return v
}

func nonNilQ(v []Question) []Question {
	if v == nil {
		return []Question{}
	}
	return v
}

func nonNilMap(v map[string]int) map[string]int {
	if v == nil {
		return map[string]int{}
	}
	return v
}

func nonNilRules(v map[string]RuleUse) map[string]RuleUse {
	if v == nil {
		return map[string]RuleUse{}
	}
	return v
}

// ConversationSession is the agent's session id of the task's newest run
// of agent in the conversation the person named; false when there is none.
func (s *Store) ConversationSession(ctx context.Context, task, agent, name string) (string, bool, error) {
	var id string
	err := s.db.QueryRowContext(ctx, `SELECT session FROM runs WHERE task = ? AND agent = ? AND conversation = ? AND session != ''
		ORDER BY started DESC, id DESC LIMIT 1`, task, agent, name).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, s.wrap(err)
	}
	return id, true, nil
}
