// Package sandboxlog keeps a task's sandbox.jsonl: one JSON line for each
// thing Kule's sandbox refused or weakened for one of the task's runs — a
// command that did not run because isolation could not be set up, an
// opening (--reveal, --allow-write, an agent profile's) that would have
// reached a hidden path, a device that is never given, and weaker isolation
// accepted for a run. The Timeline and `kule status` read it back.
//
// What a command itself was refused inside the sandbox (a read Landlock
// stopped) is not here: Linux reports that only through its audit log
// (Linux 6.15 and later, with CAP_AUDIT_READ and auditing on), which Kule
// does not read.
package sandboxlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kulehq/kule/kernel/internal/atomicfile"
)

// FileName is the log's name in a task's directory.
const FileName = "sandbox.jsonl"

// Kinds of Record (the sandbox's own words for them).
const (
	NotRun  = "not-run" // isolation could not be set up: the command did not run
	Opening = "opening" // an opening refused: a credential path, Kule's home, another task, a whole personal folder
	Device  = "device"  // a device that is never given
	Weaker  = "weaker"  // weaker isolation accepted for this run
)

// Errors a caller can test for.
var (
	// ErrDamaged: a line of the log is not a record (its number is named).
	ErrDamaged = errors.New("sandboxlog: damaged line")
	// ErrRecord: a record lacks its kind or what was refused.
	ErrRecord = errors.New("sandboxlog: incomplete record")
)

// Record is one line of sandbox.jsonl.
type Record struct {
	Time time.Time `json:"time"`
	Run  string    `json:"run"`            // the command or agent the refusal was for
	Kind string    `json:"kind"`           // NotRun, Opening, Device or Weaker
	What string    `json:"what"`           // what was refused ("--reveal /root/.ssh")
	Why  string    `json:"why"`            // why, for a person
	Do   string    `json:"do,omitempty"`   // what to do next
	From string    `json:"from,omitempty"` // "sandbox" or "profile": which check decided
}

// AccessNote is what the Timeline and the docs say of a command's own
// refused file accesses, which this log cannot list.
const AccessNote = "What a command itself was refused inside the sandbox (a file Landlock kept it from) cannot be listed on this machine: Linux reports that only in its audit log (Linux 6.15 and later, read with CAP_AUDIT_READ), which Kule does not read. The command sees the refusal as a permission error."

// Path is the log of the task whose directory is taskDir.
func Path(taskDir string) string { return filepath.Join(taskDir, FileName) }

// maxLine bounds one record; a longer one is cut (its What and Why).
const maxLine = 16 << 10

// Append adds r to the task's log as one line, written with one write(2) on
// a file opened for appending (so concurrent runs never interleave), then
// synced. A zero Time is now.
func Append(taskDir string, r Record) error {
	if r.Kind == "" || r.What == "" {
		return fmt.Errorf("%w: kind %q, what %q", ErrRecord, r.Kind, r.What)
	}
	if r.Time.IsZero() {
		r.Time = time.Now()
	}
	r.Time = r.Time.UTC()
	for _, s := range []*string{&r.Run, &r.What, &r.Why, &r.Do} {
		if len(*s) > maxLine/4 {
			*s = strings.ToValidUTF8((*s)[:maxLine/4], "") + "…"
		}
	}
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("sandboxlog: %w", err)
	}
	if err := atomicfile.Append(Path(taskDir), append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("sandboxlog: %w", err)
	}
	return nil
}

// Parse reads records from r. A line that is not a whole record is skipped
// and named in damaged (ErrDamaged with its number), never hiding the lines
// after it; a last line without its newline (a write cut short) is skipped
// the same way. Blank lines are passed over.
func Parse(r io.Reader) (recs []Record, damaged []error, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		line, rerr := br.ReadSlice('\n')
		whole := rerr == nil
		if errors.Is(rerr, bufio.ErrBufferFull) {
			// Longer than any record Append writes: read past it.
			for errors.Is(rerr, bufio.ErrBufferFull) {
				_, rerr = br.ReadSlice('\n')
			}
			line = nil
			damaged = append(damaged, fmt.Errorf("%w %d: longer than a record", ErrDamaged, n))
		}
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return recs, damaged, fmt.Errorf("sandboxlog: %w", rerr)
		}
		if t := bytes.TrimSpace(line); len(t) > 0 {
			var rec Record
			switch {
			case !whole:
				damaged = append(damaged, fmt.Errorf("%w %d: cut short (no newline)", ErrDamaged, n))
			case json.Unmarshal(t, &rec) != nil:
				damaged = append(damaged, fmt.Errorf("%w %d: not a JSON record", ErrDamaged, n))
			case rec.Kind == "" || rec.What == "":
				damaged = append(damaged, fmt.Errorf("%w %d: %w", ErrDamaged, n, ErrRecord))
			default:
				recs = append(recs, rec)
			}
		}
		if rerr != nil {
			return recs, damaged, nil
		}
	}
}

// Read reads the task's log, from byte offset on (0: all of it; the size
// of the file before a run: what that run added). A missing log is empty.
func Read(taskDir string, offset int64) ([]Record, []error, error) {
	f, err := os.Open(Path(taskDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("sandboxlog: %w", err)
	}
	defer f.Close()
	if offset > 0 {
		if _, err := f.Seek(offset, io.SeekStart); err != nil {
			return nil, nil, fmt.Errorf("sandboxlog: %w", err)
		}
	}
	return Parse(f)
}

// Size is the log's length now (0 when there is none): pass it to Read
// after a run to get what the run added.
func Size(taskDir string) int64 {
	fi, err := os.Stat(Path(taskDir))
	if err != nil {
		return 0
	}
	return fi.Size()
}

// Line is r as one line for a terminal:
//
//	sandbox: 08:31 refused --reveal /root/.ssh (kule exec cat) · it would open … · run it again without …
func Line(r Record) string {
	word := map[string]string{NotRun: "did not run", Opening: "refused", Device: "refused", Weaker: "weaker isolation"}[r.Kind]
	if word == "" {
		word = r.Kind
	}
	var b strings.Builder
	fmt.Fprintf(&b, "sandbox: %s %s %s", r.Time.Local().Format("2006-01-02 15:04"), word, r.What)
	if r.Run != "" {
		fmt.Fprintf(&b, " (%s)", r.Run)
	}
	if r.Why != "" {
		b.WriteString(" · " + r.Why)
	}
	if r.Do != "" {
		b.WriteString(" · " + r.Do)
	}
	return b.String()
}
