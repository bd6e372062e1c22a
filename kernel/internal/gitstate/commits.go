package gitstate

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// This file reads the three kinds of git object the package follows —
// commits, annotated tags and trees — from go-git's object storage. It
// decodes only the fields Kule uses, the way go-git's object package does
// (which Kule does not link: it carries OpenPGP for signature checks Kule
// never makes).

// Errors of the object decoders.
var (
	errMalformedCommit = errors.New("malformed commit")
	errMalformedTag    = errors.New("malformed tag")
	errMalformedTree   = errors.New("malformed tree")
)

// commit is what the package reads of a commit object.
type commit struct {
	Hash    plumbing.Hash
	Tree    plumbing.Hash
	Parents []plumbing.Hash
	// When is the committer's time; zero when the committer line is
	// missing, out of place or has no time.
	When time.Time
}

// treeEntry is one entry of a tree object.
type treeEntry struct {
	Name string
	Mode filemode.FileMode
	Hash plumbing.Hash
}

// readCommit reads the commit h. An object of another type is
// plumbing.ErrObjectNotFound, as go-git's storage reports it.
func readCommit(st *filesystem.Storage, h plumbing.Hash) (*commit, error) {
	obj, err := st.EncodedObject(plumbing.CommitObject, h)
	if err != nil {
		return nil, err
	}
	return decodeCommitObject(obj)
}

func decodeCommitObject(obj plumbing.EncodedObject) (c *commit, err error) {
	if obj.Type() != plumbing.CommitObject {
		return nil, plumbing.ErrInvalidType
	}
	rc, err := obj.Reader()
	if err != nil {
		return nil, err
	}
	defer closeInto(rc, &err)
	c, err = decodeCommit(rc)
	if err != nil {
		return nil, err
	}
	c.Hash = obj.Hash()
	return c, nil
}

// decodeCommit reads the headers of a commit: `tree` first, then the
// parents in one block, then `author` and `committer` at their places.
// Headers out of place are ignored, as git ignores them.
func decodeCommit(r io.Reader) (*commit, error) {
	h := newHeaderReader(r)
	key, val, err := h.next()
	if errors.Is(err, errEndOfHeaders) {
		return nil, fmt.Errorf("%w: missing tree header", errMalformedCommit)
	}
	if err != nil {
		return nil, err
	}
	if key != "tree" {
		return nil, fmt.Errorf("%w: tree header must be first", errMalformedCommit)
	}
	c := &commit{}
	if c.Tree, err = parseID(val, errMalformedCommit, "tree"); err != nil {
		return nil, err
	}
	for key, val, err = h.next(); err == nil && key == "parent"; key, val, err = h.next() {
		p, err := parseID(val, errMalformedCommit, "parent")
		if err != nil {
			return nil, err
		}
		c.Parents = append(c.Parents, p)
	}
	if err == nil && key == "author" {
		key, val, err = h.next()
	}
	if err == nil && key == "committer" {
		c.When = signatureTime(val)
	}
	if err != nil && !errors.Is(err, errEndOfHeaders) {
		return nil, err
	}
	return c, nil
}

// decodeTagTarget reads the object an annotated tag names, checking the
// `object`, `type` and `tag` headers that must open it.
func decodeTagTarget(r io.Reader) (plumbing.Hash, error) {
	h := newHeaderReader(r)
	key, val, err := h.next()
	if errors.Is(err, errEndOfHeaders) {
		return plumbing.ZeroHash, fmt.Errorf("%w: missing object header", errMalformedTag)
	}
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if key != "object" {
		return plumbing.ZeroHash, fmt.Errorf("%w: object header must be first", errMalformedTag)
	}
	target, err := parseID(val, errMalformedTag, "object")
	if err != nil || h.atEOF {
		return target, err
	}
	key, val, err = h.next()
	if err != nil || key != "type" {
		return plumbing.ZeroHash, fmt.Errorf("%w: type header must follow object", errMalformedTag)
	}
	if _, err := plumbing.ParseObjectType(string(val)); err != nil {
		return plumbing.ZeroHash, err
	}
	if h.atEOF {
		return target, nil
	}
	if key, _, err = h.next(); err != nil || key != "tag" {
		return plumbing.ZeroHash, fmt.Errorf("%w: tag header must follow type", errMalformedTag)
	}
	return target, nil
}

