// Package framing reads HTTP/1.1 requests strictly: every request whose
// length two readers could take differently is refused, so that the proxy and
// the server behind it always agree where one request ends and the next one
// begins (no request smuggling).
//
// Refused (ErrBadFraming, the caller answers 400 and closes the connection):
// a line ending in a bare CR or a bare LF; obs-fold (a header line starting
// with a space or tab); whitespace between a header name and its colon; control
// characters in a header value; Content-Length and Transfer-Encoding together;
// two Content-Lengths (even equal ones written as a list); a Content-Length that
// is not plain digits or overflows; any Transfer-Encoding other than exactly
// "chunked" (obfuscations such as "chunked, identity", "xchunked" or a second
// Transfer-Encoding header); a chunk size that is not hex or overflows; chunk
// data not followed by CRLF; a version other than HTTP/1.1 or HTTP/1.0; more
// than one Host header; and heads larger than MaxHeadBytes.
package framing

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Errors a caller can test for.
var (
	// ErrBadFraming is a request whose framing is ambiguous or malformed.
	ErrBadFraming = errors.New("framing: ambiguous or malformed request")
	// ErrTooLarge is a request head or chunk line over the limits.
	ErrTooLarge = errors.New("framing: request head too large")
	// ErrVersion is a request in a version other than HTTP/1.x (HTTP/2's
	// preface included).
	ErrVersion = errors.New("framing: only HTTP/1.1 is spoken here")
)

// Limits on a request head.
const (
	MaxHeadBytes    = 64 << 10
	MaxHeaderFields = 200
	maxChunkLine    = 4096
)

// Field is one header line, as received (name case kept).
type Field struct {
	Name  string
	Value string
}

// Header is the ordered list of a request's header fields.
type Header []Field

// Get returns the first value of name (case-insensitive) and whether it is there.
func (h Header) Get(name string) (string, bool) {
	for _, f := range h {
		if strings.EqualFold(f.Name, name) {
			return f.Value, true
		}
	}
	return "", false
}

// Count returns how many fields are called name.
func (h Header) Count(name string) int {
	n := 0
	for _, f := range h {
		if strings.EqualFold(f.Name, name) {
			n++
		}
	}
	return n
}

// Del returns h without the fields called name.
func (h Header) Del(name string) Header {
	out := h[:0:0]
	for _, f := range h {
		if !strings.EqualFold(f.Name, name) {
			out = append(out, f)
		}
	}
	return out
}

// Request is one request head plus its framed body.
type Request struct {
	Method string
	Target string // as sent: origin-form, absolute-form or authority-form
	Proto  string // "HTTP/1.1" or "HTTP/1.0"
	Header Header

	// Chunked is true when the body came with Transfer-Encoding: chunked;
	// otherwise ContentLength is the body's length (0 when none was given).
	Chunked       bool
	ContentLength int64

	// Body reads the body, decoded from chunks when Chunked. It must be read
	// to EOF before the next request is read from the same reader. A framing
	// error inside the body is returned as ErrBadFraming.
	Body io.Reader
}

// Close reports whether the client asked to close the connection after this
// request (Connection: close, or HTTP/1.0 without keep-alive).
func (r *Request) Close() bool {
	conn, _ := r.Header.Get("Connection")
	toks := strings.Split(strings.ToLower(conn), ",")
	for _, t := range toks {
		switch strings.TrimSpace(t) {
		case "close":
			return true
		case "keep-alive":
			if r.Proto == "HTTP/1.0" {
				return false
			}
		}
	}
	return r.Proto == "HTTP/1.0"
}

// ReadRequest reads one request head from br and frames its body. io.EOF
// means the connection ended cleanly before a new request began.
func ReadRequest(br *bufio.Reader) (*Request, error) {
	budget := MaxHeadBytes
	line, err := readLine(br, &budget)
	if err != nil {
		if errors.Is(err, io.EOF) && line == nil {
			return nil, io.EOF
		}
		return nil, err
	}
	req, err := parseRequestLine(line)
	if err != nil {
		return nil, err
	}
	req.Header, err = readFields(br, &budget)
	if err != nil {
		return nil, err
	}
	if err := frame(br, req); err != nil {
		return nil, err
	}
	return req, nil
}

func bad(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadFraming, fmt.Sprintf(format, args...))
}

// readLine reads one line that must end in CRLF and returns it without the
// CRLF. A bare CR or bare LF anywhere is refused.
func readLine(br *bufio.Reader, budget *int) ([]byte, error) {
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		*budget -= len(frag)
		if *budget < 0 {
			return nil, ErrTooLarge
		}
		line = append(line, frag...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if len(line) == 0 {
				return nil, err
			}
			return line, bad("connection ended inside a line")
		}
		break
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, bad("line ends in a bare LF")
	}
	line = line[:len(line)-2]
	if bytes.IndexByte(line, '\r') >= 0 {
		return nil, bad("bare CR inside a line")
	}
	return line, nil
}

