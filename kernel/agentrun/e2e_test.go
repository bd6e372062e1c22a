package agentrun_test

// The set-up every end-to-end test against a real agent shares: a Kule home
// with a task, a person's home outside /tmp with a fake SSH key in it, the
// agent's built-in profile (read from plugins/agent, as kule reads it), its
// npm package installed the way kule installs it, and a scripted model
// server that stands in for the vendor's API host behind the task's proxy.
// Every run goes through agentrun.Start in the sandbox: the real thing.

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kulehq/kule/internal/npmtest"
	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/agentrun"
	"github.com/kulehq/kule/kernel/internal/acp"
	"github.com/kulehq/kule/kernel/internal/agents"
	"github.com/kulehq/kule/kernel/internal/proxy"
	"github.com/kulehq/kule/kernel/internal/task"
)

// e2e is one real agent under test.
type e2e struct {
	t       *testing.T
	k       *kernel.Kernel
	task    *task.Task
	folder  string
	home    string // the person's home, as the agent's profile sees it
	set     *agents.Set
	profile string
	keyVar  string
	realKey string
	sshKey  string // the fake private key's bytes
	wire    *wire
	extra   func(*agentrun.Options)

	upstream string
	roots    *x509.CertPool
	local    string // the model's endpoint on loopback (goLocal), "" when it stands in for the vendor's host

	mu     sync.Mutex
	events []acp.Event
}

// vendor names what a test needs of one agent.
type vendor struct {
	profile string // the built-in profile
	host    string // the API host the model server stands in for
	keyVar  string // the profile's key variable
	// model builds the scripted model server, given the copy (the agent's
	// working directory) and the person's home.
	model func(cwd, home string) http.Handler
}

// newE2E sets up v; it skips under -short, and without node, npm or the
// sandbox outside CI (on CI their absence fails).
func newE2E(t *testing.T, v vendor) *e2e {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test against a real agent; -short skips it")
	}
	root := npmtest.AgentsRoot(t)
	needSandbox(t)
	e := &e2e{t: t, profile: v.profile, keyVar: v.keyVar, realKey: "real-" + v.profile + "-key-" + randHex(8), sshKey: "-----BEGIN OPENSSH PRIVATE KEY-----\nkule-fake-" + randHex(16) + "\n-----END OPENSSH PRIVATE KEY-----\n"}
	// The home is outside /tmp (the sandbox gives the agent the task's own
	// /tmp): the sandbox itself must hide ~/.ssh from the agent.
	home, err := os.MkdirTemp(filepath.Dir(root), "kule-e2e-home-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	e.home = home
	t.Setenv("HOME", home)
	os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
	if err := os.WriteFile(filepath.Join(home, ".ssh", "id_ed25519"), []byte(e.sshKey), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	e.folder = filepath.Join(dir, "folder")
	os.MkdirAll(e.folder, 0o755)
	os.WriteFile(filepath.Join(e.folder, "README.md"), []byte("# a project\n"), 0o644)
	if e.k, err = kernel.New(kernel.Config{Home: filepath.Join(dir, "kule")}); err != nil {
		t.Fatal(err)
	}
	rep, err := e.k.NewTask(context.Background(), e.folder)
	if err != nil {
		t.Fatal(err)
	}
	e.task = rep.Task
	// The built-in profiles as kule ships them (read from the tree, not
	// imported: the kernel never imports plugins).
	if e.set, err = agents.Load(os.DirFS("../../plugins/agent"), e.k.Store().Root); err != nil {
		t.Fatal(err)
	}
	p, err := e.set.Get(v.profile)
	if err != nil {
		t.Fatal(err)
	}
	if need := agents.NodeNeed(p, root); need != "" {
		// The agent needs a newer Node than the machine's: the test runs
		// it on the Node it asks for.
		t.Logf("%s; running it on node %s", need, npmtest.NodeVersion)
		npmtest.NodeOnPath(t)
	}
	if need := agents.NodeNeed(p, root); need != "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI must have the Node the agent needs: %s", need)
		}
		t.Skipf("the agent cannot start here: %s", need)
	}
	if hosts := p.Keys[v.keyVar]; len(hosts) != 1 || hosts[0] != v.host {
		t.Fatalf("the %s profile puts %s into %v, not %s", v.profile, v.keyVar, hosts, v.host)
	}
	// Installed as kule installs it, once per version, before the clock of
	// the first turn starts.
	if _, err := agents.Launch(context.Background(), p, root, true, testWriter{t}); err != nil {
		t.Fatal(err)
	}
	// A real agent's ordinary turns leave what it reads as instructions
	// and settings as Kule placed them: else every run would tell the
	// person of a change they did not ask for.
	t.Cleanup(func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		for _, ev := range e.events {
			if ev.Type == acp.EventNotice && strings.Contains(ev.Text, "changed what it reads as instructions") {
				t.Errorf("an ordinary run changed the agent's instructions: %s", ev.Text)
			}
		}
	})
	e.wire = &wire{}
	srv := httptest.NewUnstartedServer(e.wire.record(v.model(e.task.Paths.Copy, home)))
	cert, leaf := selfSigned(t, v.host)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	e.roots = x509.NewCertPool()
	e.roots.AddCert(leaf)
	e.upstream = srv.Listener.Addr().String()
	t.Cleanup(func() {
		if d := os.Getenv("KULE_E2E_DUMP"); d != "" {
			// Every request whole, for finding out what a new version sends.
			os.WriteFile(filepath.Join(d, v.profile+".bodies"), []byte(e.wire.bodies()), 0o644)
		}
		if t.Failed() {
			t.Logf("the model server saw:\n%s", e.wire.summary())
			b, _ := os.ReadFile(filepath.Join(e.task.Paths.Dir, "network.jsonl"))
			t.Logf("network.jsonl:\n%s", b)
			b, _ = os.ReadFile(filepath.Join(e.task.Paths.Dir, "agent.log"))
			if len(b) > 6000 {
				b = b[len(b)-6000:]
			}
			t.Logf("agent.log (tail):\n%s", b)
		}
	})
	return e
}

