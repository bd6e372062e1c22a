package proxy

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func need(t *testing.T, tool string) string {
	t.Helper()
	p, err := exec.LookPath(tool)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is needed on CI: %v", tool, err)
		}
		t.Skipf("%s is not installed", tool)
	}
	return p
}

// checkInjected asserts what the API server received: the value in the
// credential header only, the placeholder everywhere else.
func checkInjected(t *testing.T, s seen, ph string) {
	t.Helper()
	if got := s.Header.Get("Authorization"); got != "Bearer "+secretValue {
		t.Errorf("server got Authorization %q, want the real value", got)
	}
	if !strings.Contains(s.URI, ph) || strings.Contains(s.URI, secretValue) {
		t.Errorf("URL %q: want the placeholder, not the value", s.URI)
	}
	if !strings.Contains(s.Body, ph) || strings.Contains(s.Body, secretValue) {
		t.Errorf("body %q: want the placeholder, not the value", s.Body)
	}
	if got := s.Header.Get("X-Note"); got != ph {
		t.Errorf("X-Note %q: want the placeholder", got)
	}
	for k, vs := range s.Header {
		if k != "Authorization" && strings.Contains(strings.Join(vs, " "), secretValue) {
			t.Errorf("header %s carries the value", k)
		}
	}
	if got := s.Header.Get("Accept-Encoding"); got != "" && got != "identity" {
		t.Errorf("Accept-Encoding %q: the proxy must ask for identity", got)
	}
}

// checkBlanked asserts the client's view of the echo answer: the value
// starred out.
func checkBlanked(t *testing.T, out string) {
	t.Helper()
	if strings.Contains(out, secretValue) {
		t.Fatalf("the answer reached the client with the value in it:\n%s", out)
	}
	if !strings.Contains(out, "auth=Bearer "+strings.Repeat("*", len(secretValue))) {
		t.Fatalf("the answer does not show the blanked value:\n%s", out)
	}
}

func lastTo(t *testing.T, w *world, path string) seen {
	t.Helper()
	all := w.rec.all()
	for i := len(all) - 1; i >= 0; i-- {
		if strings.HasPrefix(all[i].URI, path) {
			return all[i]
		}
	}
	t.Fatalf("the server never received a request for %s", path)
	return seen{}
}

func goClient(t *testing.T, w *world) *http.Client {
	pool := x509.NewCertPool()
	b, err := os.ReadFile(w.bundle)
	if err != nil {
		t.Fatal(err)
	}
	pool.AppendCertsFromPEM(b)
	pu, _ := url.Parse("http://kule:" + testToken + "@" + w.proxy.Addr())
	return &http.Client{Transport: &http.Transport{
		Proxy:             http.ProxyURL(pu),
		TLSClientConfig:   &tls.Config{RootCAs: pool},
		ForceAttemptHTTP2: true, // offered; the proxy must answer with HTTP/1.1
	}}
}

func TestGoClient(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.start(t)
	ph := w.placeholder()
	c := goClient(t, w)
	req, _ := http.NewRequest("POST", "https://"+apiHost+"/go?key="+ph, strings.NewReader("key="+ph))
	req.Header.Set("Authorization", "Bearer "+ph)
	req.Header.Set("X-Note", ph)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.ProtoMajor != 1 {
		t.Errorf("the client spoke %s to an intercepted host; want HTTP/1.1", resp.Proto)
	}
	checkInjected(t, lastTo(t, w, "/go"), ph)
	checkBlanked(t, string(body))
	if h := resp.Header.Get("X-Echo-Auth"); strings.Contains(h, secretValue) || !strings.Contains(h, "***") {
		t.Errorf("response header not blanked: %q", h)
	}

	// A credential Kule does not hold for the host: 403, and the server never sees it.
	before := len(w.rec.all())
	req, _ = http.NewRequest("GET", "https://"+apiHost+"/foreign", nil)
	req.Header.Set("Authorization", "Bearer sk_live_somethingtheagentfound")
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("foreign credential: status %d, want 403", resp.StatusCode)
	}
	if len(w.rec.all()) != before {
		t.Errorf("the server received the request with a foreign credential")
	}
	// HEAD keeps its Content-Length and has no body; the connection stays usable.
	for range 2 {
		resp, err = c.Head("https://" + apiHost + "/head")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("HEAD: %v %v", err, resp)
		}
		resp.Body.Close()
	}
	// A large chunked upload with Expect: 100-continue arrives whole.
	big := strings.Repeat("0123456789", 300000)
	req, _ = http.NewRequest("PUT", "https://"+apiHost+"/upload", io.MultiReader(strings.NewReader(big)))
	req.Header.Set("Expect", "100-continue")
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := lastTo(t, w, "/upload").Body; got != big {
		t.Errorf("upload arrived with %d bytes, want %d", len(got), len(big))
	}
	// x-api-key is a credential header too.
	req, _ = http.NewRequest("GET", "https://"+apiHost+"/apikey", nil)
	req.Header.Set("X-Api-Key", ph)
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if got := lastTo(t, w, "/apikey").Header.Get("X-Api-Key"); got != secretValue {
		t.Errorf("x-api-key reached the server as %q", got)
	}
	if bytes.Contains(body, []byte(secretValue)) {
		t.Errorf("x-api-key echoed unblanked")
	}
}

