package proxy

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A plain-HTTP answer relayed in large pieces still goes on as it comes:
// the server sends its first event and waits until the client has read it
// before sending the rest, so a proxy that waited to fill its buffer would
// never hand the first one on.
func TestForwardedAnswerStreamsEachPiece(t *testing.T) {
	w := newWorld(t)
	read := make(chan struct{})
	w.serve(t, "direct.example.test", false, http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(rw, "data: first\n\n")
		rw.(http.Flusher).Flush()
		select {
		case <-read:
		case <-time.After(2 * time.Minute): // only ends a broken run, after the client has given up
		}
		io.WriteString(rw, "data: "+strings.Repeat("x", 3*copyBufSize)+"\n\n")
	}))
	w.start(t)
	pu, _ := url.Parse("http://kule:" + testToken + "@" + w.proxy.Addr())
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
	// The head and the first event, or the error, come while the server
	// still waits.
	var br *bufio.Reader
	got := make(chan string, 1)
	go func() {
		resp, err := c.Get("http://direct.example.test/")
		if err != nil {
			got <- "error: " + err.Error()
			return
		}
		t.Cleanup(func() { resp.Body.Close() })
		br = bufio.NewReader(resp.Body)
		l, _ := br.ReadString('\n')
		got <- l
	}()
	select {
	case l := <-got:
		if l != "data: first\n" {
			close(read)
			t.Fatalf("first line %q", l)
		}
	case <-time.After(30 * time.Second):
		close(read)
		t.Fatal("the answer's head and first event did not come through the proxy before the rest was sent")
	}
	close(read)
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	if want := 1 + len("data: ") + 3*copyBufSize + 2; len(rest) != want {
		t.Fatalf("the rest of the answer: %d bytes, want %d", len(rest), want)
	}
}

// Answers relayed in large pieces arrive whole and in order on one
// kept-alive connection — a large one, a small one that fits in what was
// read with the head, and a HEAD — and the log counts their bytes.
func TestForwardedAnswersKeepAliveWhole(t *testing.T) {
	w := newWorld(t)
	big := make([]byte, 3*copyBufSize+7)
	for i := range big {
		big[i] = byte(i % 251)
	}
	w.serve(t, "direct.example.test", false, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body := []byte("small answer\n")
		if r.URL.Path == "/big" {
			body = big
		}
		rw.Header().Set("Content-Length", strconv.Itoa(len(body)))
		rw.Header().Set("X-Path", r.URL.Path)
		if r.Method != http.MethodHead {
			rw.Write(body)
		}
	}))
	w.start(t)
	pu, _ := url.Parse("http://kule:" + testToken + "@" + w.proxy.Addr())
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu), MaxConnsPerHost: 1}}
	for _, q := range []struct {
		method, path string
		want         []byte
	}{{"GET", "/big", big}, {"GET", "/small", []byte("small answer\n")}, {"HEAD", "/small", nil}, {"GET", "/big", big}} {
		req, _ := http.NewRequest(q.method, "http://direct.example.test"+q.path, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || !bytes.Equal(got, q.want) {
			t.Fatalf("%s %s: %d bytes (%v), want %d", q.method, q.path, len(got), err, len(q.want))
		}
		if resp.Header.Get("X-Path") != q.path {
			t.Fatalf("%s %s: the answer of %q", q.method, q.path, resp.Header.Get("X-Path"))
		}
	}
	c.CloseIdleConnections()
	w.proxy.Close()
	var down int64
	entries, err := ReadLog(w.logPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Verdict == Forwarded {
			down += e.BytesDown
		}
	}
	if down < int64(2*len(big)) {
		t.Fatalf("the log counts %d bytes down, fewer than the %d of the two large answers", down, 2*len(big))
	}
}

// An answer with a length from a host that holds no secret goes from socket
// to socket, whole; the answer of a secret's host does not, and reaches the
// client blanked: what the proxy never reads it could not blank.
func TestForwardedAnswerRelayedOnlyWithNothingToBlank(t *testing.T) {
	t.Parallel()
	big := make([]byte, 3*copyBufSize+7)
	for i := range big {
		big[i] = byte(i % 251)
	}
	plain := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Content-Length", strconv.Itoa(len(big)))
		rw.Write(big)
	}))
	t.Cleanup(plain.Close)
	rec, port := localServer(t)
	keyed := "127.0.0.1:" + strconv.Itoa(port)
	key := Secret{Name: "ANTHROPIC_API_KEY", Value: secretValue, Hosts: []string{keyed}}
	var relayed atomic.Int64
	p, err := Start(t.Context(), Config{
		Decide: func(context.Context, string, int) Decision {
			return Decision{Allow: true, Rule: "all", Named: true}
		},
		Secrets: []Secret{key}, BundlePath: t.TempDir() + "/ca.pem", SystemRootsPEM: newTestRoot(t).pem,
		Token: testToken, relayed: func(n int64) { relayed.Add(n) },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })

	code, body := plainGet(t, p, plain.URL+"/big", nil)
	if code != http.StatusOK || body != string(big) {
		t.Fatalf("the large answer: %d, %d bytes, want %d", code, len(body), len(big))
	}
	if got := relayed.Load(); got != int64(len(big)) {
		t.Fatalf("relayed socket to socket: %d bytes, want the whole answer's %d", got, len(big))
	}
	code, body = plainGet(t, p, "http://"+keyed+"/v1/messages", map[string]string{"X-Api-Key": placeholderOf(p, key.Name)})
	if code != http.StatusOK || rec.all()[len(rec.all())-1].Header.Get("X-Api-Key") != secretValue {
		t.Fatalf("the keyed endpoint: %d %q", code, body)
	}
	if strings.Contains(body, secretValue) || !strings.Contains(body, strings.Repeat("*", len(secretValue))) {
		t.Fatalf("the keyed endpoint's answer is not blanked: %q", body)
	}
	if got := relayed.Load(); got != int64(len(big)) {
		t.Fatalf("the answer of a secret's host was relayed unread (%d bytes in all)", got)
	}
}
