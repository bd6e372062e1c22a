package history

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kulehq/kule/kernel/internal/atomicfile"
)

// Log appends to and reads one history file. A Log is safe for use by
// several goroutines; several processes are serialised by an flock on the
// log file while they append.
type Log struct {
	path string
	key  ed25519.PrivateKey
	mu   sync.Mutex
	now  func() time.Time
}

// Open returns the log at path (tasks/<id>/history.jsonl), signing new
// entries with key. Nothing is read or created until it is used.
func Open(path string, key ed25519.PrivateKey) *Log {
	return &Log{path: path, key: key, now: time.Now}
}

// HeadPath is the signed head file beside a log.
func HeadPath(path string) string { return path + ".head" }

// head is the signed head file: the seq and line hash of the last entry.
type head struct {
	Seq  int    `json:"seq"`
	Hash string `json:"hash"` // "" when Seq is 0
	Sig  string `json:"sig"`
}

func (h head) signingBytes() []byte {
	return []byte(headDomain + strconv.Itoa(h.Seq) + "\n" + h.Hash + "\n")
}

// Append adds one entry of the given kind; data is encoded as JSON (a
// json.RawMessage is kept as it is, compacted). It returns the entry once its
// line is on disk (fsynced) and the head names it.
func (l *Log) Append(kind string, data any) (Entry, error) {
	if kind == "" {
		return Entry{}, errors.New("history: append: the entry kind is empty")
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return Entry{}, fmt.Errorf("history: append %s: encode data: %w", kind, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()

	f, err := os.OpenFile(l.path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return Entry{}, fmt.Errorf("history: append: %w", err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return Entry{}, fmt.Errorf("history: append: lock %s: %w", l.path, err)
	}
	defer unix.Flock(int(f.Fd()), unix.LOCK_UN)

	last, lastLine, size, complete, err := readTail(f)
	if err != nil {
		return Entry{}, fmt.Errorf("history: append: %s: %w", l.path, err)
	}
	if complete < size {
		// A torn last line: the write that made it never returned, so it was
		// never acknowledged. Cut it off before writing after it.
		if err := f.Truncate(complete); err != nil {
			return Entry{}, fmt.Errorf("history: append: cut torn last line of %s: %w", l.path, err)
		}
		if err := f.Sync(); err != nil {
			return Entry{}, fmt.Errorf("history: append: fsync %s: %w", l.path, err)
		}
	}
	pub := l.key.Public().(ed25519.PublicKey)
	if err := l.checkHead(pub, last, lastLine); err != nil {
		return Entry{}, err
	}

	e := Entry{Seq: 1, Time: l.now().UTC(), Kind: kind, Data: raw}
	if lastLine != nil {
		e.Seq = last.Seq + 1
		e.Prev = lineHash(lastLine)
	}
	if err := sign(l.key, &e); err != nil {
		return Entry{}, err
	}
	line, err := encodeLine(e)
	if err != nil {
		return Entry{}, err
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		// A short write leaves a torn line that the next Append cuts off.
		return Entry{}, fmt.Errorf("history: append entry %d to %s: %w; the history before it is intact", e.Seq, l.path, err)
	}
	if err := f.Sync(); err != nil {
		return Entry{}, fmt.Errorf("history: append: fsync %s: %w", l.path, err)
	}
	if size == 0 || lastLine == nil {
		// The first entry of a new log: the directory entry must last too.
		if err := atomicfile.SyncDir(filepath.Dir(l.path)); err != nil {
			return Entry{}, fmt.Errorf("history: append: fsync directory of %s: %w", l.path, err)
		}
	}
	if err := l.writeHead(e.Seq, lineHash(line)); err != nil {
		return Entry{}, err
	}
	return e, nil
}

// checkHead makes sure the head names the log's last entry or the one before
// it (a crash between line and head) before anything is chained onto it. A
// new log gets a head for seq 0 first, so that a log with entries but no head
// is always an error.
func (l *Log) checkHead(pub ed25519.PublicKey, last Entry, lastLine []byte) error {
	h, err := readHead(l.path, pub)
	if errors.Is(err, fs.ErrNotExist) {
		if lastLine != nil {
			return fmt.Errorf("history: append: %s: %w although the log has %d entries; nothing was written: run kule history --verify and restore the head from a backup",
				HeadPath(l.path), ErrHeadMissing, last.Seq)
		}
		return l.writeHead(0, "")
	}
	if err != nil {
		return fmt.Errorf("history: append: %w; nothing was written: run kule history --verify", err)
	}
	n := 0
	if lastLine != nil {
		n = last.Seq
		if !verifySig(pub, last) {
			return fmt.Errorf("history: append: %w: entry %d: bad signature; nothing was written: run kule history --verify", ErrTampered, last.Seq)
		}
	}
	switch {
	case h.Seq == n && (n == 0 || h.Hash == lineHash(lastLine)):
	case h.Seq == n-1 && n > 0 && (h.Seq == 0 || h.Hash == last.Prev):
		// A crash between line and head; the head is rewritten below.
	default:
		return fmt.Errorf("history: append: %w: the head names entry %d but the log ends at entry %d; nothing was written: run kule history --verify",
			ErrTampered, h.Seq, n)
	}
	return nil
}

func (l *Log) writeHead(seq int, hash string) error {
	h := head{Seq: seq, Hash: hash}
	h.Sig = base64.StdEncoding.EncodeToString(ed25519.Sign(l.key, h.signingBytes()))
	b, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("history: head: %w", err)
	}
	if err := atomicfile.Write(HeadPath(l.path), append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("history: write head %s: %w; the entry is in the log and the next append repairs the head", HeadPath(l.path), err)
	}
	return nil
}

func readHead(path string, pub ed25519.PublicKey) (head, error) {
	hp := HeadPath(path)
	b, err := os.ReadFile(hp)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return head{}, err
		}
		return head{}, fmt.Errorf("history: head %s: %w", hp, err)
	}
	var h head
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil || h.Seq < 0 || (h.Seq > 0 && !isHex(h.Hash, 32)) {
		return head{}, fmt.Errorf("history: head %s: %w: it is not a head file", hp, ErrTampered)
	}
	sig, err := base64.StdEncoding.DecodeString(h.Sig)
	if err != nil || !ed25519.Verify(pub, h.signingBytes(), sig) {
		return head{}, fmt.Errorf("history: head %s: %w: bad signature", hp, ErrTampered)
	}
	return h, nil
}

