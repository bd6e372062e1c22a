package memory

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// The pending log, $KULE_HOME/memory-pending.jsonl: a command that only
// records its run (kule exec) appends a line here when it starts and one
// when it ends, instead of opening the database. Opening SQLite, setting its
// pragmas and the two transactions of a run's start and end were half of
// kule exec's own cost from start to end. Every store that is opened, and
// an open one before each use the kernel makes of it, takes the pending
// lines in first (TakePending), so whatever reads the memory reads them too:
// a start whose end has not come is a run still running, or one that was
// killed (Interrupted finds it, as it finds any run that never ended).
//
// Writers and the reader hold the file's lock (flock) while they touch it,
// so a line appended while the log is being taken in waits for the reader
// to empty the log and is not lost. Taking a line in twice (the reader
// stopped between the database's commit and emptying the log) is harmless:
// a run already recorded with the same task, kind, start and command line
// is not recorded again.

// PendingFile is the pending log's name in the Kule home.
const PendingFile = "memory-pending.jsonl"

// maxPendingLine is the longest line taken in. A run's line is a few
// kilobytes (an error's tail, fifty paths); a longer one is damaged.
const maxPendingLine = 1 << 20

// PendingRun is one line of the pending log: a run's start (End nil), or
// its end, which names the run by its Start again.
type PendingRun struct {
	Start Start `json:"start"`
	End   *End  `json:"end,omitempty"`
	// Subjects are what the run's connections did for their hosts'
	// categories, kept with its end (AddSubject).
	Subjects []SubjectUse `json:"subjects,omitempty"`
}

// PendingPath is the pending log's path in the Kule home.
func PendingPath(home string) string { return filepath.Join(home, PendingFile) }

// AppendPending appends f to the pending log of the Kule home: one write
// of one line, under the log's lock. It never opens the log through a
// symbolic link.
func AppendPending(home string, f PendingRun) error {
	if !f.valid() {
		return errors.New("memory: a pending run needs its task, kind and start time, and an end not before its start")
	}
	line, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	line = append(line, '\n')
	path := PendingPath(home)
	file, err := openPending(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE)
	if err != nil {
		return err
	}
	defer file.Close()
	if err := syscall.Flock(int(file.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("memory: %s: %w", path, err)
	}
	if _, err := file.Write(line); err != nil {
		return fmt.Errorf("memory: %s: %w", path, err)
	}
	return nil
}

// openPending opens the log without following a link (ELOOP is said as
// ErrLink) and only if it is a regular file.
func openPending(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("memory: %s: %w (nothing was written; remove the link, and Kule starts a new log there)", path, ErrLink)
	}
	if err != nil {
		return nil, fmt.Errorf("memory: %s: %w", path, err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("memory: %s: not a regular file (nothing was written; move it aside)", path)
	}
	return f, nil
}

// ParsePending reads the pending log's lines from r: the runs it holds, and
// how many lines were damaged (not a run's JSON, missing its task, kind or
// times, or longer than any run's line) and skipped.
func ParsePending(r io.Reader) ([]PendingRun, int, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var out []PendingRun
	damaged := 0
	for {
		line, tooLong, err := readLine(br)
		if err != nil && !errors.Is(err, io.EOF) {
			return out, damaged, err
		}
		line = bytes.TrimSpace(line)
		switch {
		case tooLong:
			damaged++
		case len(line) > 0:
			var f PendingRun
			if json.Unmarshal(line, &f) != nil || !f.valid() {
				damaged++
			} else {
				out = append(out, f)
			}
		}
		if err != nil {
			return out, damaged, nil
		}
	}
}

// readLine reads one line of br, newline included; a line longer than
// maxPendingLine is read to its end and returned empty with tooLong set.
func readLine(br *bufio.Reader) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > maxPendingLine {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, tooLong, err
		}
	}
}

// valid reports whether f is a run the store can record.
func (f *PendingRun) valid() bool {
	if f.Start.Task == "" || f.Start.Kind == "" || f.Start.Started.IsZero() {
		return false
	}
	if f.End != nil && (f.End.Ended.IsZero() || f.End.Ended.Before(f.Start.Started)) {
		return false
	}
	for _, u := range f.Subjects {
		if u.check() != nil {
			return false
		}
	}
	return true
}

// TakePending records the runs of the pending log beside the store's file
// and empties it. Damaged lines are dropped and said in the error; the
// runs before and after them are recorded. When the database refuses (it
// is locked), the log is kept as it is for the next store that opens it.
func (s *Store) TakePending(ctx context.Context) (int, error) {
	path := PendingPath(filepath.Dir(s.path))
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) || (err == nil && fi.Mode().IsRegular() && fi.Size() == 0) {
		return 0, nil
	}
	file, err := openPending(path, os.O_RDWR)
	if err != nil {
		return 0, err
	}
	defer file.Close()
	if err := syscall.Flock(int(file.Fd()), syscall.LOCK_EX); err != nil {
		return 0, fmt.Errorf("memory: %s: %w", path, err)
	}
	runs, damaged, err := ParsePending(file)
	if err != nil {
		return 0, fmt.Errorf("memory: %s: %w (the log is kept for the next try)", path, err)
	}
	n := 0
	for _, f := range runs {
		taken, err := s.recordPending(ctx, f)
		if err != nil {
			return n, fmt.Errorf("memory: the commands' records in %s: %w (the log is kept for the next try)", path, err)
		}
		if taken {
			n++
		}
	}
	if err := file.Truncate(0); err != nil {
		return n, fmt.Errorf("memory: %s: %w", path, err)
	}
	if damaged > 0 {
		return n, fmt.Errorf("memory: %s: %d damaged %s dropped; the other runs were recorded", path, damaged, plural(damaged, "line", "lines"))
	}
	return n, nil
}

// recordPending records f, in one transaction: a start unless its run is
// recorded already, an end unless its run has ended already (a run said
// interrupted gets its real end).
func (s *Store) recordPending(ctx context.Context, f PendingRun) (bool, error) {
	taken := false
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var id, ended int64
		var how string
		err := tx.QueryRowContext(ctx, `SELECT id, ended, ended_how FROM runs WHERE task = ? AND kind = ? AND started = ? AND prompt = ? ORDER BY id LIMIT 1`,
			f.Start.Task, f.Start.Kind, ms(f.Start.Started), f.Start.Prompt).Scan(&id, &ended, &how)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			if id, err = s.startRun(ctx, tx, f.Start); err != nil {
				return err
			}
			taken = true
		case err != nil:
			return err
		case f.End == nil || (ended != 0 && how != EndInterrupted):
			return nil // taken in before
		}
		if f.End == nil {
			return nil
		}
		for _, u := range f.Subjects {
			if err := s.addSubject(ctx, tx, id, u); err != nil {
				return err
			}
		}
		if _, err := s.endRun(ctx, tx, id, *f.End); err != nil {
			return err
		}
		taken = true
		return nil
	})
	return taken, err
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
