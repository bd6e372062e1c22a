package memory

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// Forgotten says what a forget erased.
type Forgotten struct {
	Runs     int
	Failures int
	Links    int
	Notes    int
}

func (f Forgotten) String() string {
	return fmt.Sprintf("%d runs, %d failures, %d fix links, %d notes", f.Runs, f.Failures, f.Links, f.Notes)
}

// Forget erases run id and everything that came of it: its failures, the
// links to and from it, its row in the full-text index. See erase.
func (s *Store) Forget(ctx context.Context, id int64) (Forgotten, error) {
	got, err := s.erase(ctx, `id = ?`, `0`, id)
	if err == nil && got.Runs == 0 {
		return got, fmt.Errorf("memory: run %d: %w (kule memory list shows the ids)", id, ErrNotFound)
	}
	return got, err
}

// ForgetTask erases every run of a task, and its notes.
func (s *Store) ForgetTask(ctx context.Context, task string) (Forgotten, error) {
	return s.erase(ctx, `task = ?`, `task = ?`, task)
}

// ForgetFolder erases every run on a folder, and its notes.
func (s *Store) ForgetFolder(ctx context.Context, folder string) (Forgotten, error) {
	return s.erase(ctx, `folder = ?`, `folder = ?`, folder)
}

// erase deletes the runs (and notes) matching the conditions, then makes
// sure nothing of them is left in the file's bytes: secure_delete zeroes
// the freed pages, the FTS5 table's secure-delete option scrubs the
// index's pages, optimize rewrites the index's segments, VACUUM rebuilds
// the file without free pages, and the WAL is checkpointed and truncated.
func (s *Store) erase(ctx context.Context, runWhere, noteWhere string, arg any) (Forgotten, error) {
	var got Forgotten
	err := s.tx(ctx, func(tx *sql.Tx) error {
		ids, err := ints(ctx, tx, `SELECT id FROM runs WHERE `+runWhere, arg)
		if err != nil {
			return err
		}
		for _, id := range ids {
			var nf, nl int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM failures WHERE run_id = ?`, id).Scan(&nf); err != nil {
				return err
			}
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM links WHERE fix_run_id = ? OR failure_id IN (SELECT id FROM failures WHERE run_id = ?)`, id, id).Scan(&nl); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM search WHERE rowid = ?`, searchRow(id)); err != nil {
				return err
			}
			// failures and links go by ON DELETE CASCADE.
			if _, err := tx.ExecContext(ctx, `DELETE FROM runs WHERE id = ?`, id); err != nil {
				return err
			}
			got.Runs++
			got.Failures += nf
			got.Links += nl
		}
		if noteWhere != "0" {
			nids, err := ints(ctx, tx, `SELECT id FROM notes WHERE `+noteWhere, arg)
			if err != nil {
				return err
			}
			for _, id := range nids {
				if _, err := tx.ExecContext(ctx, `DELETE FROM search WHERE rowid = ?`, noteRow(id)); err != nil {
					return err
				}
				if _, err := tx.ExecContext(ctx, `DELETE FROM notes WHERE id = ?`, id); err != nil {
					return err
				}
				got.Notes++
			}
		}
		return nil
	})
	if err != nil {
		return got, err
	}
	return got, s.scrub(ctx)
}

// scrub leaves no freed page behind in the database or its WAL.
func (s *Store) scrub(ctx context.Context) error {
	for _, q := range []string{
		`INSERT INTO search(search) VALUES('optimize')`,
		`PRAGMA wal_checkpoint(TRUNCATE)`,
		`VACUUM`,
		`PRAGMA wal_checkpoint(TRUNCATE)`,
	} {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("memory: the items were deleted, but scrubbing the file failed: %w (run the forget again)", s.wrap(err))
		}
	}
	return nil
}

func ints(ctx context.Context, tx *sql.Tx, q string, args ...any) ([]int64, error) {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// Search finds runs whose prompt or command, error or paths match text
// (any of its words), best match first.
func (s *Store) Search(ctx context.Context, text string, limit int) ([]*Run, error) {
	q, _ := terms(text, 16)
	if q == "" {
		return nil, nil
	}
	if limit <= 0 {
		limit = 20
	}
	return s.queryRuns(ctx, `SELECT `+prefixed("r", runCols)+` FROM (SELECT rowid, rank FROM search WHERE search MATCH ? AND rowid % 2 = 0 ORDER BY rank LIMIT ?) m
		JOIN runs r ON r.id = m.rowid / 2 ORDER BY m.rank`, q, limit)
}

// Note is one item written by someone other than Kule.
type NoteItem struct {
	ID      int64     `json:"id"`
	Task    string    `json:"task,omitempty"`
	Folder  string    `json:"folder,omitempty"`
	Text    string    `json:"text"`
	Source  string    `json:"source"`
	Trust   string    `json:"trust"`
	Created time.Time `json:"created"`
}

// AddNote keeps a note on a task or folder from source. A note from an
// agent or a chat user is untrusted: it is searchable and exported, and
// never reaches an agent's notes.
func (s *Store) AddNote(ctx context.Context, task, folder, text, source string) (int64, error) {
	trust := trustOf(source, nil)
	if source == SourceOperator {
		trust = Trusted
	}
	var id int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO notes(task, folder, text, source, trust, created) VALUES(?,?,?,?,?,?)`, task, folder, text, source, trust, ms(s.now()))
		if err != nil {
			return err
		}
		if id, err = res.LastInsertId(); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO search(rowid, body) VALUES(?, ?)`, noteRow(id), text)
		return err
	})
	return id, err
}

// Notes lists the notes on a folder ("" for all), newest first.
func (s *Store) Notes(ctx context.Context, folder string) ([]NoteItem, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, task, folder, text, source, trust, created FROM notes WHERE ? = '' OR folder = ? ORDER BY created DESC, id DESC`, folder, folder)
	if err != nil {
		return nil, s.wrap(err)
	}
	defer rows.Close()
	var out []NoteItem
	for rows.Next() {
		var n NoteItem
		var c int64
		if err := rows.Scan(&n.ID, &n.Task, &n.Folder, &n.Text, &n.Source, &n.Trust, &c); err != nil {
			return nil, s.wrap(err)
		}
		n.Created = fromMs(c)
		out = append(out, n)
	}
	return out, s.wrap(rows.Err())
}

