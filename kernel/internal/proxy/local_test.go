package proxy

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// localServer is a model server on this machine's loopback (Ollama, LM
// Studio, a LiteLLM gateway) that records what it received.
func localServer(t *testing.T) (*recorder, int) {
	t.Helper()
	rec := &recorder{}
	srv := httptest.NewServer(echoHandler(rec))
	t.Cleanup(srv.Close)
	_, ps, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(ps)
	return rec, port
}

// localProxy starts a proxy with no dial hook (the real dialler and its
// address checks) whose decider lets every host:port through, as a
// person's wide policy would, and names only the endpoints in named.
func localProxy(t *testing.T, off guard, named map[string]bool, secrets ...Secret) *Proxy {
	t.Helper()
	p, err := Start(t.Context(), Config{
		Decide: func(_ context.Context, host string, port int) Decision {
			hp := net.JoinHostPort(host, strconv.Itoa(port))
			if strings.HasSuffix(hp, ":1") {
				return Decision{Rule: "unknown-hosts", Reason: "waits for approval"}
			}
			return Decision{Allow: true, Rule: "all", Named: named[hp]}
		},
		Secrets: secrets, BundlePath: t.TempDir() + "/ca.pem", SystemRootsPEM: newTestRoot(t).pem,
		Token: testToken, off: off,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func plainGet(t *testing.T, p *Proxy, target string, hdr map[string]string) (int, string) {
	t.Helper()
	pu, _ := url.Parse("http://kule:" + testToken + "@" + p.Addr())
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu), DisableKeepAlives: true}}
	req, _ := http.NewRequest("GET", target, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func placeholderOf(p *Proxy, name string) string {
	for _, kv := range p.SecretEnv() {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}

// TestNamedLoopbackEndpoint: a model server on loopback, named by its
// exact host:port, is reached through the proxy by address and by
// "localhost"; the key kept for that endpoint goes into the credential
// header over plain HTTP (the endpoint is this machine's loopback), the
// answer is blanked, and each connection is logged as a loopback one.
func TestNamedLoopbackEndpoint(t *testing.T) {
	t.Parallel()
	rec, port := localServer(t)
	lit := "127.0.0.1:" + strconv.Itoa(port)
	name := "localhost:" + strconv.Itoa(port)
	key := Secret{Name: "ANTHROPIC_API_KEY", Value: secretValue, Hosts: []string{lit, name}}
	p := localProxy(t, 0, map[string]bool{lit: true, name: true}, key)
	ph := placeholderOf(p, key.Name)
	for _, target := range []string{"http://" + lit + "/v1/messages", "http://" + name + "/v1/messages"} {
		code, body := plainGet(t, p, target, map[string]string{"X-Api-Key": ph})
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", target, code, body)
		}
		all := rec.all()
		got := all[len(all)-1]
		if got.Header.Get("X-Api-Key") != secretValue {
			t.Fatalf("GET %s: the server got x-api-key %q, want the key", target, got.Header.Get("X-Api-Key"))
		}
		if strings.Contains(body, secretValue) {
			t.Fatalf("GET %s: the answer carries the key back unblanked: %q", target, body)
		}
	}
	// A connection is logged when its handler ends, which can be just after
	// the client has read the answer; Close waits for every handler.
	p.Close()
	es := p.Entries()
	if len(es) != 2 {
		t.Fatalf("want one log line per connection, got %+v", es)
	}
	for _, e := range es {
		if !e.Named || !e.Loopback || e.Verdict != Forwarded || len(e.Secrets) != 1 {
			t.Errorf("log line %+v: want a named loopback connection that carried ANTHROPIC_API_KEY", e)
		}
	}
}

// TestUnnamedLoopbackPortRefused is the attack: a command asks the proxy
// for a loopback port nobody named (another service on the machine: a
// database, the daemon, a debugger). Even when the policy lets the
// connection through (a wide rule of the person's), the proxy does not
// connect, by address or by name, and logs the attempt; with the check
// taken away the same request reaches the service.
func TestUnnamedLoopbackPortRefused(t *testing.T) {
	t.Parallel()
	named, port := localServer(t)
	other, oport := localServer(t)
	_ = named
	endpoint := "127.0.0.1:" + strconv.Itoa(port)
	for _, guardOn := range []bool{true, false} {
		var off guard
		if !guardOn {
			off = guardNamedLocal
		}
		p := localProxy(t, off, map[string]bool{endpoint: true})
		before := len(other.all())
		code, body := plainGet(t, p, "http://127.0.0.1:"+strconv.Itoa(oport)+"/admin", nil)
		reached := len(other.all()) > before
		if !guardOn {
			if !reached || code != http.StatusOK {
				t.Fatalf("with the check taken away the unnamed port should be reached: %d %q", code, body)
			}
			continue
		}
		if reached || code != http.StatusBadGateway || !strings.Contains(body, "not a public internet address") {
			t.Fatalf("unnamed loopback port: reached=%v %d %q; want 502 and nothing sent", reached, code, body)
		}
		// By name: localhost resolves to loopback, and is not named either.
		code, _ = plainGet(t, p, "http://localhost:"+strconv.Itoa(oport)+"/admin", nil)
		if len(other.all()) > before || code != http.StatusBadGateway {
			t.Fatalf("localhost:%d (not named) was reached, or answered %d", oport, code)
		}
		// A port the policy refuses is logged too.
		if code, _ := plainGet(t, p, "http://127.0.0.1:1/", nil); code != http.StatusForbidden {
			t.Fatalf("a refused loopback port answered %d, want 403", code)
		}
		// A connection is logged when its handler ends, which can be just after
		// the client has read the answer; Close waits for every handler.
		p.Close()
		es := p.Entries()
		if len(es) != 3 {
			t.Fatalf("every loopback attempt is logged: got %+v", es)
		}
		for _, e := range es {
			if !e.Loopback {
				t.Errorf("log line %+v does not say it was a loopback attempt", e)
			}
		}
		if es[2].Verdict != Refused || es[0].Error == "" || es[1].Error == "" {
			t.Errorf("log lines %+v: want two unreachable and one refused", es)
		}
	}
}

// TestKeyStaysWithItsEndpoint is the attack on the keys: a key kept for one
// loopback endpoint is not put into a request to another port of the same
// machine, even one named and allowed; the server there sees only the
// placeholder.
func TestKeyStaysWithItsEndpoint(t *testing.T) {
	t.Parallel()
	_, port := localServer(t)
	other, oport := localServer(t)
	mine := "127.0.0.1:" + strconv.Itoa(port)
	theirs := "127.0.0.1:" + strconv.Itoa(oport)
	key := Secret{Name: "OPENAI_API_KEY", Value: secretValue, Hosts: []string{mine}}
	p := localProxy(t, 0, map[string]bool{mine: true, theirs: true}, key)
	ph := placeholderOf(p, key.Name)
	code, _ := plainGet(t, p, "http://"+theirs+"/v1/responses", map[string]string{"Authorization": "Bearer " + ph})
	all := other.all()
	if code != http.StatusOK || len(all) != 1 {
		t.Fatalf("the other endpoint answered %d with %d requests", code, len(all))
	}
	if got := all[0].Header.Get("Authorization"); strings.Contains(got, secretValue) || got != "Bearer "+ph {
		t.Fatalf("the other endpoint got Authorization %q: the key went to a host it was not kept for", got)
	}
}

// TestPlainKeyOnlyToLoopback: a key kept for an endpoint that is not this
// machine's loopback (a host on the person's network, over plain HTTP)
// is never sent in plain text: the request is refused and the server sees
// nothing; with the check taken away the key would cross the network in
// the clear.
func TestPlainKeyOnlyToLoopback(t *testing.T) {
	t.Parallel()
	for _, guardOn := range []bool{true, false} {
		w := newWorld(t)
		w.secret = Secret{Name: "GATEWAY_KEY", Value: secretValue, Hosts: []string{plainHost + ":80"}}
		if !guardOn {
			w.off = guardPlainLoopback
		}
		w.start(t)
		ph := placeholderOf(w.proxy, "GATEWAY_KEY")
		code, body := plainGet(t, w.proxy, "http://"+plainHost+"/v1", map[string]string{"Authorization": "Bearer " + ph})
		all := w.rec.all()
		if !guardOn {
			if len(all) != 1 || all[0].Header.Get("Authorization") != "Bearer "+secretValue {
				t.Fatalf("with the check taken away the key should go in plain text: %d %+v", code, all)
			}
			continue
		}
		if code != http.StatusForbidden || len(all) != 0 || !strings.Contains(body, "loopback") {
			t.Fatalf("a key over plain HTTP off the loopback: %d %q, %d requests reached the server", code, body, len(all))
		}
	}
}

// TestKeyInsideATunnelToLoopback: a client that reaches a local model by
// CONNECT (as WebSocket clients do for ws://) and speaks plain HTTP inside
// gets the key put in and the answer blanked, as plain forwarding does.
func TestKeyInsideATunnelToLoopback(t *testing.T) {
	t.Parallel()
	rec, port := localServer(t)
	ep := "127.0.0.1:" + strconv.Itoa(port)
	key := Secret{Name: "OPENAI_API_KEY", Value: secretValue, Hosts: []string{ep}}
	p := localProxy(t, 0, map[string]bool{ep: true}, key)
	ph := placeholderOf(p, key.Name)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	io.WriteString(c, "CONNECT "+ep+" HTTP/1.1\r\nHost: "+ep+"\r\n"+authLine()+"\r\n")
	if resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"}); err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	io.WriteString(c, "GET /v1/responses HTTP/1.1\r\nHost: "+ep+"\r\nAuthorization: Bearer "+ph+"\r\n\r\n")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	all := rec.all()
	if len(all) != 1 || all[0].Header.Get("Authorization") != "Bearer "+secretValue {
		t.Fatalf("the server got %+v; want the key in Authorization", all)
	}
	if strings.Contains(string(body), secretValue) {
		t.Fatalf("the echo of the key came back unblanked: %q", body)
	}
}
