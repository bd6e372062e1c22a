// Package memory keeps Kule's memory of past runs in $KULE_HOME/memory.db,
// an SQLite database (modernc.org/sqlite, pure Go) with an FTS5 index: a
// record of every run (what ran, how it ended, what it cost, what it
// changed, what the person answered, and later whether its changes were
// committed, rolled back or undone), the failures among them with the fixes
// that followed, and recall of all that before the next run.
//
// Everything here is advisory. The kernel calls it after the work that
// matters (a command's end, a commit, an undo) and never lets its errors
// fail that work: a damaged or locked database is reported as ErrDamaged or
// ErrLocked, with what to do, and the folder is never the worse for it.
//
// Every item has a provenance: observed by Kule (trusted), or carrying text
// written by an agent or by a chat user who is not the operator
// (untrusted). Recall hands an agent trusted items only.
package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"modernc.org/sqlite"
)

// SQLite's primary result codes the store tells apart.
const (
	codeBusy    = 5
	codeLocked  = 6
	codeCorrupt = 11
	codeNotADB  = 26
)

// File is the database's name in the Kule home.
const File = "memory.db"

// Errors a caller can test for.
var (
	// ErrDamaged: the database file is not a database or is corrupt.
	ErrDamaged = errors.New("the memory database is damaged")
	// ErrLocked: another process holds the database's lock for longer
	// than the store waits.
	ErrLocked = errors.New("the memory database is locked")
	// ErrNotFound: no item has that id.
	ErrNotFound = errors.New("no such memory item")
	// ErrTooNew: the database was written by a newer Kule (its schema
	// version is above the ones this Kule knows).
	ErrTooNew = errors.New("the memory database is from a newer Kule")
	// ErrLink: the database's path is a symbolic link; Kule never opens
	// its own files through one.
	ErrLink = errors.New("the memory database is a symbolic link")
)

// Trust tiers.
const (
	Trusted   = "trusted"
	Untrusted = "untrusted"
)

// Sources of an item's text.
const (
	SourceKule  = "kule"  // observed by Kule itself
	SourceAgent = "agent" // written by an agent
	SourceChat  = "chat"  // received from a chat user who is not the operator
)

// BusyTimeout is how long a call waits on another process's lock before it
// gives up with ErrLocked. Short: memory never holds up a commit or an undo.
const BusyTimeout = 1500 * time.Millisecond

// Store is an open memory database. Its methods are safe for concurrent use.
type Store struct {
	db   *sql.DB
	path string
	now  func() time.Time
}

// Path is the database's path in the Kule home.
func Path(home string) string { return filepath.Join(home, File) }

// Open opens (creating it if missing) the memory database at path and
// brings its schema to the newest version.
func Open(path string) (*Store, error) { return open(path, len(migrations)) }

// open opens the database and migrates it to schema version to (tests
// leave a database at an earlier version).
func open(path string, to int) (*Store, error) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return nil, fmt.Errorf("memory: %s: %w (nothing was opened; remove the link, and Kule starts a new memory there)", path, ErrLink)
	}
	dsn := "file:" + path + "?_pragma=busy_timeout(" + fmt.Sprint(BusyTimeout.Milliseconds()) + ")" +
		"&_pragma=journal_mode(WAL)&_pragma=secure_delete(on)&_pragma=foreign_keys(on)&_pragma=synchronous(normal)" +
		// Reads by memory map and a 16 MB page cache: recall reads a few
		// hundred pages of the index, without a system call each.
		"&_pragma=mmap_size(268435456)&_pragma=cache_size(-16000)" +
		// A short log: each kule command is a process of its own, and the
		// first connection of a process that finds no other open reads
		// and checksums the whole write-ahead log again to rebuild its
		// index. At SQLite's default (a checkpoint at 1,000 pages) that
		// was up to 4 MB read at every command's start.
		"&_pragma=wal_autocheckpoint(64)" +
		"&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, explain(path, err)
	}
	// One connection: SQLite serialises writers anyway, and one
	// connection keeps the pragmas and the FTS settings in one place.
	db.SetMaxOpenConns(1)
	s := &Store{db: db, path: path, now: time.Now}
	if err := s.migrate(context.Background(), to); err != nil {
		_ = db.Close()
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		_ = db.Close()
		return nil, explain(path, err)
	}
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Now is the time by the store's clock.
func (s *Store) Now() time.Time { return s.now() }

// SetClock replaces the store's clock (tests).
func (s *Store) SetClock(now func() time.Time) { s.now = now }

// explain turns SQLite's errors into the store's: what happened, that the
// folders are safe, and what to do.
func explain(path string, err error) error {
	if err == nil {
		return nil
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case codeNotADB, codeCorrupt:
			return fmt.Errorf("memory: %s: %w (%v) — your folders, tasks and history are not affected; move the file aside or delete it, and Kule starts a new memory", path, ErrDamaged, err)
		case codeBusy, codeLocked:
			return fmt.Errorf("memory: %s: %w by another process (%v) — nothing else waited on it; try again once that process is done", path, ErrLocked, err)
		}
	}
	msg := err.Error()
	if strings.Contains(msg, "not a database") || strings.Contains(msg, "malformed") {
		return fmt.Errorf("memory: %s: %w (%v) — your folders, tasks and history are not affected; move the file aside or delete it, and Kule starts a new memory", path, ErrDamaged, err)
	}
	if strings.Contains(msg, "database is locked") || strings.Contains(msg, "SQLITE_BUSY") {
		return fmt.Errorf("memory: %s: %w by another process (%v) — nothing else waited on it; try again once that process is done", path, ErrLocked, err)
	}
	return fmt.Errorf("memory: %s: %w", path, err)
}

func (s *Store) wrap(err error) error { return explain(s.path, err) }

// tx runs f in one transaction.
func (s *Store) tx(ctx context.Context, f func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.wrap(err)
	}
	if err := f(tx); err != nil {
		_ = tx.Rollback()
		return s.wrap(err)
	}
	return s.wrap(tx.Commit())
}

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMs(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}
