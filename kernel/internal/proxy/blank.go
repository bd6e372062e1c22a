package proxy

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/bzip2"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// guard names one check a test can take away (Config.off) to show the
// attack the check stops succeeding without it. Production code never sets
// Config.off.
type guard uint

const (
	guardStatus         guard = 1 << iota // the status line's reason phrase is blanked
	guardHeaderNames                      // a header's name is blanked, in any case
	guardTrailers                         // chunked trailers are blanked
	guardEncodings                        // every Content-Encoding line and coding is decoded or refused
	guardNested                           // a compressed body or archive is opened and searched
	guardNonGlobal                        // names resolving to non-global addresses are refused
	guardRegistryShape                    // registry requests must have the shape of what a registry serves
	guardMethodOverride                   // method-override headers and fields are refused at registries
	guardEncodedForms                     // the value's base64, hex, URL and JSON forms are blanked too
	guardRanges                           // Range is dropped from requests to a secret's host
	guardNamedLocal                       // an IP literal reaches a non-global address only when named
	guardPlainLoopback                    // keys go over plain HTTP only to a named loopback endpoint
	guardFramePaths                       // in a WebSocket frame a placeholder is replaced only at the secret's FramePaths
	guardWSExtensions                     // a WebSocket extension the server agrees to unasked is refused
	guardSpentLease                       // a lease that gives no value refuses the request
)

// on reports whether the check g is in force.
func (p *Proxy) on(g guard) bool { return p.cfg.off&g == 0 }

// Limits of the search through a compressed body (see nestedLeak).
const (
	// maxNestedBody is the most of a compressed body the proxy holds to
	// search it; a larger one is refused.
	maxNestedBody = 64 << 20
	// maxNestedOut is the most the layers of one body may unpack to, all
	// together: a compression bomb is refused, not unpacked.
	maxNestedOut = 256 << 20
	// maxNestedDepth is how many layers deep (gzip in zip in gzip …) the
	// proxy looks before it refuses.
	maxNestedDepth = 8
)

// errUnsure means the proxy cannot tell whether a body holds a secret.
var errUnsure = errors.New("cannot be searched")

// blankHeaders blanks every secret value in the status line's reason phrase,
// in header values and in header names (names in any case: the parser
// changes a name's case, so "x-sk_live_…" reaches the client as "X-Sk_live_…").
func (p *Proxy) blankHeaders(resp *http.Response, vals [][]byte) {
	if p.on(guardStatus) {
		resp.Status = blankString(resp.Status, vals)
	}
	blankHeaderMap(resp.Header, vals, p.on(guardHeaderNames))
}

// blankHeaderMap blanks the values (and, with names, the names) of h in place.
func blankHeaderMap(h http.Header, vals [][]byte, names bool) {
	for k, vs := range h {
		for i := range vs {
			vs[i] = blankString(vs[i], vals)
		}
		if !names {
			continue
		}
		if nk := blankFold(k, vals); nk != k {
			delete(h, k)
			h[nk] = append(h[nk], vs...)
		}
	}
}

// blankFold replaces every value in s, compared without regard to case,
// with as many '*'.
func blankFold(s string, vals [][]byte) string {
	low := []byte(strings.ToLower(s))
	if len(low) != len(s) {
		return s // not ASCII-only: case folding changed its length; no header name is
	}
	out := []byte(s)
	for _, v := range vals {
		lv := bytes.ToLower(v)
		if len(lv) == 0 {
			continue
		}
		for off := 0; ; {
			i := bytes.Index(low[off:], lv)
			if i < 0 {
				break
			}
			for n := off + i; n < off+i+len(lv); n++ {
				out[n] = '*'
			}
			off += i + len(lv)
		}
	}
	return string(out)
}

// contentCodings lists the response's content codings in the order they
// were applied, from every Content-Encoding line ("identity" dropped). A
// reader that looks only at the first line would leave a second one's
// gzip to the client, which decodes it.
func (p *Proxy) contentCodings(h http.Header) []string {
	if !p.on(guardEncodings) {
		if enc := strings.ToLower(h.Get("Content-Encoding")); enc != "" && enc != "identity" {
			return []string{enc}
		}
		return nil
	}
	var out []string
	for _, line := range h.Values("Content-Encoding") {
		for _, c := range strings.Split(line, ",") {
			c = strings.ToLower(strings.TrimSpace(c))
			if c != "" && c != "identity" {
				out = append(out, c)
			}
		}
	}
	return out
}