func isTchar(c byte) bool {
	if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

func isToken(s []byte) bool {
	if len(s) == 0 {
		return false
	}
	for _, c := range s {
		if !isTchar(c) {
			return false
		}
	}
	return true
}

func parseRequestLine(line []byte) (*Request, error) {
	// PRI * HTTP/2.0 is the HTTP/2 preface: say so plainly.
	if bytes.HasPrefix(line, []byte("PRI * HTTP/2")) {
		return nil, ErrVersion
	}
	parts := bytes.Split(line, []byte(" "))
	if len(parts) != 3 {
		return nil, bad("request line is not METHOD SP TARGET SP VERSION")
	}
	method, target, proto := parts[0], parts[1], parts[2]
	if !isToken(method) {
		return nil, bad("method is not a token")
	}
	if len(target) == 0 {
		return nil, bad("empty request target")
	}
	for _, c := range target {
		if c <= ' ' || c == 0x7f {
			return nil, bad("control character or space in the request target")
		}
	}
	switch string(proto) {
	case "HTTP/1.1", "HTTP/1.0":
	default:
		if bytes.HasPrefix(proto, []byte("HTTP/")) {
			return nil, ErrVersion
		}
		return nil, bad("version is not HTTP/1.1")
	}
	return &Request{Method: string(method), Target: string(target), Proto: string(proto)}, nil
}

// readFields reads header (or trailer) lines up to the empty line.
func readFields(br *bufio.Reader, budget *int) (Header, error) {
	var h Header
	for {
		line, err := readLine(br, budget)
		if err != nil {
			return nil, err
		}
		if len(line) == 0 {
			return h, nil
		}
		if line[0] == ' ' || line[0] == '\t' {
			return nil, bad("obs-fold header line")
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			return nil, bad("header line without a name and colon")
		}
		name := line[:colon]
		if !isToken(name) {
			return nil, bad("header name %q is not a token", name)
		}
		value := bytes.Trim(line[colon+1:], " \t")
		for _, c := range value {
			if c < ' ' && c != '\t' || c == 0x7f {
				return nil, bad("control character in header %s", name)
			}
		}
		if len(h) >= MaxHeaderFields {
			return nil, ErrTooLarge
		}
		h = append(h, Field{Name: string(name), Value: string(value)})
	}
}

// frame decides the body's length from the head, refusing every ambiguity.
func frame(br *bufio.Reader, req *Request) error {
	if req.Header.Count("Host") > 1 {
		return bad("more than one Host header")
	}
	if req.Proto == "HTTP/1.1" && req.Header.Count("Host") == 0 {
		return bad("HTTP/1.1 request without Host")
	}
	nTE := req.Header.Count("Transfer-Encoding")
	nCL := req.Header.Count("Content-Length")
	if nTE > 0 && nCL > 0 {
		return bad("both Content-Length and Transfer-Encoding")
	}
	if nTE > 1 {
		return bad("more than one Transfer-Encoding header")
	}
	if nTE == 1 {
		te, _ := req.Header.Get("Transfer-Encoding")
		if !strings.EqualFold(te, "chunked") {
			return bad("Transfer-Encoding %q is not exactly chunked", te)
		}
		if req.Proto != "HTTP/1.1" {
			return bad("Transfer-Encoding in an HTTP/1.0 request")
		}
		req.Chunked = true
		req.ContentLength = -1
		req.Body = &chunkedReader{br: br}
		return nil
	}
	var cl int64
	seen := ""
	for _, f := range req.Header {
		if !strings.EqualFold(f.Name, "Content-Length") {
			continue
		}
		if seen != "" && f.Value != seen {
			return bad("two different Content-Lengths")
		}
		seen = f.Value
		n, err := parseLength(f.Value)
		if err != nil {
			return err
		}
		cl = n
	}
	req.ContentLength = cl
	req.Body = io.LimitReader(br, cl)
	if cl == 0 {
		req.Body = eofReader{}
	}
	return nil
}

func parseLength(s string) (int64, error) {
	if s == "" || len(s) > 18 {
		return 0, bad("Content-Length %q is not a length", s)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, bad("Content-Length %q is not plain digits", s)
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, bad("Content-Length %q overflows", s)
	}
	return n, nil
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// chunkedReader decodes a chunked body strictly.
type chunkedReader struct {
	br      *bufio.Reader
	left    int64 // bytes left in the current chunk
	started bool
	done    bool
	err     error
}

func (c *chunkedReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if c.done {
		return 0, io.EOF
	}
	if c.left == 0 {
		if c.started {
			// chunk data must be followed by exactly CRLF
			if err := c.expectCRLF(); err != nil {
				c.err = err
				return 0, err
			}
		}
		c.started = true
		size, err := c.readSize()
		if err != nil {
			c.err = err
			return 0, err
		}
		if size == 0 {
			budget := MaxHeadBytes
			if _, err := readFields(c.br, &budget); err != nil { // trailers, dropped
				c.err = err
				return 0, err
			}
			c.done = true
			return 0, io.EOF
		}
		c.left = size
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.br.Read(p)
	c.left -= int64(n)
	if err == io.EOF {
		c.err = bad("connection ended inside a chunk")
		return n, c.err
	}
	return n, err
}

func (c *chunkedReader) expectCRLF() error {
	var b [2]byte
	if _, err := io.ReadFull(c.br, b[:]); err != nil {
		return bad("connection ended after chunk data")
	}
	if b != [2]byte{'\r', '\n'} {
		return bad("chunk data not followed by CRLF")
	}
	return nil
}

func (c *chunkedReader) readSize() (int64, error) {
	budget := maxChunkLine
	line, err := readLine(c.br, &budget)
	if err != nil {
		if errors.Is(err, ErrTooLarge) {
			return 0, bad("chunk size line too long")
		}
		if errors.Is(err, ErrBadFraming) {
			return 0, err
		}
		return 0, bad("connection ended before a chunk size")
	}
	hex := line
	if i := bytes.IndexByte(line, ';'); i >= 0 {
		hex = line[:i]
		for _, ch := range line[i:] {
			if ch < ' ' && ch != '\t' || ch == 0x7f {
				return 0, bad("control character in a chunk extension")
			}
		}
	}
	if len(hex) == 0 {
		return 0, bad("empty chunk size")
	}
	if len(hex) > 15 {
		return 0, bad("chunk size overflows")
	}
	var n int64
	for _, ch := range hex {
		var d byte
		switch {
		case ch >= '0' && ch <= '9':
			d = ch - '0'
		case ch >= 'a' && ch <= 'f':
			d = ch - 'a' + 10
		case ch >= 'A' && ch <= 'F':
			d = ch - 'A' + 10
		default:
			return 0, bad("chunk size %q is not hex", hex)
		}
		n = n<<4 | int64(d)
	}
	return n, nil
}

// HopByHop lists the header fields a proxy never forwards.
var HopByHop = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "TE", "Trailer", "Transfer-Encoding", "Upgrade",
	"Content-Length", "Expect",
}

// WriteHead writes a request head in canonical framing: the fields of h
// without hop-by-hop ones (and without those the Connection header names),
// then Content-Length or Transfer-Encoding: chunked as the body needs.
func WriteHead(w io.Writer, method, target string, h Header, chunked bool, length int64, extra ...Field) error {
	var b bytes.Buffer
	b.WriteString(method + " " + target + " HTTP/1.1\r\n")
	drop := map[string]bool{}
	for _, n := range HopByHop {
		drop[strings.ToLower(n)] = true
	}
	if conn, ok := h.Get("Connection"); ok {
		for _, t := range strings.Split(conn, ",") {
			drop[strings.ToLower(strings.TrimSpace(t))] = true
		}
	}
	for _, f := range h {
		if drop[strings.ToLower(f.Name)] {
			continue
		}
		b.WriteString(f.Name + ": " + f.Value + "\r\n")
	}
	for _, f := range extra {
		b.WriteString(f.Name + ": " + f.Value + "\r\n")
	}
	switch {
	case chunked:
		b.WriteString("Transfer-Encoding: chunked\r\n")
	case length > 0 || methodWantsLength(method):
		b.WriteString("Content-Length: " + strconv.FormatInt(length, 10) + "\r\n")
	}
	b.WriteString("\r\n")
	_, err := w.Write(b.Bytes())
	return err
}

func methodWantsLength(m string) bool { return m == "POST" || m == "PUT" || m == "PATCH" }

// ChunkedWriter writes a body in chunks; Close writes the last chunk.
type ChunkedWriter struct{ W io.Writer }

func (c ChunkedWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if _, err := fmt.Fprintf(c.W, "%x\r\n", len(p)); err != nil {
		return 0, err
	}
	if _, err := c.W.Write(p); err != nil {
		return 0, err
	}
	if _, err := io.WriteString(c.W, "\r\n"); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close ends the chunked body.
func (c ChunkedWriter) Close() error {
	_, err := io.WriteString(c.W, "0\r\n\r\n")
	return err
}
