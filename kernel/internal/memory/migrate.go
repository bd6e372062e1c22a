package memory

import (
	"context"
	"database/sql"
	"fmt"
)

// migrations are the schema's versions, in order: migrations[i] takes a
// database from version i to version i+1 (PRAGMA user_version). A released
// step is never edited; a change of schema is a new step at the end, and
// TestMigrateFromEachVersion opens a database left at every earlier
// version.
var migrations = []string{
	// 1: the run records and their full-text index. The index is an FTS5
	// table with its own copy of the text (not an external-content one),
	// so deleting a row takes the text with it; secure-delete makes FTS5
	// scrub the deleted tokens from its b-tree pages too.
	`CREATE TABLE runs (
		id INTEGER PRIMARY KEY,
		task TEXT NOT NULL,
		folder TEXT NOT NULL,
		kind TEXT NOT NULL,            -- exec | agent
		agent TEXT NOT NULL DEFAULT '',
		agent_version TEXT NOT NULL DEFAULT '',
		session TEXT NOT NULL DEFAULT '',
		prompt TEXT NOT NULL DEFAULT '', -- the prompt, or the command line
		source TEXT NOT NULL DEFAULT 'operator',
		inputs TEXT NOT NULL DEFAULT '[]', -- untrusted inputs the run was given
		trust TEXT NOT NULL DEFAULT 'trusted',
		started INTEGER NOT NULL,
		ended INTEGER NOT NULL DEFAULT 0, -- 0: running, or interrupted
		exit_code INTEGER,                -- NULL: unknown
		ended_how TEXT NOT NULL DEFAULT 'running',
		limit_name TEXT NOT NULL DEFAULT '',
		error_tail TEXT NOT NULL DEFAULT '',
		tokens INTEGER NOT NULL DEFAULT 0,
		cost REAL NOT NULL DEFAULT 0,
		currency TEXT NOT NULL DEFAULT '',
		effects TEXT NOT NULL DEFAULT '{}',
		rules TEXT NOT NULL DEFAULT '{}',
		paths TEXT NOT NULL DEFAULT '[]',
		questions TEXT NOT NULL DEFAULT '[]',
		outcome TEXT NOT NULL DEFAULT '',  -- committed | rolled_back | undone | refused
		outcome_at INTEGER NOT NULL DEFAULT 0,
		outcome_ref INTEGER NOT NULL DEFAULT 0, -- the commit's checkpoint
		approved_by TEXT NOT NULL DEFAULT ''
	);
	CREATE INDEX runs_folder ON runs(folder, started);
	CREATE INDEX runs_task ON runs(task, started);
	CREATE INDEX runs_open ON runs(ended) WHERE ended = 0;
	CREATE VIRTUAL TABLE search USING fts5(body, tokenize = 'unicode61');
	INSERT INTO search(search, rank) VALUES('secure-delete', 1);`,

	// 2: failures, the fixes that prevent them, and notes written by
	// someone other than Kule.
	`CREATE TABLE failures (
		id INTEGER PRIMARY KEY,
		run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
		task TEXT NOT NULL,
		folder TEXT NOT NULL,
		kind TEXT NOT NULL,      -- exit | turn | limit | refused | undone
		signature TEXT NOT NULL,
		command TEXT NOT NULL DEFAULT '',
		error_tail TEXT NOT NULL DEFAULT '',
		paths TEXT NOT NULL DEFAULT '[]',
		rule TEXT NOT NULL DEFAULT '',
		trust TEXT NOT NULL DEFAULT 'trusted',
		created INTEGER NOT NULL
	);
	CREATE INDEX failures_folder ON failures(folder, created);
	CREATE INDEX failures_task ON failures(task, created);
	CREATE INDEX failures_run ON failures(run_id);
	CREATE TABLE links (
		id INTEGER PRIMARY KEY,
		failure_id INTEGER NOT NULL REFERENCES failures(id) ON DELETE CASCADE,
		fix_run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
		kind TEXT NOT NULL DEFAULT 'prevents',
		changed TEXT NOT NULL DEFAULT '{}',
		state TEXT NOT NULL DEFAULT 'valid', -- valid | expired
		created INTEGER NOT NULL,
		expired_at INTEGER NOT NULL DEFAULT 0,
		expired_by INTEGER NOT NULL DEFAULT 0 -- the run whose failure expired it
	);
	CREATE INDEX links_failure ON links(failure_id);
	CREATE INDEX links_fix ON links(fix_run_id);
	CREATE TABLE notes (
		id INTEGER PRIMARY KEY,
		task TEXT NOT NULL DEFAULT '',
		folder TEXT NOT NULL DEFAULT '',
		text TEXT NOT NULL,
		source TEXT NOT NULL,
		trust TEXT NOT NULL,
		created INTEGER NOT NULL
	);
	CREATE INDEX notes_folder ON notes(folder, created);`,

	// 3: the conversation a run belongs to (kule run --session NAME).
	`ALTER TABLE runs ADD COLUMN conversation TEXT NOT NULL DEFAULT '';
	CREATE INDEX runs_conversation ON runs(task, conversation, started) WHERE conversation != '';`,

	// 4: where a running turn was (its last steps and the questions
	// waiting for an answer, kept as it goes so that an interrupted run
	// can be resumed), the run that resumed an interrupted one, and how
	// many of a run's paths its commits applied of how many it changed.
	`ALTER TABLE runs ADD COLUMN progress TEXT NOT NULL DEFAULT '{}';
	ALTER TABLE runs ADD COLUMN resumed_by INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE runs ADD COLUMN outcome_paths INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE runs ADD COLUMN outcome_of INTEGER NOT NULL DEFAULT 0;
	CREATE INDEX runs_resumable ON runs(task, started) WHERE ended_how = 'interrupted' AND kind = 'agent' AND resumed_by = 0;`,

	// 5: the subjects of the rules whose trust is earned per host or per
	// file: the host:port of a connection, the home file of a change (its
	// name, never its content), and what each rule did to it in the run.
	`CREATE TABLE subjects (
		run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
		rule TEXT NOT NULL,
		kind TEXT NOT NULL,      -- host | home
		subject TEXT NOT NULL,   -- host:port, or the path relative to the home
		asked INTEGER NOT NULL DEFAULT 0,
		approved INTEGER NOT NULL DEFAULT 0,
		remembered INTEGER NOT NULL DEFAULT 0,
		undone INTEGER NOT NULL DEFAULT 0,
		at INTEGER NOT NULL DEFAULT 0, -- the last change of the counts
		PRIMARY KEY (run_id, rule, kind, subject)
	) WITHOUT ROWID;`,
}

// Version is the schema version this Kule writes.
func Version() int { return len(migrations) }

// migrate brings the schema to version to, one step a transaction.
func (s *Store) migrate(ctx context.Context, to int) error {
	var v int
	if err := s.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return s.wrap(err)
	}
	if v > len(migrations) {
		return fmt.Errorf("memory: %s: %w (schema version %d, this Kule knows up to %d) — nothing was changed; use the newer Kule, or move the file aside to start a new memory", s.path, ErrTooNew, v, len(migrations))
	}
	for ; v < to; v++ {
		step := migrations[v]
		next := v + 1
		if err := s.tx(ctx, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, step); err != nil {
				return fmt.Errorf("schema version %d: %w", next, err)
			}
			_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", next))
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}