// decodeBody undoes the content codings (the last applied first). It
// returns the reason to refuse the response when a coding is one the proxy
// cannot read.
func decodeBody(body io.Reader, codings []string) (io.Reader, string) {
	for i := len(codings) - 1; i >= 0; i-- {
		switch c := codings[i]; c {
		case "gzip", "x-gzip":
			zr, err := gzip.NewReader(body)
			if err != nil {
				return nil, "its gzip body could not be read (" + err.Error() + ")"
			}
			body = zr
		case "deflate":
			r, err := deflateReader(body)
			if err != nil {
				return nil, "its deflate body could not be read (" + err.Error() + ")"
			}
			body = r
		default:
			return nil, "it came in " + clip(c) + " encoding, which Kule cannot decode"
		}
	}
	return body, ""
}

// deflateReader reads "deflate" as the standard means it (zlib) or as some
// servers send it (a bare deflate stream).
func deflateReader(r io.Reader) (io.Reader, error) {
	br := newPeeker(r)
	head, err := br.peek(2)
	if err != nil && len(head) < 2 {
		return nil, err
	}
	if isZlib(head) {
		return zlib.NewReader(br)
	}
	return flate.NewReader(br), nil
}

func isZlib(b []byte) bool {
	return len(b) >= 2 && b[0]&0x0f == 8 && b[0]>>4 <= 7 && (uint16(b[0])<<8|uint16(b[1]))%31 == 0
}

// magic is the start of a compressed format or archive.
type magic struct {
	prefix   string
	name     string
	readable bool // the proxy can open it
}

var magics = []magic{
	{"\x1f\x8b", "gzip", true},
	{"BZh", "bzip2", true},
	{"PK\x03\x04", "zip", true},
	{"PK\x05\x06", "zip", true},
	{"\xfd7zXZ\x00", "xz", false},
	{"\x28\xb5\x2f\xfd", "zstd", false},
	{"7z\xbc\xaf\x27\x1c", "7z", false},
	{"Rar!\x1a\x07", "rar", false},
	{"\x04\x22\x4d\x18", "lz4", false},
	{"\x1f\x9d", "compress", false},
	{"\x1f\xa0", "compress", false},
	{"LZIP", "lzip", false},
	{"\x5d\x00\x00", "lzma", false},
}

// unreadableTypes are media types of compressed data the proxy cannot open
// (brotli has no magic number: only its type tells).
var unreadableTypes = map[string]bool{
	"application/x-brotli":         true,
	"application/brotli":           true,
	"application/x-xz":             true,
	"application/zstd":             true,
	"application/x-zstd":           true,
	"application/x-7z-compressed":  true,
	"application/vnd.rar":          true,
	"application/x-rar-compressed": true,
	"application/x-compress":       true,
	"application/x-lzma":           true,
	"application/x-lzip":           true,
	"application/x-lz4":            true,
}

// sniff names the compressed format b starts with ("" for none). more is
// true when b is too short to tell: it is the start of some magic.
func sniff(b []byte) (m magic, ok, more bool) {
	for _, mg := range magics {
		switch {
		case bytes.HasPrefix(b, []byte(mg.prefix)):
			return mg, true, false
		case len(b) < len(mg.prefix) && strings.HasPrefix(mg.prefix, string(b)):
			more = true
		}
	}
	return magic{}, false, more
}

// nestedLeak reads the (decoded) body far enough to tell whether it is
// compressed data or an archive. If it is, it holds the whole body, opens
// every layer and member, and returns the reason to refuse the response
// when a secret value is inside or the body cannot be opened; the body it
// returns then gives the same bytes. Otherwise it returns a reader of the
// body unchanged, without waiting for more than the first read (a
// streamed answer is not held).
func nestedLeak(body io.Reader, contentType string, vals [][]byte) (io.Reader, string) {
	if mt, _, err := mime.ParseMediaType(contentType); err == nil && unreadableTypes[mt] {
		return nil, "its body is " + mt + ", which Kule cannot open to look for the secret"
	}
	pk := newPeeker(body)
	var m magic
	for {
		var ok, more bool
		m, ok, more = sniff(pk.buf)
		if ok || !more || pk.err != nil {
			if !ok {
				return pk, ""
			}
			break
		}
		pk.fill()
	}
	if !m.readable {
		return nil, "its body is " + m.name + " data, which Kule cannot open to look for the secret"
	}
	data, err := io.ReadAll(io.LimitReader(pk, maxNestedBody+1))
	if err != nil {
		return nil, "its " + m.name + " body could not be read (" + err.Error() + ")"
	}
	if len(data) > maxNestedBody {
		return nil, fmt.Sprintf("its %s body is larger than the %d MiB Kule opens to look for the secret", m.name, maxNestedBody>>20)
	}
	budget := int64(maxNestedOut)
	found, err := holds(data, vals, 0, &budget)
	switch {
	case err != nil:
		return nil, "its " + m.name + " body " + err.Error()
	case found:
		return nil, "the secret's value is inside its " + m.name + " body, where Kule cannot blank it"
	}
	return bytes.NewReader(data), ""
}