func TestCurl(t *testing.T) {
	t.Parallel()
	curl := need(t, "curl")
	w := newWorld(t)
	w.start(t)
	ph := w.placeholder()
	run := func(args ...string) (string, error) {
		cmd := exec.Command(curl, append([]string{"-sS", "--http2"}, args...)...)
		cmd.Env = w.env()
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("-H", "Authorization: Bearer "+ph, "-H", "X-Note: "+ph, "--compressed",
		"-d", "key="+ph, "https://"+apiHost+"/curl?key="+ph)
	if err != nil {
		t.Fatalf("curl: %v\n%s", err, out)
	}
	checkInjected(t, lastTo(t, w, "/curl"), ph)
	checkBlanked(t, out)

	// Basic auth: the placeholder is the password, inside base64.
	out, err = run("-u", "user:"+ph, "https://"+apiHost+"/basic")
	if err != nil {
		t.Fatalf("curl -u: %v\n%s", err, out)
	}
	if u, p, ok := (&http.Request{Header: lastTo(t, w, "/basic").Header}).BasicAuth(); !ok || u != "user" || p != secretValue {
		t.Errorf("basic auth reached the server as %q:%q", u, p)
	}

	out, _ = run("-o", "/dev/null", "-w", "%{http_code}", "-H", "Authorization: Bearer ghp_notkules", "https://"+apiHost+"/foreign")
	if out != "403" {
		t.Errorf("foreign credential: curl got %q, want 403", out)
	}
	out, err = run("https://nowhere.example.test/")
	if err == nil || !strings.Contains(out, "403") {
		t.Errorf("host without a rule: curl got %v %q, want a refused CONNECT", err, out)
	}
	// Plain HTTP forwarding.
	out, err = run("http://" + plainHost + "/plain?x=1")
	if err != nil || !strings.Contains(out, "uri=/plain?x=1") {
		t.Errorf("plain http: %v %q", err, out)
	}
	w.proxy.Close()
	entries, err := ReadLog(w.logPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := Summary(entries)
	want := []string{
		"net: api.example.test:443 ×3 · tunneled (test-hosts) · with STRIPE_KEY · refused GET /foreign (foreign credential in Authorization)",
		"net: nowhere.example.test:443 · refused, waits for approval (no-rule-lets-it-pass)",
		"net: plain.example.test:80 · forwarded (test-hosts)",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("summary:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	raw, _ := os.ReadFile(w.logPath)
	for _, want := range []string{`"verdict":"tunneled"`, `"secrets":["STRIPE_KEY"]`, `"verdict":"refused"`, `"reason":"waits for approval"`, `"verdict":"forwarded"`, `"bytes_up":`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("network.jsonl lacks %s:\n%s", want, raw)
		}
	}
	for _, e := range entries {
		if e.Verdict == Tunneled && (e.BytesUp == 0 || e.BytesDown == 0) {
			t.Errorf("entry without byte counts: %+v", e)
		}
	}
}
