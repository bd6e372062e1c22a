package framing

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

// ambiguous are requests two readers could frame differently; each must be
// refused. goRefuses records whether Go's net/http (the lenient peer) refuses
// it too, so the test shows where our own parser is needed.
var ambiguous = map[string]struct {
	raw       string
	goRefuses bool
}{
	"CL and TE":                  {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", false},
	"TE and CL":                  {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n", false},
	"two different CL":           {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\nabcde", true},
	"CL list":                    {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4, 4\r\n\r\nabcd", true},
	"CL with plus":               {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +4\r\n\r\nabcd", true},
	"CL leading zero differs":    {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nContent-Length: 04\r\n\r\nabcd", true},
	"CL overflow":                {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\n", true},
	"TE xchunked":                {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n", true},
	"TE chunked, identity":       {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n", true},
	"TE identity, chunked":       {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity, chunked\r\n\r\n0\r\n\r\n", true},
	"TE twice":                   {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", true},
	"TE with space before colon": {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n", true},
	"TE vertical tab":            {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: \x0bchunked\r\n\r\n0\r\n\r\n", true},
	"TE in HTTP/1.0":             {"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", true},
	"obs-fold":                   {"GET / HTTP/1.1\r\nHost: a\r\nX-A: b\r\n c\r\n\r\n", false},
	"obs-fold TE":                {"POST / HTTP/1.1\r\nHost: a\r\nX-A: b\r\n Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", true},
	"bare LF":                    {"GET / HTTP/1.1\nHost: a\n\n", false},
	"bare LF in header":          {"GET / HTTP/1.1\r\nHost: a\nX: y\r\n\r\n", false},
	"bare CR":                    {"GET / HTTP/1.1\r\nHost: a\rX: y\r\n\r\n", true},
	"chunk size overflow":        {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000001\r\nx\r\n0\r\n\r\n", true},
	"chunk size not hex":         {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0x4\r\nabcd\r\n0\r\n\r\n", true},
	"chunk size negative":        {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n-4\r\nabcd\r\n0\r\n\r\n", true},
	"chunk data overrun":         {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabcd\r\n0\r\n\r\n", true},
	"chunk bare LF":              {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n4\nabcd\r\n0\r\n\r\n", true},
	"two Host":                   {"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", true},
	"no Host":                    {"GET / HTTP/1.1\r\n\r\n", false},
	"HTTP/2 preface":             {"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", true},
	"HTTP/0.9 version":           {"GET / HTTP/0.9\r\nHost: a\r\n\r\n", false},
	"double space":               {"GET  / HTTP/1.1\r\nHost: a\r\n\r\n", true},
	"NUL in value":               {"GET / HTTP/1.1\r\nHost: a\r\nX: a\x00b\r\n\r\n", true},
}

func TestAmbiguousRefused(t *testing.T) {
	t.Parallel()
	for name, tc := range ambiguous {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := readAll(tc.raw)
			if err == nil {
				t.Fatalf("accepted an ambiguous request:\n%q", tc.raw)
			}
			if !errors.Is(err, ErrBadFraming) && !errors.Is(err, ErrVersion) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("refused with an unexpected error: %v", err)
			}
			goErr := readAllGo(tc.raw)
			if (goErr != nil) != tc.goRefuses {
				t.Errorf("net/http refuses=%v (err %v), table says %v", goErr != nil, goErr, tc.goRefuses)
			}
		})
	}
}

func readAll(raw string) error {
	br := bufio.NewReader(strings.NewReader(raw))
	req, err := ReadRequest(br)
	if err != nil {
		return err
	}
	if _, err := io.Copy(io.Discard, req.Body); err != nil {
		return err
	}
	// what is left must be a well-formed next request or nothing
	if _, err := br.Peek(1); err == nil {
		return readAllFrom(br)
	}
	return nil
}

func readAllFrom(br *bufio.Reader) error {
	req, err := ReadRequest(br)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, req.Body)
	return err
}

func readAllGo(raw string) error {
	br := bufio.NewReader(strings.NewReader(raw))
	for {
		req, err := http.ReadRequest(br)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := io.Copy(io.Discard, req.Body); err != nil {
			return err
		}
	}
}

func TestWellFormed(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		raw     string
		body    string
		chunked bool
	}{
		"GET":                {"GET /x?y=1 HTTP/1.1\r\nHost: a\r\n\r\n", "", false},
		"POST CL":            {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello", "hello", false},
		"same CL twice":      {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello", "hello", false},
		"chunked":            {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\n", "hello world", true},
		"chunked upper case": {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: Chunked\r\n\r\nA\r\n0123456789\r\n0\r\n\r\n", "0123456789", true},
		"HTTP/1.0 no host":   {"GET http://a/ HTTP/1.0\r\n\r\n", "", false},
		"OWS around value":   {"GET / HTTP/1.1\r\nHost:   a \t\r\n\r\n", "", false},
		"CONNECT":            {"CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n", "", false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			req, err := ReadRequest(bufio.NewReader(strings.NewReader(tc.raw)))
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(req.Body)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.body || req.Chunked != tc.chunked {
				t.Fatalf("body %q chunked %v, want %q %v", b, req.Chunked, tc.body, tc.chunked)
			}
		})
	}
}

func TestKeepAliveSequence(t *testing.T) {
	t.Parallel()
	var raw bytes.Buffer
	for i := range 100 {
		if i%2 == 0 {
			raw.WriteString("POST /n HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc")
		} else {
			raw.WriteString("POST /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nxyz\r\n0\r\n\r\n")
		}
	}
	br := bufio.NewReader(&raw)
	n := 0
	for {
		req, err := ReadRequest(br)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("request %d: %v", n, err)
		}
		b, err := io.ReadAll(req.Body)
		if err != nil {
			t.Fatal(err)
		}
		want := map[bool]string{false: "abc", true: "xyz"}[n%2 == 1]
		if string(b) != want {
			t.Fatalf("request %d body %q, want %q", n, b, want)
		}
		n++
	}
	if n != 100 {
		t.Fatalf("read %d requests, want 100", n)
	}
}

func TestHeadTooLarge(t *testing.T) {
	t.Parallel()
	raw := "GET / HTTP/1.1\r\nHost: a\r\nX: " + strings.Repeat("a", MaxHeadBytes) + "\r\n\r\n"
	if err := readAll(raw); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v, want ErrTooLarge", err)
	}
}

// FuzzReadRequest checks that the parser never panics, and that whatever it
// accepts Go's net/http frames identically (same bodies, same number of
// requests) when net/http accepts it too; and that the canonical form written
// back reads the same.
func FuzzReadRequest(f *testing.F) {
	for _, tc := range ambiguous {
		f.Add([]byte(tc.raw))
	}
	f.Add([]byte("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"))
	f.Add([]byte("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhiGET / HTTP/1.1\r\nHost: a\r\n\r\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		br := bufio.NewReader(bytes.NewReader(raw))
		var bodies []string
		var reqs []*Request
		for {
			req, err := ReadRequest(br)
			if err != nil {
				break
			}
			b, err := io.ReadAll(req.Body)
			if err != nil {
				break
			}
			bodies = append(bodies, string(b))
			reqs = append(reqs, req)
		}
		// Round trip: the canonical form reads back the same.
		for i, req := range reqs {
			var out bytes.Buffer
			h := req.Header
			if h.Count("Host") == 0 {
				h = append(h[:len(h):len(h)], Field{"Host", "a"})
			}
			if err := WriteHead(&out, req.Method, req.Target, h, req.Chunked, int64(len(bodies[i]))); err != nil {
				t.Fatal(err)
			}
			if req.Chunked {
				cw := ChunkedWriter{W: &out}
				cw.Write([]byte(bodies[i]))
				cw.Close()
			} else {
				out.WriteString(bodies[i])
			}
			back, err := ReadRequest(bufio.NewReader(&out))
			if err != nil {
				t.Fatalf("canonical form of an accepted request refused: %v\n%q", err, out.String())
			}
			b, err := io.ReadAll(back.Body)
			if err != nil || string(b) != bodies[i] || back.Method != req.Method || back.Target != req.Target {
				t.Fatalf("round trip changed the request: %q %v", b, err)
			}
		}
		// Differential: where both accept, both frame alike.
		gbr := bufio.NewReader(bytes.NewReader(raw))
		for i := range reqs {
			greq, err := http.ReadRequest(gbr)
			if err != nil {
				return
			}
			b, err := io.ReadAll(greq.Body)
			if err != nil {
				return
			}
			if string(b) != bodies[i] {
				t.Fatalf("request %d: net/http read body %q, we read %q", i, b, bodies[i])
			}
		}
	})
}