// holds reports whether data, or anything packed inside it (gzip, bzip2,
// zlib, zip members, tar members, layer upon layer), holds a value.
// budget bounds the bytes unpacked in all.
func holds(data []byte, vals [][]byte, depth int, budget *int64) (bool, error) {
	for _, v := range vals {
		if len(v) > 0 && bytes.Contains(data, v) {
			return true, nil
		}
	}
	m, ok, _ := sniff(data)
	if !ok {
		if isZlib(data) {
			if out, err := unpack(zlibOpen, data, budget); err == nil {
				return holdsIn(out, vals, depth, budget)
			}
		}
		if isTar(data) {
			return holdsTar(data, vals, depth, budget)
		}
		return false, nil
	}
	if !m.readable {
		return false, fmt.Errorf("holds %s data, which %w", m.name, errUnsure)
	}
	if depth >= maxNestedDepth {
		return false, fmt.Errorf("is packed more than %d layers deep and %w", maxNestedDepth, errUnsure)
	}
	switch m.name {
	case "gzip":
		out, err := unpack(func(r io.Reader) (io.Reader, error) { return gzip.NewReader(r) }, data, budget)
		if err != nil {
			return false, fmt.Errorf("has gzip that %w (%v)", errUnsure, err)
		}
		return holdsIn(out, vals, depth, budget)
	case "bzip2":
		out, err := unpack(func(r io.Reader) (io.Reader, error) { return bzip2.NewReader(r), nil }, data, budget)
		if err != nil {
			return false, fmt.Errorf("has bzip2 that %w (%v)", errUnsure, err)
		}
		return holdsIn(out, vals, depth, budget)
	case "zip":
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return false, fmt.Errorf("has a zip archive that %w (%v)", errUnsure, err)
		}
		for _, f := range zr.File {
			if holdsString(f.Name+"\x00"+f.Comment, vals) {
				return true, nil
			}
			out, err := unpack(func(io.Reader) (io.Reader, error) { return f.Open() }, nil, budget)
			if err != nil {
				return false, fmt.Errorf("has a zip member %q that %w (%v)", clip(f.Name), errUnsure, err)
			}
			if found, err := holdsIn(out, vals, depth, budget); found || err != nil {
				return found, err
			}
		}
		return holdsString(zr.Comment, vals), nil
	}
	return false, nil
}

func holdsIn(out []byte, vals [][]byte, depth int, budget *int64) (bool, error) {
	return holds(out, vals, depth+1, budget)
}

func holdsString(s string, vals [][]byte) bool {
	for _, v := range vals {
		if len(v) > 0 && strings.Contains(s, string(v)) {
			return true
		}
	}
	return false
}

// isTar reports whether data starts with a tar header (ustar magic).
func isTar(data []byte) bool {
	return len(data) >= 512 && (bytes.Equal(data[257:262], []byte("ustar")))
}

// holdsTar searches each member of a tar archive on its own: a member
// packed again (a .gz inside a .tar.gz) starts at its own offset, where
// the sniffing of the whole never looks.
func holdsTar(data []byte, vals [][]byte, depth int, budget *int64) (bool, error) {
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		_, err := tr.Next()
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("has a tar archive that %w (%v)", errUnsure, err)
		}
		out, err := io.ReadAll(tr)
		if err != nil {
			return false, fmt.Errorf("has a tar archive that %w (%v)", errUnsure, err)
		}
		if found, err := holdsIn(out, vals, depth, budget); found || err != nil {
			return found, err
		}
	}
}

func zlibOpen(r io.Reader) (io.Reader, error) { return zlib.NewReader(r) }