// readTail finds the last complete line of f. complete is the length of the
// file up to and including the last newline; bytes after it are a torn line.
// lastLine is nil when the file holds no complete line.
func readTail(f *os.File) (last Entry, lastLine []byte, size, complete int64, err error) {
	fi, err := f.Stat()
	if err != nil {
		return Entry{}, nil, 0, 0, err
	}
	size = fi.Size()
	// Read backwards in growing chunks until two newlines (or the start) are
	// in view: the end of the last complete line and the one before it.
	chunk := int64(64 << 10)
	for {
		start := max(size-chunk, 0)
		buf := make([]byte, size-start)
		if _, err := f.ReadAt(buf, start); err != nil && err != io.EOF {
			return Entry{}, nil, 0, 0, err
		}
		end := bytes.LastIndexByte(buf, '\n')
		if end < 0 {
			if start == 0 {
				return Entry{}, nil, size, 0, nil
			}
		} else {
			complete = start + int64(end) + 1
			begin := bytes.LastIndexByte(buf[:end], '\n')
			if begin >= 0 || start == 0 {
				lastLine = buf[begin+1 : end]
				e, err := DecodeLine(lastLine)
				if err != nil {
					return Entry{}, nil, 0, 0, fmt.Errorf("last entry: %w", err)
				}
				return e, lastLine, size, complete, nil
			}
		}
		if chunk >= maxLine*2 {
			return Entry{}, nil, 0, 0, fmt.Errorf("%w: last line is longer than %d bytes", ErrBadLine, maxLine)
		}
		chunk *= 4
	}
}

