package proxy

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// serveRaw puts a server behind host that reads each request and answers
// with the bytes answer makes of it: what net/http would never write (a
// reason phrase of its own, trailers it was not told of, two
// Content-Encoding lines). secret is what the request's Authorization
// carried after "Bearer ": the real value, once the proxy put it in.
func serveRaw(t *testing.T, w *world, host string, answer func(secret string) []byte) {
	t.Helper()
	cert := w.root.serverCert(t, host)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					sec, _ := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
					if _, err := c.Write(answer(sec)); err != nil {
						return
					}
				}
			}()
		}
	}()
	w.addrs[net.JoinHostPort(host, "443")] = ln.Addr().String()
}

func gz(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func zipOf(t *testing.T, name string, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	f, err := zw.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func tarOf(t *testing.T, name string, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func withBody(head string, body []byte) []byte {
	return append([]byte(head+"Content-Length: "+itoa(len(body))+"\r\n\r\n"), body...)
}

// unpackAll is what a person does with a downloaded answer to read it: it
// undoes gzip layers and opens zip and tar members (gunzip, unzip, tar x),
// and returns everything it found, one text after another.
func unpackAll(b []byte) []byte {
	var out bytes.Buffer
	out.Write(b)
	for depth := 0; depth < 8; depth++ {
		switch {
		case bytes.HasPrefix(b, []byte("\x1f\x8b")):
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				return out.Bytes()
			}
			b, _ = io.ReadAll(zr)
		case bytes.HasPrefix(b, []byte("PK\x03\x04")):
			zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
			if err != nil || len(zr.File) == 0 {
				return out.Bytes()
			}
			f, err := zr.File[0].Open()
			if err != nil {
				return out.Bytes()
			}
			b, _ = io.ReadAll(f)
		case isTar(b):
			tr := tar.NewReader(bytes.NewReader(b))
			if _, err := tr.Next(); err != nil {
				return out.Bytes()
			}
			b, _ = io.ReadAll(tr)
		default:
			return out.Bytes()
		}
		out.Write(b)
	}
	return out.Bytes()
}

// TestResponseBlankingAttacks has the secret's own host echo the value it
// was sent, each time in a place of the answer a blanker of headers and a
// plain body would miss, and fetches the answer with curl through the proxy
// as a command would (the headers and trailers it prints, the body it
// saves, unpacked as a person would). With the check in force the value
// never reaches the command; with that one check taken away it does, so the
// test cannot pass by accident.
func TestResponseBlankingAttacks(t *testing.T) {
	t.Parallel()
	curl := need(t, "curl")
	cases := []struct {
		name  string
		guard guard
		// alsoOff is taken away in both runs: a later check that would
		// catch the attack too, so that the run shows this check alone.
		alsoOff guard
		args    []string
		answer  func(t *testing.T, secret string) []byte
		// refused: with the check in force the command gets a 502;
		// otherwise the answer arrives with the value starred.
		refused bool
	}{
		{"trailer echoes the key", guardTrailers, 0, []string{"-i"}, func(t *testing.T, s string) []byte {
			return []byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Echo\r\n\r\n3\r\nok\n\r\n0\r\nX-Echo: " + s + "\r\n\r\n")
		}, false},
		{"undeclared trailer echoes the key", guardTrailers, 0, []string{"-i"}, func(t *testing.T, s string) []byte {
			return []byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nok\n\r\n0\r\nX-Other: key=" + s + "\r\n\r\n")
		}, false},
		{"reason phrase echoes the key", guardStatus, 0, []string{"-i"}, func(t *testing.T, s string) []byte {
			return withBody("HTTP/1.1 401 bad key "+s+"\r\n", []byte("no\n"))
		}, false},
		{"status line the parser refuses quotes the key", guardStatus, 0, []string{"-i"}, func(t *testing.T, s string) []byte {
			return withBody("HTTP/1.1 2"+s+" OK\r\n", []byte("no\n"))
		}, true},
		{"header name holds the key", guardHeaderNames, 0, []string{"-i"}, func(t *testing.T, s string) []byte {
			return withBody("HTTP/1.1 200 OK\r\nX-"+s+": 1\r\n", []byte("ok\n"))
		}, false},
		{"second Content-Encoding line gzips the key", guardEncodings, guardNested, []string{"-i", "--compressed"}, func(t *testing.T, s string) []byte {
			return withBody("HTTP/1.1 200 OK\r\nContent-Encoding: identity\r\nContent-Encoding: gzip\r\n", gz(t, []byte("auth="+s+"\n")))
		}, false},
		{"body gzipped twice", guardNested, 0, []string{"--compressed"}, func(t *testing.T, s string) []byte {
			return withBody("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Encoding: gzip\r\n", gz(t, gz(t, []byte("auth="+s+"\n"))))
		}, true},
		{"body sent as application/gzip", guardNested, 0, nil, func(t *testing.T, s string) []byte {
			return withBody("HTTP/1.1 200 OK\r\nContent-Type: application/gzip\r\n", gz(t, []byte("auth="+s+"\n")))
		}, true},
		{"key in a zip member", guardNested, 0, nil, func(t *testing.T, s string) []byte {
			return withBody("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n", zipOf(t, "k.txt", []byte("auth="+s+"\n")))
		}, true},
		{"base64 of the key at each alignment, as an echo of headers gives it", guardEncodedForms, 0, nil, func(t *testing.T, s string) []byte {
			enc := base64.StdEncoding.EncodeToString
			return withBody("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n", []byte(`{"a":"`+enc([]byte(s))+`","b":"`+enc([]byte("Bearer "+s))+`","c":"`+base64.URLEncoding.EncodeToString([]byte("u:"+s))+`"}`))
		}, false},
		{"hex of the key", guardEncodedForms, 0, nil, func(t *testing.T, s string) []byte {
			return withBody("HTTP/1.1 200 OK\r\n", []byte("sig="+hex.EncodeToString([]byte(s))+"\n"))
		}, false},
		{"key in a .gz inside a .tar.gz", guardNested, 0, nil, func(t *testing.T, s string) []byte {
			return withBody("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n", gz(t, tarOf(t, "k.gz", gz(t, []byte("auth="+s+"\n")))))
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, guardOn := range []bool{false, true} {
				w := newWorld(t)
				w.off = tc.alsoOff
				if !guardOn {
					w.off |= tc.guard
				}
				serveRaw(t, w, apiHost, func(s string) []byte { return tc.answer(t, s) })
				w.start(t)
				ph := w.placeholder()
				body := filepath.Join(t.TempDir(), "body")
				args := append([]string{"-sS", "-o", body, "-D", "-", "-H", "Authorization: Bearer " + ph}, tc.args...)
				cmd := exec.Command(curl, append(args, "https://"+apiHost+"/echo")...)
				cmd.Env = w.env()
				out, err := cmd.CombinedOutput()
				saved, _ := os.ReadFile(body)
				seen := string(out) + "\n" + string(unpackAll(saved))
				seen += "\n" + decodedTokens(seen) // what a person decoding what they see reads
				// In any case: a header name reaches the client recased.
				leaked := strings.Contains(strings.ToLower(seen), strings.ToLower(secretValue))
				if !guardOn {
					if !leaked {
						t.Fatalf("with the check taken away the value should reach the command, so the attack is real; curl saw (%v):\n%s", err, seen)
					}
					continue
				}
				if leaked {
					t.Fatalf("the value reached the command (curl: %v):\n%s", err, seen)
				}
				if tc.refused {
					if !strings.Contains(seen, " 502 ") || !strings.Contains(seen, "withheld") && !strings.Contains(seen, "could not be read: malformed") {
						t.Fatalf("want a 502 saying the answer was withheld; curl saw (%v):\n%s", err, seen)
					}
				} else if err != nil || !strings.Contains(seen, strings.Repeat("*", len(secretValue))) {
					t.Fatalf("want the answer with the value starred; curl saw (%v):\n%s", err, seen)
				}
			}
		})
	}
}

// FuzzHolds feeds the search through packed bodies arbitrary bytes: it must
// never panic, and a value in the bytes themselves is always found.
func FuzzHolds(f *testing.F) {
	f.Add([]byte("plain text"))
	f.Add(gzFuzz([]byte("auth=" + secretValue)))
	f.Add([]byte("\x1f\x8b\x08\x00garbage"))
	f.Add([]byte("PK\x03\x04not a zip"))
	f.Add([]byte("BZh9"))
	f.Add([]byte("x\x9c\x03\x00\x00\x00\x00\x01"))
	vals := [][]byte{[]byte(secretValue)}
	f.Fuzz(func(t *testing.T, data []byte) {
		budget := int64(1 << 20)
		found, _ := holds(data, vals, 0, &budget)
		if bytes.Contains(data, vals[0]) && !found {
			t.Fatalf("the value is in the bytes but was not found")
		}
	})
}

func gzFuzz(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

var (
	tokenRe = regexp.MustCompile(`[A-Za-z0-9+/_=-]{8,}`)
	hexRe   = regexp.MustCompile(`[0-9a-fA-F]{16,}`)
)

// decodedTokens decodes every run of base64 or hex characters in s (at each
// of its offsets, for base64 inside a longer string) and returns what they
// decode to.
func decodedTokens(s string) string {
	var out strings.Builder
	for _, tok := range hexRe.FindAllString(s, -1) {
		for off := 0; off < 2; off++ {
			t := tok[off:]
			if b, err := hex.DecodeString(t[:len(t)/2*2]); err == nil {
				out.Write(b)
				out.WriteByte('\n')
			}
		}
	}
	for _, tok := range tokenRe.FindAllString(s, -1) {
		for off := 0; off < 4 && off < len(tok); off++ {
			t := strings.TrimRight(tok[off:], "=")
			t = t[:len(t)/4*4]
			for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
				if b, err := enc.DecodeString(t); err == nil {
					out.Write(b)
					out.WriteByte('\n')
				}
			}
		}
	}
	return out.String()
}

// FuzzEncodedForms: whatever surrounds the value, its base64 (either
// alphabet) and hex hold one of the forms that are blanked, so blanking
// them leaves nothing that decodes to the value.
func FuzzEncodedForms(f *testing.F) {
	f.Add([]byte("sk_test_REALVALUE_4242424242"), []byte("Bearer "), []byte(""))
	f.Add([]byte("ghp_0123456789abcdefghij"), []byte("u:"), []byte("x"))
	f.Fuzz(func(t *testing.T, v, pre, post []byte) {
		if len(v) < 24 || len(pre) > 64 || len(post) > 64 {
			return
		}
		vals := append([][]byte{v}, encodedForms(v)...)
		whole := append(append(append([]byte{}, pre...), v...), post...)
		for _, enc := range []string{
			base64.StdEncoding.EncodeToString(whole),
			base64.URLEncoding.EncodeToString(whole),
			hex.EncodeToString(whole),
		} {
			b := []byte(enc)
			blank(b, vals)
			if bytes.Equal(b, []byte(enc)) {
				t.Fatalf("no form of %q found in %q", v, enc)
			}
			if strings.Contains(decodedTokens(string(b)), string(v)) {
				t.Fatalf("%q still decodes to the value after blanking", b)
			}
		}
	})
}

// TestBlankingLeavesEmptyAnswersAlone: a HEAD or a 304 whose headers name a
// gzip body that is not sent passes, with its headers blanked.
func TestBlankingLeavesEmptyAnswersAlone(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	serveRaw(t, w, apiHost, func(s string) []byte {
		return []byte("HTTP/1.1 304 Not Modified\r\nContent-Encoding: gzip\r\nX-Echo: " + s + "\r\n\r\n")
	})
	w.start(t)
	out, err := runTool(t, w, w.dir, "curl", "-sS", "-i", "-H", "Authorization: Bearer "+w.placeholder(), "https://"+apiHost+"/etag")
	if err != nil || !strings.Contains(out, " 304 ") || strings.Contains(out, secretValue) || !strings.Contains(out, "X-Echo: "+strings.Repeat("*", len(secretValue))) {
		t.Fatalf("curl: %v\n%s", err, out)
	}
}

// FuzzBlank: after blanking, no value is left in the bytes, whatever the
// values share and wherever they overlap.
func FuzzBlank(f *testing.F) {
	f.Add([]byte("auth=sk_test_REALVALUE_4242424242 and c2tfdGVzdF9SRUFMVkFMVUVfNDI0MjQyNDI0"), []byte("sk_test_REALVALUE_4242424242"), []byte("4242x"))
	f.Add([]byte("aaaaaaaa"), []byte("aaa"), []byte("aa"))
	f.Fuzz(func(t *testing.T, b, v1, v2 []byte) {
		if bytes.ContainsRune(v1, '*') || bytes.ContainsRune(v2, '*') {
			return
		}
		vals := [][]byte{v1, v2}
		vals = append(vals, encodedForms(v1)...)
		out := append([]byte(nil), b...)
		blank(out, vals)
		if len(out) != len(b) {
			t.Fatalf("blanking changed the length")
		}
		for _, v := range vals {
			if len(v) > 0 && bytes.Contains(out, v) {
				t.Fatalf("%q still holds %q after blanking (from %q)", out, v, b)
			}
		}
	})
}

// TestRangesCannotPieceTheSecretTogether: a host that serves its echo with
// byte ranges (as http.ServeContent does) gives the value in pieces shorter
// than the blanker can match; asked for range by range, the pieces make the
// value. With Range dropped from requests to a secret's host each answer is
// the whole echo, blanked.
func TestRangesCannotPieceTheSecretTogether(t *testing.T) {
	t.Parallel()
	for _, guardOn := range []bool{false, true} {
		w := newWorld(t)
		if !guardOn {
			w.off = guardRanges
		}
		w.serve(t, apiHost, true, http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
			body := "auth=" + req.Header.Get("Authorization") + "\n"
			http.ServeContent(rw, req, "echo.txt", time.Time{}, strings.NewReader(body))
		}))
		w.start(t)
		ph := w.placeholder()
		var got strings.Builder
		start := len("auth=Bearer ")
		for off := start; off < start+len(secretValue); off += 7 {
			out, err := runTool(t, w, w.dir, "curl", "-sS", "-H", "Authorization: Bearer "+ph, "-r", fmt.Sprintf("%d-%d", off, off+6), "https://"+apiHost+"/echo")
			if err != nil {
				t.Fatalf("curl: %v\n%s", err, out)
			}
			if guardOn && out != "auth=Bearer "+strings.Repeat("*", len(secretValue))+"\n" {
				t.Fatalf("want the whole echo, blanked; got %q", out)
			}
			if len(out) <= 7 {
				got.WriteString(out)
			}
		}
		pieced := got.String()
		if !guardOn {
			if !strings.HasPrefix(pieced, secretValue) {
				t.Fatalf("with Range passed on the ranges should piece the value together; got %q", pieced)
			}
			continue
		}
		if strings.Contains(pieced, secretValue[:7]) {
			t.Fatalf("pieces of the value reached the command: %q", pieced)
		}
	}
}