// unpack opens data with open and reads it whole, within budget.
func unpack(open func(io.Reader) (io.Reader, error), data []byte, budget *int64) ([]byte, error) {
	r, err := open(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	if c, ok := r.(io.Closer); ok {
		defer c.Close()
	}
	out, err := io.ReadAll(io.LimitReader(r, *budget+1))
	*budget -= int64(len(out))
	if *budget < 0 {
		return nil, fmt.Errorf("it unpacks to more than %d MiB", maxNestedOut>>20)
	}
	return out, err
}

// peeker is a reader whose first bytes can be looked at without waiting for
// more than one read at a time.
type peeker struct {
	r   io.Reader
	buf []byte // read and not yet handed out
	err error
}

func newPeeker(r io.Reader) *peeker { return &peeker{r: r} }

// fill reads once more behind buf.
func (p *peeker) fill() {
	if p.err != nil {
		return
	}
	var b [512]byte
	n, err := p.r.Read(b[:])
	p.buf = append(p.buf, b[:n]...)
	p.err = err
}

// peek returns at least n bytes ahead, or fewer and the error that ended them.
func (p *peeker) peek(n int) ([]byte, error) {
	for len(p.buf) < n && p.err == nil {
		p.fill()
	}
	if len(p.buf) >= n {
		return p.buf[:n], nil
	}
	return p.buf, p.err
}

func (p *peeker) Read(b []byte) (int, error) {
	if len(p.buf) > 0 {
		n := copy(b, p.buf)
		p.buf = p.buf[n:]
		return n, nil
	}
	if p.err != nil {
		return 0, p.err
	}
	return p.r.Read(b)
}

// trailerBlanker blanks the trailers once the body has been read to its
// end: only then are they known, and the response writer sends them after
// the last read.
type trailerBlanker struct {
	r     io.Reader
	raw   io.Reader // the body as it came, read to its end so its trailers arrive
	resp  *http.Response
	vals  [][]byte
	names bool
	done  bool
}

func (t *trailerBlanker) Read(b []byte) (int, error) {
	n, err := t.r.Read(b)
	if err == io.EOF && !t.done {
		t.done = true
		// A decoder may stop at its own end before the chunked body's.
		if _, derr := io.Copy(io.Discard, io.LimitReader(t.raw, 1<<20)); derr != nil {
			err = derr
		}
		blankHeaderMap(t.resp.Trailer, t.vals, t.names)
	}
	return n, err
}

// blankResponse makes resp safe to hand to a command that must not see
// vals: the reason phrase, header names and values and trailers blanked,
// every content coding undone and the body blanked as it streams, a
// compressed body or archive opened and searched. It returns the reason to
// withhold the response instead when the proxy cannot be sure.
func (p *Proxy) blankResponse(resp *http.Response, vals [][]byte) string {
	p.blankHeaders(resp, vals)
	if resp.Body == http.NoBody {
		// HEAD, 204, 304, an empty body: nothing to decode (its
		// Content-Encoding names a body that is not sent).
		return ""
	}
	raw := resp.Body
	var body io.Reader = raw
	if codings := p.contentCodings(resp.Header); len(codings) > 0 {
		var reason string
		if body, reason = decodeBody(body, codings); reason != "" {
			return reason
		}
		resp.Header.Del("Content-Encoding")
		resp.Header.Del("Content-Length")
		resp.ContentLength = -1
		resp.TransferEncoding = []string{"chunked"}
	}
	if p.on(guardNested) {
		var reason string
		if body, reason = nestedLeak(body, resp.Header.Get("Content-Type"), vals); reason != "" {
			return reason
		}
	}
	body = newBlanker(body, vals)
	if p.on(guardTrailers) {
		body = &trailerBlanker{r: body, raw: raw, resp: resp, vals: vals, names: p.on(guardHeaderNames)}
	}
	resp.Body = struct {
		io.Reader
		io.Closer
	}{body, raw}
	return ""
}

// minEncodedForm is the shortest encoded form blanked: shorter ones would
// star out ordinary text.
const minEncodedForm = 12

// encodedForms are the forms in which an answer commonly repeats a value
// it was sent: base64 (standard and URL alphabets, at each of the three
// alignments a value can have inside a longer encoded string — the
// Authorization: Basic header the proxy itself makes holds the value as
// base64 of user:value), hex in either case, percent-encoding, and JSON
// string escaping. For base64 only the characters that come from the
// value's bytes alone are kept, so the form is found whatever surrounds it.
func encodedForms(v []byte) [][]byte {
	var out [][]byte
	seen := map[string]bool{string(v): true}
	add := func(f string) {
		if len(f) >= minEncodedForm && !seen[f] {
			seen[f] = true
			out = append(out, []byte(f))
		}
	}
	for k := 0; k < 3; k++ {
		buf := append(make([]byte, k), v...)
		n := len(buf) / 3 // whole groups
		first := 0
		if k > 0 {
			first = 1 // the group holding the prefix
		}
		if n <= first {
			continue
		}
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			s := enc.EncodeToString(buf[:n*3])
			add(s[first*4:])
		}
	}
	add(hex.EncodeToString(v))
	add(strings.ToUpper(hex.EncodeToString(v)))
	add(url.QueryEscape(string(v)))
	add(url.PathEscape(string(v)))
	if b, err := json.Marshal(string(v)); err == nil {
		add(string(b[1 : len(b)-1]))
	}
	add(strings.ReplaceAll(string(v), "/", `\/`))
	return out
}