// readLines returns the complete lines of the log (a torn last line is left
// out). A missing log has no lines.
func readLines(path string) ([][]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[:i+1]
	} else {
		b = nil
	}
	var lines [][]byte
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		lines = append(lines, b[:i])
		b = b[i+1:]
	}
	return lines, nil
}

// Entries returns every complete entry in order. It checks each line's form
// but not signatures or the chain; use Verify for that.
func (l *Log) Entries() ([]Entry, error) {
	lines, err := readLines(l.path)
	if err != nil {
		return nil, fmt.Errorf("history: read %s: %w", l.path, err)
	}
	out := make([]Entry, 0, len(lines))
	for i, line := range lines {
		e, err := DecodeLine(line)
		if err != nil {
			return nil, fmt.Errorf("history: %s line %d: %w; run kule history --verify", l.path, i+1, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// Last returns the newest complete entry; ok is false when there is none.
func (l *Log) Last() (e Entry, ok bool, err error) {
	f, err := os.Open(l.path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Entry{}, false, nil
		}
		return Entry{}, false, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	e, line, _, _, err := readTail(f)
	if err != nil {
		return Entry{}, false, fmt.Errorf("history: %s: %w", l.path, err)
	}
	return e, line != nil, nil
}

// VerifyError says which entry does not verify and why.
type VerifyError struct {
	Path    string
	Seq     int // the entry expected at the place of the problem
	Problem string
}

func (e *VerifyError) Error() string {
	return fmt.Sprintf("history: %s: entry %d: %s", e.Path, e.Seq, e.Problem)
}

func (e *VerifyError) Unwrap() error { return ErrTampered }

// Verify checks the log at path and its head against pub: every line is a
// well-formed entry with the next seq, the hash of the line before it and a
// good signature, and the signed head names the last entry (or, after a crash
// between the two writes, the one before it). It detects a changed, removed
// (anywhere, including the last), reordered or inserted entry and a bad
// signature, returning a *VerifyError that names the entry. A missing log
// with no head is an empty history.
func Verify(path string, pub ed25519.PublicKey) error {
	lines, err := readLines(path)
	if err != nil {
		return fmt.Errorf("history: verify %s: %w", path, err)
	}
	bad := func(seq int, format string, args ...any) error {
		return &VerifyError{Path: path, Seq: seq, Problem: fmt.Sprintf(format, args...)}
	}
	prev := ""
	for i, line := range lines {
		want := i + 1
		e, err := DecodeLine(line)
		if err != nil {
			return bad(want, "line %d is not a valid entry (%v)", want, err)
		}
		if e.Seq != want {
			return bad(want, "line %d holds entry %d: an entry was removed, inserted or moved here", want, e.Seq)
		}
		if e.Prev != prev {
			return bad(want, "its prev hash does not match entry %d: an entry before it was changed, removed or inserted", want-1)
		}
		if !verifySig(pub, e) {
			return bad(want, "bad signature: the entry was changed or not signed by this key")
		}
		prev = lineHash(line)
	}
	n := len(lines)
	h, err := readHead(path, pub)
	if errors.Is(err, fs.ErrNotExist) {
		if n == 0 {
			return nil
		}
		return bad(n, "%s: the signed head file is missing, so removed last entries cannot be ruled out", HeadPath(path))
	}
	if err != nil {
		return &VerifyError{Path: path, Seq: n, Problem: err.Error()}
	}
	switch {
	case h.Seq > n:
		return bad(n+1, "the signed head names entry %d but the log ends at entry %d: the last entries were removed", h.Seq, n)
	case h.Seq == n && n > 0 && h.Hash != lineHash(lines[n-1]):
		return bad(n, "the signed head names another last entry: the last entry was replaced")
	case h.Seq == n-1 && n > 1 && h.Hash != lineHash(lines[n-2]):
		return bad(n-1, "the signed head names another entry %d: entries were replaced", h.Seq)
	case h.Seq < n-1:
		return bad(h.Seq+1, "the log holds %d entries, more than one past the signed head (entry %d): entries were added behind Kule's back", n, h.Seq)
	}
	return nil
}