// start runs one turn of the agent on the task, in the sandbox.
func (e *e2e) start(prompt string) *agentrun.Run {
	e.t.Helper()
	o := agentrun.Options{
		Agents: e.set, Agent: e.profile, Prompt: prompt,
		OnEvent: func(ev acp.Event) { e.mu.Lock(); e.events = append(e.events, ev); e.mu.Unlock() },
		Getenv: func(k string) string {
			if k == e.keyVar {
				return e.realKey
			}
			return os.Getenv(k)
		},
		Home:         e.home,
		PackagesRoot: npmtest.AgentsRoot(e.t),
		HomesRoot:    filepath.Join(e.home, ".local", "share", "kule", "agent-homes"),
		Stderr:       testWriter{e.t},
		Proxy:        e.standIn,
	}
	if e.extra != nil {
		e.extra(&o)
	}
	// The start-up's context lives as long as the turn: cancelling it
	// would cancel the turn. turn() bounds the whole.
	r, err := agentrun.Start(context.Background(), e.k, e.task, o)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

// standIn points the proxy's upstream at the scripted server standing in
// for the vendor's host; with a local model (goLocal) the proxy dials as
// it does for a person, and nothing is changed.
func (e *e2e) standIn(c *proxy.Config) {
	if e.local != "" {
		return
	}
	// The vendor's host is the scripted server: only the dial and the
	// roots it is checked against differ.
	c.SystemRootsPEM = []byte{}
	c.UpstreamRoots = e.roots
	c.Dial = func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, e.upstream)
	}
}