// Export writes every item as JSON lines: runs (with their failures and
// links), then notes. It is the person's own copy of what Kule remembers.
func (s *Store) Export(ctx context.Context, w io.Writer) error {
	enc := json.NewEncoder(w)
	var last int64
	for {
		runs, err := s.queryRuns(ctx, `SELECT `+runCols+` FROM runs WHERE id > ? ORDER BY id LIMIT 500`, last)
		if err != nil {
			return err
		}
		if len(runs) == 0 {
			break
		}
		for _, r := range runs {
			fs, err := s.FailuresOfRun(ctx, r.ID)
			if err != nil {
				return err
			}
			if err := enc.Encode(struct {
				Item     string     `json:"item"`
				Run      *Run       `json:"run"`
				Failures []*Failure `json:"failures,omitempty"`
			}{"run", r, fs}); err != nil {
				return fmt.Errorf("memory: export: %w", err)
			}
			last = r.ID
		}
	}
	notes, err := s.Notes(ctx, "")
	if err != nil {
		return err
	}
	for _, n := range notes {
		if err := enc.Encode(struct {
			Item string   `json:"item"`
			Note NoteItem `json:"note"`
		}{"note", n}); err != nil {
			return fmt.Errorf("memory: export: %w", err)
		}
	}
	return nil
}

// prefixed puts "p." before each column of a column list.
func prefixed(p, cols string) string {
	out := ""
	for i, c := range splitCols(cols) {
		if i > 0 {
			out += ", "
		}
		out += p + "." + c
	}
	return out
}

func splitCols(cols string) []string {
	var out []string
	cur := ""
	for _, r := range cols {
		switch r {
		case ',':
			out = append(out, cur)
			cur = ""
		case ' ', '\n', '\t':
		default:
			cur += string(r)
		}
	}
	if cur != "" {
		out = append(out, cur)
	}
	return out
}