// errEndOfHeaders: the blank line (or the end of the object) after the
// headers was reached.
var errEndOfHeaders = errors.New("end of headers")

// headerReader reads `key value` header lines up to the blank line. A
// continuation line (a leading space) has the empty key, so a header after
// it is out of place, as it is for git.
type headerReader struct {
	r *bufio.Reader
	// atEOF: the line next returned last was the object's end, with no
	// newline after it.
	atEOF bool
}

func newHeaderReader(r io.Reader) *headerReader {
	return &headerReader{r: bufio.NewReader(r)}
}

func (h *headerReader) next() (key string, val []byte, err error) {
	if h.atEOF {
		return "", nil, errEndOfHeaders
	}
	line, err := h.r.ReadBytes('\n')
	switch {
	case err == io.EOF:
		h.atEOF = true
	case err != nil:
		return "", nil, err
	default:
		line = line[:len(line)-1]
	}
	if len(line) == 0 {
		h.atEOF = true
		return "", nil, errEndOfHeaders
	}
	k, v, _ := bytes.Cut(line, []byte{' '})
	return string(k), v, nil
}

// parseID parses a 40-digit hex object id.
func parseID(b []byte, malformed error, what string) (plumbing.Hash, error) {
	if !plumbing.IsHash(string(b)) {
		return plumbing.ZeroHash, fmt.Errorf("%w: bad %s hash", malformed, what)
	}
	return plumbing.NewHash(string(b)), nil
}

// signatureTime is the time of a `Name <email> 1234567890 +0100`
// signature, zero when it has none.
func signatureTime(b []byte) time.Time {
	open, end := bytes.LastIndexByte(b, '<'), bytes.LastIndexByte(b, '>')
	if open < 0 || end < open || end+2 >= len(b) {
		return time.Time{}
	}
	rest := b[end+2:]
	if i := bytes.IndexByte(rest, ' '); i >= 0 {
		rest = rest[:i]
	}
	ts, err := strconv.ParseInt(string(rest), 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.Unix(ts, 0)
}

// readTree reads the entries of the tree h.
func readTree(st *filesystem.Storage, h plumbing.Hash) (ents []treeEntry, err error) {
	obj, err := st.EncodedObject(plumbing.TreeObject, h)
	if err != nil {
		return nil, err
	}
	rc, err := obj.Reader()
	if err != nil {
		return nil, err
	}
	defer closeInto(rc, &err)
	return decodeTree(rc)
}

// decodeTree reads `<octal mode> <name>\0<20-byte id>` entries. Modes are
// made canonical as git reads them (any 0100xxx is 100644 or 100755, an
// unknown type a submodule).
func decodeTree(r io.Reader) ([]treeEntry, error) {
	br := bufio.NewReader(r)
	var out []treeEntry
	for {
		m, err := br.ReadString(' ')
		if err == io.EOF {
			if m != "" {
				return nil, fmt.Errorf("%w: missing mode terminator", errMalformedTree)
			}
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		mode, err := filemode.New(m[:len(m)-1])
		if err != nil {
			return nil, fmt.Errorf("%w: malformed mode", errMalformedTree)
		}
		name, err := br.ReadString(0)
		if err == io.EOF {
			return nil, fmt.Errorf("%w: missing filename terminator", errMalformedTree)
		}
		if err != nil {
			return nil, err
		}
		if len(name) == 1 {
			return nil, fmt.Errorf("%w: empty filename", errMalformedTree)
		}
		var h plumbing.Hash
		if _, err := io.ReadFull(br, h[:]); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, fmt.Errorf("%w: truncated object id", errMalformedTree)
			}
			return nil, err
		}
		out = append(out, treeEntry{Name: name[:len(name)-1], Mode: canonicalMode(mode), Hash: h})
	}
}

// canonicalMode maps a tree entry's mode to the one git reads it as.
func canonicalMode(m filemode.FileMode) filemode.FileMode {
	switch m & 0o170000 {
	case 0o040000:
		return filemode.Dir
	case 0o100000:
		if m&0o111 != 0 {
			return filemode.Executable
		}
		return filemode.Regular
	case 0o120000:
		return filemode.Symlink
	default:
		return filemode.Submodule
	}
}

// closeInto closes c and keeps its error in *err when there was none.
func closeInto(c io.Closer, err *error) {
	if cerr := c.Close(); *err == nil {
		*err = cerr
	}
}