// goLocal moves the model to plain HTTP on this machine's loopback, as a
// person's Ollama or LiteLLM gateway is, and points the built-in profile
// at it the way a person does: kule agents set NAME base_url=URL (path is
// what the URL adds after host:port, "/v1" for an OpenAI-style server),
// then approve. The proxy dials it because the profile names it, and puts
// the key in over plain HTTP because it is on loopback.
func (e *e2e) goLocal(v vendor, path string) {
	e.t.Helper()
	srv := httptest.NewServer(e.wire.record(v.model(e.task.Paths.Copy, e.home)))
	e.t.Cleanup(srv.Close)
	e.local = srv.Listener.Addr().String()
	home := e.k.Store().Root
	p, err := agents.SetSetting(home, e.set, v.profile, "base_url", "http://"+e.local+path)
	if err != nil {
		e.t.Fatal(err)
	}
	if e.set, err = agents.Load(os.DirFS("../../plugins/agent"), home); err != nil {
		e.t.Fatal(err)
	}
	if err := agents.CheckApproved(home, p); err == nil {
		e.t.Fatal("a built-in pointed at another endpoint runs before it is approved")
	}
	if err := agents.Approve(home, p, e.set.Profiles); err != nil {
		e.t.Fatal(err)
	}
	if got, _ := e.set.Get(v.profile); got.Hash() != p.Hash() || !slices.Equal(got.Keys[v.keyVar], []string{e.local}) {
		e.t.Fatalf("the profile read back is not the one set: %+v", got)
	}
}

// checkLocal: the run reached the model at its named loopback endpoint
// (forwarded, or inside a CONNECT as undici and WebSocket clients make
// it), with the key, and the key went nowhere else.
func (e *e2e) checkLocal(vendorHost string) {
	e.t.Helper()
	es, err := proxy.ReadLog(filepath.Join(e.task.Paths.Dir, "network.jsonl"))
	if err != nil {
		e.t.Fatal(err)
	}
	h, _, _ := net.SplitHostPort(e.local)
	var reached bool
	for _, en := range es {
		if en.Host == vendorHost && (len(en.Secrets) > 0 || en.Intercepted) {
			// An agent may still try its vendor's host for something of
			// its own (Codex does); the key is no longer kept for it.
			e.t.Errorf("the key went to %s though the profile points at %s: %+v", vendorHost, e.local, en)
		}
		if en.Host == h && (en.Verdict == proxy.Forwarded || en.Verdict == proxy.Tunneled) && en.Named && en.Loopback && slices.Contains(en.Secrets, e.keyVar) {
			reached = true
		}
	}
	if !reached {
		e.t.Errorf("network.jsonl has no named loopback connection to %s that carried %s: %+v", e.local, e.keyVar, es)
	}
}

// turn runs one turn to its end and returns how it ended.
func (e *e2e) turn(prompt string) agentrun.Result {
	e.t.Helper()
	r := e.start(prompt)
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
		case <-time.After(4 * time.Minute):
			e.t.Errorf("the turn %q did not end; stopping the agent", prompt)
			r.Stop()
		}
	}()
	res, err := r.Wait()
	close(done)
	if err != nil {
		e.t.Fatalf("turn %q: %v", prompt, err)
	}
	return res
}

// cancelled starts a turn that the model never finishes, cancels it once
// the agent has said something, and checks it ends as cancelled.
func (e *e2e) cancelled(prompt, said string) {
	e.t.Helper()
	r := e.start(prompt)
	waitFor(e.t, "the slow reply to start", func() bool { return strings.Contains(e.text(), said) })
	r.Cancel()
	res, err := r.Wait()
	if err != nil {
		e.t.Fatal(err)
	}
	if res.StopReason != "cancelled" {
		e.t.Errorf("the cancelled turn ended %q", res.StopReason)
	}
}

func (e *e2e) text() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var b strings.Builder
	for _, ev := range e.events {
		if ev.Type == acp.EventText {
			b.WriteString(ev.Text)
		}
	}
	return b.String()
}

func (e *e2e) copyFile(name string) string {
	b, _ := os.ReadFile(filepath.Join(e.task.Paths.Copy, name))
	return string(b)
}

// statusHas says whether `kule status` (the kernel's status) lists want.
func (e *e2e) statusHas(want string) bool {
	st, err := e.k.Status(context.Background(), e.task)
	if err != nil {
		e.t.Fatal(err)
	}
	return strings.Contains(effectsOf(st), want)
}

