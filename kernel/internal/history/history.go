// Package history keeps a task's signed, hash-chained history
// (tasks/<id>/history.jsonl): every commit, undo and approval is one JSON
// line holding the hash of the line before it and an ed25519 signature.
//
// A signed head file beside the log (history.jsonl.head) names the sequence
// number and hash of the last entry, so that removing the last entries is
// detected as well as changing, removing, reordering or inserting any other.
//
// Appending is crash-safe: the line is written with one O_APPEND write and
// fsynced before the head is replaced (temp file, fsync, rename, directory
// fsync). A crash can leave a torn last line without a newline; it was never
// acknowledged, so readers ignore it and the next Append cuts it off. A crash
// between the line and the head leaves the head one entry behind; Verify
// accepts that (the entry is signed) and the next Append brings the head up
// to date.
package history

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Errors a caller can test for with errors.Is.
var (
	// ErrTampered: the log or its head does not verify; the error names the
	// entry and what is wrong.
	ErrTampered = errors.New("history does not verify")
	// ErrBadLine: a line of the log is not a well-formed entry.
	ErrBadLine = errors.New("malformed history line")
	// ErrKeyDamaged: the signing key file exists but is not a key.
	ErrKeyDamaged = errors.New("history key file is damaged")
	// ErrKeyExposed: the signing key file can be read by other users.
	ErrKeyExposed = errors.New("history key file is readable by others")
	// ErrHeadMissing: the log has entries but its signed head file is gone.
	ErrHeadMissing = errors.New("history head file is missing")
)

// Entry is one line of the history.
type Entry struct {
	Seq  int             `json:"seq"`  // 1, 2, 3 …
	Time time.Time       `json:"time"` // UTC
	Kind string          `json:"kind"` // "commit", "undo", "approval", …
	Data json.RawMessage `json:"data"` // what the kind records, compact JSON
	Prev string          `json:"prev"` // hex sha256 of the previous line ("" for the first)
	Sig  string          `json:"sig"`  // base64 ed25519 over SigningBytes
}

// maxLine bounds one line, so that a damaged log cannot make a reader
// allocate without limit.
const maxLine = 16 << 20

const (
	entryDomain = "kule-history-entry-v1\n"
	headDomain  = "kule-history-head-v1\n"
)

// unsigned is the entry without its signature, in the field order of a line.
type unsigned struct {
	Seq  int             `json:"seq"`
	Time time.Time       `json:"time"`
	Kind string          `json:"kind"`
	Data json.RawMessage `json:"data"`
	Prev string          `json:"prev"`
}

// SigningBytes are the canonical bytes an entry's signature covers: a domain
// string and the entry's JSON without the sig field.
func (e Entry) SigningBytes() ([]byte, error) {
	b, err := json.Marshal(unsigned{e.Seq, e.Time, e.Kind, e.Data, e.Prev})
	if err != nil {
		return nil, fmt.Errorf("history: encode entry %d: %w", e.Seq, err)
	}
	return append([]byte(entryDomain), b...), nil
}

// encodeLine returns the canonical line of a signed entry, without newline.
func encodeLine(e Entry) ([]byte, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("history: encode entry %d: %w", e.Seq, err)
	}
	return b, nil
}

// DecodeLine parses one line (without its newline) into an entry. It checks
// the form of every field and that the line is exactly the canonical
// encoding of the entry, so two different lines never decode to one entry;
// it does not check the signature or the chain (Verify does).
func DecodeLine(line []byte) (Entry, error) {
	var e Entry
	if len(line) > maxLine {
		return e, fmt.Errorf("%w: %d bytes is longer than %d", ErrBadLine, len(line), maxLine)
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return Entry{}, fmt.Errorf("%w: %v", ErrBadLine, err)
	}
	if dec.More() {
		return Entry{}, fmt.Errorf("%w: data after the entry", ErrBadLine)
	}
	switch {
	case e.Seq < 1:
		return Entry{}, fmt.Errorf("%w: seq %d is not positive", ErrBadLine, e.Seq)
	case e.Kind == "":
		return Entry{}, fmt.Errorf("%w: entry %d has no kind", ErrBadLine, e.Seq)
	case e.Data == nil:
		return Entry{}, fmt.Errorf("%w: entry %d has no data", ErrBadLine, e.Seq)
	case e.Prev != "" && !isHex(e.Prev, sha256.Size):
		return Entry{}, fmt.Errorf("%w: entry %d: prev is not a hex sha256", ErrBadLine, e.Seq)
	}
	sig, err := base64.StdEncoding.DecodeString(e.Sig)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return Entry{}, fmt.Errorf("%w: entry %d: sig is not a base64 ed25519 signature", ErrBadLine, e.Seq)
	}
	canon, err := encodeLine(e)
	if err != nil {
		return Entry{}, fmt.Errorf("%w: %v", ErrBadLine, err)
	}
	if !bytes.Equal(canon, line) {
		return Entry{}, fmt.Errorf("%w: entry %d is not in canonical form", ErrBadLine, e.Seq)
	}
	return e, nil
}

// lineHash is the hex sha256 of a line without its newline; the next entry's
// Prev holds it.
func lineHash(line []byte) string {
	h := sha256.Sum256(line)
	return hex.EncodeToString(h[:])
}

func isHex(s string, n int) bool {
	if len(s) != 2*n {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && s == strings.ToLower(s)
}

func sign(key ed25519.PrivateKey, e *Entry) error {
	msg, err := e.SigningBytes()
	if err != nil {
		return err
	}
	e.Sig = base64.StdEncoding.EncodeToString(ed25519.Sign(key, msg))
	return nil
}

func verifySig(pub ed25519.PublicKey, e Entry) bool {
	sig, err := base64.StdEncoding.DecodeString(e.Sig)
	if err != nil {
		return false
	}
	msg, err := e.SigningBytes()
	if err != nil {
		return false
	}
	return ed25519.Verify(pub, msg, sig)
}