func (e *e2e) steps() []map[string]any {
	return readLines(e.t, filepath.Join(e.task.Paths.Dir, acp.StepsFile))
}

// stepChanging is the step whose effects name path.
func (e *e2e) stepChanging(path string) map[string]any {
	for _, s := range e.steps() {
		if strings.Contains(quoteAny(s["effects"]), `"path":"`+path+`"`) {
			return s
		}
	}
	return nil
}

func (e *e2e) usage() []map[string]any {
	path := filepath.Join(e.task.Paths.Dir, acp.UsageFile)
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	return readLines(e.t, path)
}

// checkKey: the model server got the person's real key only in header
// (never in a body or a URL), and never the placeholder the agent held.
func (e *e2e) checkKey(header string, prefix string) {
	e.t.Helper()
	e.wire.mu.Lock()
	defer e.wire.mu.Unlock()
	if len(e.wire.reqs) == 0 {
		e.t.Fatal("the model server was never reached")
	}
	for _, r := range e.wire.reqs {
		if got := r.header.Get(header); got != prefix+e.realKey {
			e.t.Errorf("%s %s: %s is %q, want the real key", r.method, r.url, header, got)
		}
		if strings.Contains(string(r.body), e.realKey) || strings.Contains(r.url, e.realKey) {
			e.t.Errorf("%s %s: the key is in the body or URL", r.method, r.url)
		}
		all := r.url + string(r.body)
		for k, vs := range r.header {
			all += k + strings.Join(vs, ",")
		}
		if strings.Contains(all, proxy.PlaceholderPrefix) {
			e.t.Errorf("%s %s: a placeholder reached the model server", r.method, r.url)
		}
	}
}

// checkSSH: nothing of ~/.ssh/id_ed25519 ever reached the model server.
func (e *e2e) checkSSH() {
	e.t.Helper()
	e.wire.mu.Lock()
	defer e.wire.mu.Unlock()
	secret := strings.Split(e.sshKey, "\n")[1]
	for _, r := range e.wire.reqs {
		if bytes.Contains(r.body, []byte(secret)) {
			e.t.Errorf("%s %s: the model server received the SSH key's bytes", r.method, r.url)
		}
	}
}

// wire records every request the model server gets.
type wire struct {
	mu   sync.Mutex
	reqs []wireReq
}

type wireReq struct {
	method, url string
	header      http.Header
	body        []byte
}

func (w *wire) record(h http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		w.mu.Lock()
		w.reqs = append(w.reqs, wireReq{r.Method, r.URL.String(), r.Header.Clone(), body})
		w.mu.Unlock()
		h.ServeHTTP(rw, r)
	})
}

// bodies is every request body, joined.
func (w *wire) bodies() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var b strings.Builder
	for _, r := range w.reqs {
		b.Write(r.body)
		b.WriteByte('\n')
	}
	return b.String()
}

func (w *wire) summary() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var b strings.Builder
	for _, r := range w.reqs {
		body := string(r.body)
		if len(body) > 400 {
			body = body[:200] + " … " + body[len(body)-200:]
		}
		b.WriteString(r.method + " " + r.url + " " + body + "\n")
	}
	return b.String()
}

// served hands out each marker once: the first request whose user text
// holds it (and that offers tools) gets its tool call.
type served struct {
	mu   sync.Mutex
	done map[string]bool
}

func (s *served) pick(text string, markers ...string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done == nil {
		s.done = map[string]bool{}
	}
	for _, m := range markers {
		if strings.Contains(text, m) && !s.done[m] {
			s.done[m] = true
			return m
		}
	}
	return ""
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// selfSigned makes a certificate for host that the proxy's upstream pool
// trusts: the scripted server stands in for the vendor's API host.
func selfSigned(t *testing.T, host string) (tls.Certificate, *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: host},
		DNSNames:     []string{host},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, leaf
}
